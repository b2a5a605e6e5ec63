# %% [markdown]
# # MS2.2 Find the comms wall
#
# A data-parallel step does two things: it computes the gradients, and
# it all-reduces them. The compute depends on the GPU; the all-reduce
# depends on the link between the GPUs. Keep the GPU fixed and make the
# link slower, and at some bandwidth the all-reduce takes longer than
# the compute: the job has hit its comms wall.
#
# **Your task**
#
# 1. Take a 64-way DDP job on a 7B model: H100 GPUs at 40% of their
#    989 TFLOP/s dense bf16 peak, 8192 tokens per GPU per micro-batch.
# 2. Sweep the link from NVLink down to 10 Gb/s Ethernet, with the GPU
#    and the world size held fixed, and find the bandwidth at which the
#    all-reduce time overtakes the compute time.
# 3. Gradient accumulation runs several micro-batches before each
#    all-reduce. Show where the crossover moves with `accum_steps`, and
#    what that costs.
#
# **Hint.** Bandwidths must be one-way, per GPU: NVLink is sold as a
# two-way total, network links are quoted one way, and 10 Gb/s is
# 1.25 GB/s. The comms lab's `LINKS_GBps` lists their line rates by
# generation, and `REACHED` what NCCL gets out of each.
#
# Work it out first. Everything below the next heading is a worked
# answer, computed by the course labs when the site was built.

# %% tags=["site-only"]
from course.build.notebooks import links

links("ms2_2")

# %% [markdown]
# ## Worked answer
#
# ### Step 1: the job, and the named links
#
# `comms_cost` returns the seconds of compute and of all-reduce for one
# optimizer step, and the bandwidth at which the two are equal.

# %%
import math

from snippets.accumulation.batch import effective_batch
from snippets.comms.cost import REACHED, comms_cost

JOB = {
    "params": 7_000_000_000,
    "world_size": 64,
    "tflops_per_gpu": 989 * 0.40,  # H100 SXM dense bf16 peak x MFU
    "tokens_per_gpu": 8192,  # per GPU, per micro-batch
}

compute_s = comms_cost(interconnect_GBps=1, **JOB)["compute_s"]
print(f"compute per optimizer step: {compute_s:.3f} s on every link")
for link, gbps in REACHED.items():  # what NCCL reaches on each link
    r = comms_cost(interconnect_GBps=gbps, **JOB)
    print(
        f"{link:<26} {gbps:>5} GB/s  all-reduce {r['comms_s']:6.3f} s"
        f"  {r['verdict']}"
    )

# %% [markdown]
# The compute time is the same on every link: the GPU, the model and
# the tokens are fixed. The all-reduce time is the bytes each rank
# sends divided by the bandwidth NCCL reaches on the link, a little
# below its line rate, so it grows as the link slows down.
# Note that a 64-GPU job spans at least eight nodes, so its ring
# crosses the network: the two NVLink rows show what the GPUs could
# do, not what this job will see. Each network row is one card's
# bandwidth, which is what the ring gets when each node of 8 GPUs has
# one card. A DGX or HGX H100 has one per GPU, and its rings together
# get eight cards' worth (the communication page's "bandwidth across
# nodes").
#
# ### Step 2: where comms overtakes compute
#
# Halve the bandwidth from the fastest link until the verdict flips,
# then compare with the exact crossover the lab computes.

# %%
bandwidth = max(REACHED.values())
while comms_cost(interconnect_GBps=bandwidth, **JOB)["verdict"] == (
    "compute-bound"
):
    last_ok = bandwidth
    bandwidth /= 2
r = comms_cost(interconnect_GBps=bandwidth, **JOB)
print(f"still compute-bound at {last_ok:.2f} GB/s")
print(f"comms-bound at {bandwidth:.2f} GB/s ({r['comms_s']:.2f} s)")
crossover = r["crossover_GBps"]
at = comms_cost(interconnect_GBps=crossover, **JOB)
print(
    f"crossover: {crossover:.1f} GB/s, where both take {at['compute_s']:.3f} s"
)
faster = [k for k, v in REACHED.items() if v >= crossover]
print("links at or above it:", *faster, sep="\n- ")

# %% [markdown]
# So the job is compute-bound on NDR InfiniBand and comms-bound on HDR
# and anything slower. On 10 Gb/s Ethernet the all-reduce takes 22.050 s
# against 0.870 s of compute: the GPUs wait most of the step.
#
# ### Step 3: accumulation moves the wall
#
# With `accum_steps` = k, each GPU runs k micro-batches, adding up their
# gradients, before a single all-reduce. The bytes sent per optimizer
# step stay the same while the compute per step grows k times, so the
# crossover bandwidth falls by k. For each link, the smallest k that
# makes the job compute-bound is the ratio of the two times, rounded up.

# %%
for k in (1, 2, 4, 8, 16, 32):
    r = comms_cost(interconnect_GBps=crossover, accum_steps=k, **JOB)
    print(f"accum_steps={k:>2}: crossover {r['crossover_GBps']:6.2f} GB/s")

print()
for link, gbps in REACHED.items():
    r = comms_cost(interconnect_GBps=gbps, **JOB)
    k = max(1, math.ceil(r["comms_s"] / r["compute_s"]))
    batch = effective_batch(2, k, JOB["world_size"], seq_len=4096)
    print(
        f"{link:<26} needs accum_steps >= {k:>2}: "
        f"{batch['tokens_per_step'] / 1e6:5.1f}M tokens per step"
    )

# %% [markdown]
# Accumulation does not make the all-reduce faster; it makes it rarer.
# The price is the batch: with micro-batches of 2 sequences of 4096
# tokens (the same 8192 tokens per GPU), every extra accumulation step
# adds another 64 × 8192 tokens to each optimizer step. Past a model's
# critical batch size, bigger steps stop paying for themselves, so on a
# slow link accumulation buys back utilisation at the cost of
# optimization. The honest fix for 10 Gb/s Ethernet is a faster network.

# %% [markdown]
# ## What you found
#
# Whether a data-parallel job waits on its network is one ratio: the
# seconds of the all-reduce against the seconds of compute per
# optimizer step. Fast links inside a node leave the job
# compute-bound; the slower the link, the more micro-batches each step
# must accumulate to hide the all-reduce, and the larger the batch the
# optimizer sees. The [accumulation page](../../accumulation/) shows
# that step as a timeline, and the
# [communication page](../../comms/) draws the whole sweep of links.
# To size a full job, with tensor and pipeline parallelism too, go on
# to [Plan a job](../../planner/).
