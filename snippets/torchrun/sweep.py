"""Train several layouts in turn, in one launch: how the course measures.

    torchrun --standalone --nproc_per_node=8 -m snippets.torchrun.sweep \\
        runs.json "--strategy ddp --micro-batch 1" "--tp 2 --pp 2"

Each argument after the JSON path holds one run's flags. Every run uses
every rank, in one process group, so the start-up (processes, imports,
the group) is paid once. Every configuration is checked before the
group starts, as train.py checks its flags.
"""

import shlex
import sys

from snippets.torchrun import config
from snippets.torchrun.processes import run_and_exit
from snippets.torchrun.train import train_in_turn


def main(argv):
    if len(argv) < 2:
        raise SystemExit(
            "usage: python -m snippets.torchrun.sweep OUT.json FLAGS..."
        )
    out, *runs = argv
    configs = [config.parse(shlex.split(flags)) for flags in runs]
    if any(cfg.compare for cfg in configs):
        raise SystemExit("sweep: one layout per argument; drop --compare")
    train_in_turn(configs, out)


if __name__ == "__main__":
    run_and_exit(main, sys.argv[1:])
