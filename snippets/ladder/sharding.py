"""Exercise 3: per-GPU model state under DDP and under full sharding."""

# --8<-- [start:model]
from snippets.ddp.allreduce import allreduce_bytes
from snippets.units import GB, GiB
from snippets.zero.memory import memory_per_gpu
from snippets.zero.traffic import comm_bytes

# Bytes per parameter as (weight, gradient, optimizer state), the order
# of memory_per_gpu's last three arguments. The optimizer's 12 are the
# fp32 master copy, momentum and variance (ZeRO paper, sec. 3.1).
CONVENTIONS = {
    "16 B/param (ZeRO paper, lesson)": (2, 2, 12),  # bf16 gradient
    "18 B/param (DeepSpeed, ZeRO-3)": (2, 4, 12),  # fp32 gradient
}
# The Ultra-Scale Playbook uses 16, or 20 when it keeps an extra fp32
# copy of the gradients for accumulation. DeepSpeed's ZeRO-2 estimator
# counts 2 P + 18 P / N, a 16-bit and an fp32 gradient: 20 on one GPU.


def sharding_saving(params, world_size, sizes):
    """GB per GPU under DDP and FSDP (ZeRO-3), and what sharding saves."""
    ddp = memory_per_gpu("ddp", params, world_size, *sizes)
    fsdp = memory_per_gpu("fsdp", params, world_size, *sizes)
    return ddp, fsdp, ddp - fsdp


# --8<-- [end:model]


if __name__ == "__main__":
    # --8<-- [start:demo]
    P, N = 7_000_000_000, 8
    for name, sizes in CONVENTIONS.items():
        ddp, fsdp, saved = sharding_saving(P, N, sizes)
        print(name)
        for label, gb in (("DDP", ddp), ("FSDP", fsdp), ("saved", saved)):
            print(f"  {label:<6}{gb:7.2f} GB = {gb * GB / GiB:7.2f} GiB")
    ddp_sent = allreduce_bytes(P, 2, N)["sent_per_rank_GB"]
    zero3_sent = comm_bytes("zero3", P, N)  # 2 all-gathers, 1 reduce-scatter
    print(f"sent per rank and step, bf16: DDP {ddp_sent} GB,")
    print(f"  ZeRO-3 {zero3_sent} GB ({zero3_sent / ddp_sent} x DDP)")
    # --8<-- [end:demo]
