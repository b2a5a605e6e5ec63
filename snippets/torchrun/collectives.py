"""Time all-reduce, all-gather and reduce-scatter, as nccl-tests does.

    torchrun --standalone --nproc_per_node=4 \\
      -m snippets.torchrun.collectives --json collectives.json

For each size S, from 1 KiB to 64 MiB by powers of two: a few warm-up
calls, then the mean time of `--iters` calls, averaged over the ranks,
the fastest of `--rounds` rounds.
S is the whole buffer: what an all-reduce reduces, what an all-gather
gathers, what a reduce-scatter scatters (nccl-tests' `size`). Then, in
GB/s (1 GB = 1e9 bytes): algbw = S / t, and busbw = algbw times
2(N-1)/N for an all-reduce and (N-1)/N for the other two
(nccl-tests, doc/PERFORMANCE.md). gloo and fp32 on the CPU, NCCL on
GPUs.
"""

import argparse
import json
import os
import sys
import time

import torch
import torch.distributed as dist

from snippets.torchrun.processes import pick_device, run_and_exit

KINDS = ("all_reduce", "all_gather", "reduce_scatter")


def bus_factor(kind, n):
    """nccl-tests' busbw / algbw for `kind` on n ranks."""
    return 2 * (n - 1) / n if kind == "all_reduce" else (n - 1) / n


def operation(kind, size, n, device):
    """A call that runs collective `kind` on an S-byte buffer."""
    values = size // 4  # fp32
    whole = torch.ones(values, device=device)
    piece = torch.ones(values // n, device=device)
    if kind == "all_reduce":
        return lambda: dist.all_reduce(whole)
    if kind == "all_gather":
        return lambda: dist.all_gather_single(whole, piece)
    return lambda: dist.reduce_scatter_single(piece, whole)


# --8<-- [start:time]
def seconds(call, iters, rounds, device):
    """The mean time of `iters` calls, averaged over the ranks: the
    fastest of `rounds` such means, as timeit takes, since whatever else
    runs on the cores only ever adds time."""
    means = []
    for _ in range(rounds):
        dist.barrier()
        began = time.perf_counter()
        for _ in range(iters):
            call()
        if device.type == "cuda":
            torch.cuda.synchronize()
        means.append((time.perf_counter() - began) / iters)
    mine = torch.tensor(min(means), device=device)
    dist.all_reduce(mine)
    return mine.item() / dist.get_world_size()


# --8<-- [end:time]


def measure(kinds, sizes, iters, rounds, warmup, device):
    n, rows = dist.get_world_size(), []
    for kind in kinds:
        for size in sizes:
            call = operation(kind, size, n, device)
            for _ in range(warmup):
                call()
            # `iters` calls a round, fewer for large buffers (16 MiB a round)
            count = max(1, min(iters, (16 << 20) // size))
            t = seconds(call, count, rounds, device)
            algbw = size / t / 1e9
            rows.append(
                {
                    "kind": kind,
                    "bytes": size,
                    "ranks": n,
                    "calls": count,
                    "seconds": t,
                    "algbw_GBps": algbw,
                    "busbw_GBps": algbw * bus_factor(kind, n),
                }
            )
            if dist.get_rank() == 0:
                r = rows[-1]
                print(
                    f"{kind:>14} {size:>10} B  {t * 1e6:10.1f} us  "
                    f"algbw {algbw:7.3f}  busbw {r['busbw_GBps']:7.3f} GB/s",
                    flush=True,
                )
    return rows


def parser():
    p = argparse.ArgumentParser(prog="python -m snippets.torchrun.collectives")
    p.add_argument("--json", metavar="PATH", help="write the rows here")
    p.add_argument("--min-bytes", type=int, default=1 << 10)
    p.add_argument("--max-bytes", type=int, default=64 << 20)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS))
    return p


def main(argv=None):
    p = parser()
    args = p.parse_args(argv)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    low, high = args.min_bytes, args.max_bytes
    if low < 4 * world or low & (low - 1) or high & (high - 1) or high < low:
        p.error(
            "--min-bytes and --max-bytes must be powers of two with "
            f"--min-bytes >= 4 x the world size ({4 * world}) and "
            f"<= --max-bytes; got {low} and {high}"
        )
    if world < 2:
        p.error("run under torchrun with 2 or more processes")
    if min(args.iters, args.rounds) < 1 or args.warmup < 0:
        p.error("--iters and --rounds must be >= 1, --warmup >= 0")
    device, backend, _ = pick_device()
    dist.init_process_group(
        backend, device_id=device if backend == "nccl" else None
    )
    try:
        sizes = [
            1 << k for k in range(low.bit_length() - 1, high.bit_length())
        ]
        rows = measure(
            args.kinds, sizes, args.iters, args.rounds, args.warmup, device
        )
        if args.json and dist.get_rank() == 0:
            info = {
                "backend": backend,
                "device": device.type,
                "torch": torch.__version__,
            }
            with open(args.json, "w") as out:
                json.dump(dict(info, rows=rows), out, indent=1)
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    run_and_exit(main, sys.argv[1:])
