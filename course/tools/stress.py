"""Launch the training script again and again; count the launches that fail.

    python -m course.tools.stress --launches 50            # `make stress`
    python -m course.tools.stress --launches 3 --layout ddp

Each launch is `torchrun --standalone` on the CPU (gloo) with a tiny
model, three steps, `--check` and a checkpoint every step, for each
layout: DDP and FSDP on 2 ranks, pp 2 x tp 2 on 4, dp 2 x pp 2 x tp 2
on 8, pp 2 under the ZBV schedule on 2, context parallelism: dp 2 x
cp 2 on 4, dp 2 x tp 2 x cp 2 on 8, and mixtures of experts with expert
parallelism: dp 2 x ep 2 on 2 ranks, pp 2 x dp 4 x ep 2 on 8. A launch
passes when torchrun exits 0 and every rank printed its "clean exit"
line, the last thing train.py prints before the process ends. A rank
that dies at exit (SIGABRT) fails the first test, one that hangs fails
on the time limit. The exit status is 1 if any launch failed.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

from course import ROOT
from course.instruments import results

CLEAN_EXIT = re.compile(r"rank (\d+): clean exit")
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
# name: (processes, flags)
LAYOUTS = {
    "ddp": (2, ("--strategy=ddp",)),
    "fsdp": (2, ("--strategy=fsdp",)),
    "pp2-tp2": (4, ("--pp=2", "--tp=2", "--strategy=fsdp")),
    "dp2-pp2-tp2": (8, ("--pp=2", "--tp=2", "--strategy=fsdp")),
    # ZBV: two stages of one block on each rank, in a V
    "pp2-zbv": (2, ("--pp=2", "--pp-schedule=zbv", "--n-layers=4")),
    "dp2-cp2": (4, ("--cp=2", "--strategy=fsdp")),
    "dp2-tp2-cp2": (8, ("--cp=2", "--tp=2", "--strategy=fsdp")),
    "dp2-ep2": (2, ("--strategy=fsdp", "--experts=4", "--ep=2")),
    "pp2-dp4-ep2": (
        8,
        ("--pp=2", "--strategy=fsdp", "--experts=4", "--ep=2"),
    ),
}


def environment(**extra):
    """The environment of a launch: CPU only, one thread per rank, the
    repository importable, no rank variables left from a caller, and
    Python's stacks printed if a rank dies of a signal."""
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", OMP_NUM_THREADS="1")
    env["PYTHONFAULTHANDLER"] = "1"
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR"):
        env.pop(name, None)
    env.pop("MASTER_PORT", None)
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])
    )
    env.update(extra)
    return env


def launch_command(entry, nproc, args, out=None, launcher=()):
    """The command that runs launch kind ENTRY on `nproc` ranks: train
    (flags), sweep (one string of flags per run) or collectives, as
    results.ENTRIES names their modules. One process runs without
    torchrun, as a reader would."""
    module = results.ENTRIES[entry]
    if entry == "sweep":
        tail = [str(out), *(" ".join(run) for run in args)]
    else:
        tail = [*args, f"--json={out}"] if out else list(args)
    if nproc == 1 and not launcher:
        return [sys.executable, "-m", module, *tail]
    launcher = launcher or ("--standalone", f"--nproc_per_node={nproc}")
    run = [sys.executable, "-m", "torch.distributed.run", *launcher]
    return [*run, "-m", module, *tail]


def run(command, timeout=150, **options):
    """Run `command` from the repository root in a launch's environment."""
    options = dict(cwd=ROOT, env=environment(), timeout=timeout) | options
    return subprocess.run(
        command, capture_output=True, text=True, check=False, **options
    )


# The line torchrun logs when it starts stopping the other ranks.
STOPPING = re.compile(r"^.*(closing signal|failed \(exitcode).*$", re.M)


def what_failed(stderr, keep=8000):
    """A failed launch's stderr, shortened: the last of what the ranks
    printed before torchrun began to stop them, then torchrun's summary.
    The tail alone is torchrun's report, which hides the first error."""
    found = STOPPING.search(stderr)
    if not found:
        return stderr[-keep:]
    summary = stderr.rfind("Root Cause")
    tail = stderr[summary:] if summary > found.start() else ""
    return stderr[: found.start()][-keep:] + "\n[torchrun:]\n" + tail


def torchrun(*args, launcher=("--standalone", "--nproc_per_node=2"), **opts):
    """`torchrun LAUNCHER -m course.instruments.train ARGS`, finished."""
    return run(launch_command("train", 2, args, launcher=launcher), **opts)


def launch(layout):
    """One launch of `layout`; None if it passed, else what went wrong."""
    nproc, flags = LAYOUTS[layout]
    with tempfile.TemporaryDirectory() as tmp:
        command = launch_command(
            "train",
            nproc,
            (
                *SMALL,
                *flags,
                "--steps=3",
                "--check",
                "--checkpoint-every=1",
                f"--checkpoint-dir={tmp}",
            ),
            launcher=("--standalone", f"--nproc_per_node={nproc}"),
        )
        try:
            done = run(command)
        except subprocess.TimeoutExpired:
            return "still running after 150 s"
    # Ranks share torchrun's stdout, so count the lines anywhere in it.
    clean = len(set(CLEAN_EXIT.findall(done.stdout)))
    if done.returncode == 0 and clean == nproc:
        return None
    return (
        f"exit status {done.returncode}, {clean} of {nproc} clean exits\n"
        + what_failed(done.stderr)
    )


def stress(launches, layouts=tuple(LAYOUTS), echo=print):
    """Failed launches per layout, each with its reasons."""
    failures = {}
    for layout in layouts:
        failures[layout] = []
        began = time.perf_counter()
        for i in range(1, launches + 1):
            problem = launch(layout)
            if problem:
                failures[layout].append(problem)
                echo(f"{layout} launch {i}: FAILED, {problem}")
        seconds = time.perf_counter() - began
        echo(
            f"{layout}: {len(failures[layout])} aborts out of {launches} "
            f"launches ({seconds:.0f} s, {seconds / launches:.1f} s each)"
        )
    return failures


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m course.tools.stress")
    parser.add_argument("--launches", type=int, default=50)
    parser.add_argument(
        "--layout", choices=list(LAYOUTS), action="append", default=None
    )
    args = parser.parse_args(argv)
    if args.launches < 1:
        parser.error(f"--launches must be >= 1, got {args.launches}")
    failures = stress(args.launches, args.layout or tuple(LAYOUTS))
    return int(any(failures.values()))


if __name__ == "__main__":
    sys.exit(main())
