# %% [markdown]
# # MS2.1 Size the state, then pick a strategy
#
# A team wants to train a 13B-parameter model with mixed-precision Adam
# on 80 GB GPUs. They can have one node of 8 GPUs or eight such nodes,
# 64 GPUs in all. Which rung of the strategy ladder should they start on?
#
# **Your task**
#
# 1. Compute the model state each GPU holds (parameters, gradients and
#    optimizer state) under DDP and under ZeRO-3, for 8 and for 64 GPUs.
# 2. Answer the strategy chooser's four yes/no questions from those
#    numbers, for both world sizes, and run it.
# 3. Name the rung you would start on, and back the choice with one
#    memory figure.
#
# **Hint.** DDP gives every GPU a full copy of the state; ZeRO-3 gives
# each GPU one N-th of it. The ratio between the two is your argument.
#
# Work it out first. Everything below the next heading is a worked
# answer, computed by the course labs when the site was built.

# %% tags=["site-only"]
from course.notebooks import links

links("ms2_1")

# %% [markdown]
# ## Worked answer
#
# ### Step 1: the state per GPU
#
# `memory_per_gpu` counts 16 bytes per parameter by default: 2 for the
# bf16 weights, 2 for the bf16 gradients and 12 for Adam's fp32 master
# weights, momentum and variance (the ZeRO paper's K = 12). Decimal GB
# (10⁹ bytes) throughout. Activations
# come on top, so only part of the card may go to model state: we keep
# the same 80% budget as the `plan` lab.

# %%
from snippets.strategy.choose import choose_strategy
from snippets.strategy.plan import plan
from snippets.walls.walls import state_GB
from snippets.zero.memory import memory_per_gpu

PARAMS = 13_000_000_000
GPU_GB = 80  # one H100 or A100 80 GB card
USABLE = 0.8  # the rest is left for activations and buffers
BUDGET_GB = GPU_GB * USABLE
WORLD_SIZES = (8, 64)

per_param = memory_per_gpu("ddp", 1_000_000_000, 1)  # GB per 1e9 params
print(f"bytes per parameter: {per_param:.0f}")
print(f"model state budget per GPU: {BUDGET_GB:.0f} GB of {GPU_GB} GB")
state = {}
for n in WORLD_SIZES:
    ddp = memory_per_gpu("ddp", PARAMS, n)
    zero3 = memory_per_gpu("zero3", PARAMS, n)
    state[n] = {"ddp": ddp, "zero3": zero3}
    print(
        f"N={n:>2}: DDP {ddp:6.2f} GB per GPU, ZeRO-3 {zero3:5.2f} GB "
        f"per GPU ({ddp / zero3:.0f}x smaller)"
    )

# %% [markdown]
# DDP's figure does not move with the world size: every rank keeps the
# whole state, and it is well over two cards' worth. ZeRO-3's figure is
# the same state divided by N, so the gap is exactly the world size.
#
# ### Step 2: ask the chooser
#
# The chooser wants four honest answers. "The model fits" means the
# bf16 weights alone fit; "the state fits" means weights, gradients and
# Adam state fit the budget. For the largest layer we take the shape of
# a 13B decoder (hidden size 5120, as in LLaMA-13B): a block holds about
# 12 h² parameters. A node has 8 GPUs, so 64 GPUs span several nodes.

# %%
HIDDEN = 5120
GPUS_PER_NODE = 8
weights_gb = state_GB(PARAMS, bytes_per_param=2)  # bf16 weights only
layer_params = 12 * HIDDEN**2
layer_gb = state_GB(layer_params)  # 16 bytes per parameter
print(f"bf16 weights: {weights_gb:.0f} GB")
print(f"one block: {layer_params:,} parameters, state {layer_gb:.1f} GB")

answers = {}
for n in WORLD_SIZES:
    answers[n] = {
        "model_fits_one_gpu": weights_gb <= BUDGET_GB,
        "state_fits_one_gpu": state[n]["ddp"] <= BUDGET_GB,
        "layer_fits_one_gpu": layer_gb <= BUDGET_GB,
        "multi_node": n > GPUS_PER_NODE,
    }

print(f"{'question':<20}" + "".join(f"{f'N={n}':>7}" for n in WORLD_SIZES))
for question in answers[WORLD_SIZES[0]]:
    row = "".join(f"{answers[n][question]!s:>7}" for n in WORLD_SIZES)
    print(f"{question:<20}{row}")
for n in WORLD_SIZES:
    print(f"N={n:>2} -> {choose_strategy(**answers[n])}")

# %% [markdown]
# The weights fit one card but the full state does not, and a block is
# small: at both world sizes the chooser lands on FSDP / ZeRO-3. Its
# questions are yes/no, though. The `plan` lab asks the finer question,
# the lowest rung whose state fits the budget:

# %%
for n in WORLD_SIZES:
    p = plan(PARAMS, n, GPU_GB, usable=USABLE)
    table = ", ".join(f"{s} {gb:.2f}" for s, gb in p["per_gpu_GB"].items())
    print(f"N={n:>2}: lowest rung that fits: {p['strategy']} ({table} GB)")

# %% [markdown]
# ### Step 3: the starting rung
#
# The printout below is the answer, with its numbers. ZeRO-2 would also
# fit on 8 GPUs and keeps DDP's all-reduce traffic, where ZeRO-3 adds
# another all-gather of the weights in the backward pass; it is the
# first thing to try once the job runs and its activation memory is
# known.

# %%
n = 8
ddp, zero3 = state[n]["ddp"], state[n]["zero3"]
print(
    f"Start on FSDP (ZeRO-3) on {n} GPUs: DDP would need {ddp:.0f} GB per "
    f"GPU, {ddp / GPU_GB:.1f}x an {GPU_GB} GB card, while ZeRO-3 needs "
    f"{zero3:.0f} GB and leaves {GPU_GB - zero3:.0f} GB for activations."
)
print(
    f"On {WORLD_SIZES[-1]} GPUs ZeRO-3 needs "
    f"{state[WORLD_SIZES[-1]]['zero3']:.2f} GB per GPU: more GPUs buy "
    "speed, the memory question was settled at 8."
)
