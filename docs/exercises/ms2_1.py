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
#    optimizer state) under DDP and under ZeRO-3, for 8 and for 64 GPUs,
#    and the activations of one 4096-token sequence beside it.
# 2. Answer the strategy chooser's four yes/no questions from those
#    numbers, for both world sizes, and run it.
# 3. Name the rung you would start on, and back the choice with one
#    memory figure.
#
# **Hint.** DDP gives every GPU a full copy of the state; ZeRO-3 gives
# each GPU one N-th of it. The activations do not shrink with N: what
# the card has left after them is the budget for the state.
#
# Work it out first. Everything below the next heading is a worked
# answer, computed by the course labs when the site was built.

# %% tags=["site-only"]
from course.build.notebooks import links

links("ms2_1")

# %% [markdown]
# ## Worked answer
#
# ### Step 1: the state per GPU, and the activations beside it
#
# `memory_per_gpu` counts 16 bytes per parameter by default: 2 for the
# bf16 weights, 2 for the bf16 gradients and 12 for Adam's fp32 master
# weights, momentum and variance (the ZeRO paper's K = 12). Decimal GB
# (10⁹ bytes) throughout. Activations come on top, and the activation
# lab counts them. That needs the model's shape and the batch: we take
# the shape of a 13B decoder (40 layers, hidden size 5120, 40 heads, as
# in LLaMA-13B), one 4096-token sequence per GPU, FlashAttention and no
# recomputation.

# %%
from snippets.activations.memory import activation_bytes_per_gpu
from snippets.strategy.choose import choose_strategy
from snippets.strategy.plan import plan
from snippets.units import GB
from snippets.walls.walls import state_GB
from snippets.zero.memory import memory_per_gpu

PARAMS = 13_000_000_000
GPU_GB = 80  # one H100 or A100 80 GB card
SHAPE = {"layers": 40, "hidden": 5120, "heads": 40}  # LLaMA-13B
BATCH = {"seq_len": 4096, "micro_batch": 1, "recompute": "none"}
WORLD_SIZES = (8, 64)

per_param = memory_per_gpu("ddp", 1_000_000_000, 1)  # GB per 1e9 params
act_gb = activation_bytes_per_gpu(**SHAPE, **BATCH, flash_attention=True)
act_gb /= GB
print(f"bytes per parameter: {per_param:.0f}")
print(f"activations of one 4096-token sequence: {act_gb:.2f} GB")
print(f"room for model state per GPU: {GPU_GB - act_gb:.2f} GB")
state = {}
for n in WORLD_SIZES:
    state[n] = {s: memory_per_gpu(s, PARAMS, n) for s in ("ddp", "zero3")}
    ddp, zero3 = state[n]["ddp"], state[n]["zero3"]
    print(
        f"N={n:>2}: DDP {ddp:6.2f} GB per GPU, ZeRO-3 {zero3:5.2f} GB "
        f"per GPU ({ddp / zero3:.0f}x smaller)"
    )

# %% [markdown]
# DDP's figure does not move with the world size: every rank keeps the
# whole state, and it is well over two cards' worth. ZeRO-3's figure is
# the same state divided by N, so the gap is exactly the world size.
# The activations do not shrink with N at all: each GPU runs the whole
# model on its own sequence.
#
# ### Step 2: ask the chooser
#
# The chooser wants four honest answers. "Fits" means beside the
# activations of one sequence. "The model fits" means the bf16 weights
# alone fit; "the state fits" means weights, gradients and Adam state
# fit. A block holds about 12 h² parameters. A node has 8 GPUs, so 64
# GPUs span several nodes.

# %%
GPUS_PER_NODE = 8
room = GPU_GB - act_gb
weights_gb = state_GB(PARAMS, bytes_per_param=2)  # bf16 weights only
layer_params = 12 * SHAPE["hidden"] ** 2
layer_gb = state_GB(layer_params)  # 16 bytes per parameter
print(f"bf16 weights: {weights_gb:.0f} GB")
print(f"one block: {layer_params:,} parameters, state {layer_gb:.1f} GB")

