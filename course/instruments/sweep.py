"""Train several layouts in turn, in one launch: how the course measures.

    torchrun --standalone --nproc_per_node=8 -m course.instruments.sweep \\
        runs.json "--strategy ddp --micro-batch 1" "--tp 2 --pp 2 --trace"

Each argument after the JSON path holds one run's flags, those of
course/instruments/train.py. Every run uses every rank, in one process
group, so the start-up (processes, imports, the group) is paid once.
Every configuration is checked before the group starts.
"""

import shlex
import sys

from course.instruments.train import parse, train_in_turn
from snippets.torchrun.processes import run_and_exit


def main(argv):
    if len(argv) < 2:
        raise SystemExit(
            "usage: python -m course.instruments.sweep OUT.json FLAGS..."
        )
    out, *flags = argv
    runs = [parse(shlex.split(one)) for one in flags]
    if any(measuring["compare"] for _, measuring in runs):
        raise SystemExit("sweep: one layout per argument; drop --compare")
    train_in_turn(runs, out)


if __name__ == "__main__":
    run_and_exit(main, sys.argv[1:])
