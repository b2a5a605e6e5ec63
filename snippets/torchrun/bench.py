"""Timings of the torchrun script on this machine's CPU.

    python -m snippets.torchrun.bench

Prints the seconds the page's measurement takes when it runs fresh
(both strategies, cache bypassed) and the tokens per second each
strategy reached. These figures depend on the machine, which is why the
page's table leaves them out.
"""

import time

from snippets.torchrun.report import PAGE_ARGS, run


def main():
    began = time.perf_counter()
    results = {s: run(s, (*PAGE_ARGS, "--check")) for s in ("ddp", "fsdp")}
    seconds = time.perf_counter() - began
    print(f"torchrun page measurement (ddp + fsdp, fresh): {seconds:.1f} s")
    for strategy, r in results.items():
        print(
            f"{strategy} tokens/s on CPU ({r['world_size']} ranks, "
            f"{r['compute_dtype']}): {r['tokens_per_s']:,.0f}"
        )


if __name__ == "__main__":
    main()
