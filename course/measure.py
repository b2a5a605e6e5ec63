"""The torchrun page's measurement: one launch that trains with DDP, then
with FSDP (`--compare`), on two CPU ranks.

The model is smaller than the script's default so that the launch takes
a few seconds; the ratios the page reads from it do not depend on the
model's size.

A build starts the launch when it starts (`start`, called by
course/hooks.py), in a thread that waits for torchrun, so the launch
runs while the pages before the torchrun page are built; the page's
`measure()` then waits for it. Without `start`, `measure()` launches.
"""

import tempfile
import time
from pathlib import Path

from course.stress import torchrun
from snippets.torchrun import report

PAGE_ARGS = (
    "--vocab=128",
    "--seq-len=32",
    "--d-model=64",
    "--n-heads=2",
    "--n-layers=2",
    "--d-ff=256",
    "--micro-batch=4",
    "--accum-steps=2",
    "--steps=3",
    "--log-every=3",
)


def launch(args=PAGE_ARGS, nproc=2):
    """`torchrun ... train --compare --check ARGS`: the runs it measured."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "runs.json"
        done = torchrun(
            *args,
            "--compare",
            "--check",
            f"--json={out}",
            launcher=("--standalone", f"--nproc_per_node={nproc}"),
            timeout=240,
        )
        if done.returncode:
            raise RuntimeError(
                f"torchrun exited {done.returncode}:\n{done.stderr[-3000:]}"
            )
        return report.load(out)


def measure(args=PAGE_ARGS):
    """The runs of `launch(args)`."""
    return launch(args)


def main():
    """`python -m course.measure`: how long the page's launch takes here,
    and the tokens per second each strategy reached (machine-dependent,
    which is why the page leaves them out)."""
    began = time.perf_counter()
    runs = launch()
    seconds = time.perf_counter() - began
    print(
        f"torchrun page measurement (ddp + fsdp, one launch): {seconds:.1f} s"
    )
    for r in runs:
        print(
            f"{r.strategy} tokens/s on CPU ({r.world_size} ranks, "
            f"{r.compute_dtype}): {r.tokens_per_s:,.0f}"
        )


if __name__ == "__main__":
    main()
