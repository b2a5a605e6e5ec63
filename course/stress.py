"""Launch the training script again and again; count the launches that fail.

    python -m course.stress --launches 50            # `make stress`
    python -m course.stress --launches 3 --strategy ddp

Each launch is `torchrun --standalone --nproc_per_node=2` on the CPU
(gloo) with a tiny model, three steps, `--check` and a checkpoint every
step. A launch passes when torchrun exits 0 and every rank printed its
"clean exit" line, the last thing train.py prints before the process
ends. A rank that dies at exit (SIGABRT) fails the first test, one that
hangs fails on the time limit. The exit status is the number of failed
launches, capped at 1.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLEAN_EXIT = re.compile(r"rank (\d+): clean exit")
STRATEGIES = ("ddp", "fsdp")
# A model small enough that start-up dominates each launch.
SMALL = (
    "--vocab=64",
    "--seq-len=16",
    "--d-model=32",
    "--n-heads=2",
    "--n-layers=2",
    "--d-ff=64",
    "--micro-batch=2",
)


def environment(**extra):
    """The environment of a launch: CPU only, one thread per rank, the
    repository importable, no rank variables left from a caller."""
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", OMP_NUM_THREADS="1")
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR"):
        env.pop(name, None)
    env.pop("MASTER_PORT", None)
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])
    )
    env.update(extra)
    return env


def torchrun(*args, launcher=("--standalone", "--nproc_per_node=2"), **run):
    """`torchrun LAUNCHER -m snippets.torchrun.train ARGS`, finished."""
    command = [sys.executable, "-m", "torch.distributed.run", *launcher]
    command += ["-m", "snippets.torchrun.train", *args]
    options = dict(cwd=ROOT, env=environment(), timeout=150)
    return subprocess.run(
        command, capture_output=True, text=True, check=False, **options | run
    )


def launch(strategy, nproc=2):
    """One launch; None if it passed, else what went wrong."""
    with tempfile.TemporaryDirectory() as tmp:
        try:
            done = torchrun(
                *SMALL,
                f"--strategy={strategy}",
                "--steps=3",
                "--check",
                "--checkpoint-every=1",
                f"--checkpoint-dir={tmp}",
                launcher=("--standalone", f"--nproc_per_node={nproc}"),
            )
        except subprocess.TimeoutExpired:
            return "still running after 150 s"
    # Ranks share torchrun's stdout, so count the lines anywhere in it.
    clean = len(set(CLEAN_EXIT.findall(done.stdout)))
    if done.returncode == 0 and clean == nproc:
        return None
    return (
        f"exit status {done.returncode}, {clean} of {nproc} clean exits\n"
        + done.stderr[-2000:]
    )


def stress(launches, strategies=STRATEGIES, echo=print):
    """Failed launches per strategy, each with its reasons."""
    failures = {}
    for strategy in strategies:
        failures[strategy] = []
        began = time.perf_counter()
        for i in range(1, launches + 1):
            problem = launch(strategy)
            if problem:
                failures[strategy].append(problem)
                echo(f"{strategy} launch {i}: FAILED, {problem}")
        seconds = time.perf_counter() - began
        echo(
            f"{strategy}: {len(failures[strategy])} aborts out of "
            f"{launches} launches ({seconds:.0f} s)"
        )
    return failures


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m course.stress")
    parser.add_argument("--launches", type=int, default=50)
    parser.add_argument(
        "--strategy", choices=STRATEGIES, action="append", default=None
    )
    args = parser.parse_args(argv)
    if args.launches < 1:
        parser.error(f"--launches must be >= 1, got {args.launches}")
    failures = stress(args.launches, args.strategy or STRATEGIES)
    return int(any(failures.values()))


if __name__ == "__main__":
    sys.exit(main())