answers = {}
for n in WORLD_SIZES:
    answers[n] = {
        "model_fits_one_gpu": weights_gb <= room,
        "state_fits_one_gpu": state[n]["ddp"] <= room,
        "layer_fits_one_gpu": layer_gb <= room,
        "multi_node": n > GPUS_PER_NODE,
    }

print(f"{'question':<20}" + "".join(f"{f'N={n}':>7}" for n in WORLD_SIZES))
for question in answers[WORLD_SIZES[0]]:
    row = "".join(f"{answers[n][question]!s:>7}" for n in WORLD_SIZES)
    print(f"{question:<20}{row}")
for n in WORLD_SIZES:
    print(f"N={n:>2} ->", choose_strategy(**answers[n]).replace(": ", ":\n  "))

# %% [markdown]
# The weights fit one card but the full state does not, and a block is
# small: at both world sizes the chooser says to shard, at the lowest
# ZeRO stage that fits. Which stage that is, yes/no questions cannot
# say. The `plan` lab computes it from the same two labs, with the same
# shape and batch:

# %%
for n in WORLD_SIZES:
    p = plan(PARAMS, n, GPU_GB, **SHAPE, **BATCH)
    table = ", ".join(f"{s} {gb:.2f}" for s, gb in p["per_gpu_GB"].items())
    print(f"N={n:>2}: {table} GB + {p['activations_GB']:.2f} GB")
    print(f"      lowest rung that fits: {p['strategy']}")

# %% [markdown]
# ### Step 3: the starting rung
#
# The printout below is the answer, with its numbers. ZeRO-1 keeps a
# full copy of the gradients as well as the weights, and that copy is
# what leaves too little room for the activations on 8 GPUs. ZeRO-2
# shards the gradients too, and with one micro-batch per step, as
# here, it keeps DDP's traffic (with gradient accumulation it would
# either reduce-scatter after every micro-batch or hold the whole
# gradient until the last one, ZeRO-1's memory); ZeRO-3 would add another
# all-gather of the weights in the backward pass, for memory the job
# does not need.

# %%
n = 8
p = plan(PARAMS, n, GPU_GB, **SHAPE, **BATCH)
zero1, zero2 = p["per_gpu_GB"]["zero1"], p["per_gpu_GB"]["zero2"]
act = p["activations_GB"]
NAMES = {"zero1": "ZeRO-1", "zero2": "ZeRO-2", "zero3": "ZeRO-3"}
print(
    f"Start on {NAMES[p['strategy']]} on {n} GPUs: {zero2:.2f} GB of "
    f"state and {act:.2f} GB of activations,\n{zero2 + act:.2f} GB of "
    f"the {GPU_GB} GB card. ZeRO-1 would need {zero1 + act:.2f} GB."
)
full = plan(PARAMS, n, GPU_GB, **SHAPE, **{**BATCH, "recompute": "full"})
print(
    f"If {GPU_GB - zero2 - act:.2f} GB is too thin a margin, full "
    f"recomputation cuts the\nactivations to {full['activations_GB']:.2f}"
    f" GB (and plan then picks {full['strategy']}), at the price of a "
    "second\nforward pass."
)

# %% [markdown]
# ## What you found
#
# The memory sum settles the starting rung before any training runs:
# DDP's full copy of the training state does not fit one card, and
# sharding it does, already on the smallest cluster. ZeRO-3 shows how
# far sharding can go, but the rung to start on is the lowest that
# fits: ZeRO-2, on 8 GPUs and on 64. Adding GPUs after that buys speed,
# not room. The next questions are the ones
# the sum left out: the activations, which
# [recomputation](../../activations/) trades for compute, and the cost
# of the extra all-gathers, which the
# [communication page](../../comms/) and the next exercise,
# [MS2.2](../ms2_2/), put in seconds. The
# [strategy page](../../strategy/) climbs the same ladder in general.
