"""The instrumented training script with one fault, on a job's first try
only.

    torchrun --max-restarts=1 ... tests/faults.py KIND STEP TRAIN-FLAGS

KIND is `kill-at-step` (the last rank dies as step STEP begins) or
`kill-in-save` (rank 0 dies while saving step STEP: DCP has written the
files, the folder is not renamed yet). tests/test_train.py checks that
the restarted job resumes and ends as the clean run of the same flags
that tests/sweeps.py trains.
"""

import os
import signal
import sys
from pathlib import Path

from course.instruments import train as measured
from snippets.torchrun import processes, train


def die():
    print(f"rank {os.environ['RANK']}: killed (test)", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)


def main():
    kind, step, *argv = sys.argv[1:]
    step, rank = int(step), int(os.environ["RANK"])
    first_try = os.environ.get("TORCHELASTIC_RESTART_COUNT") == "0"
    if first_try and kind == "kill-at-step":
        train_step = train.train_step

        def dying_step(built, cfg, at, *rest):
            if at == step and rank == int(os.environ["WORLD_SIZE"]) - 1:
                die()
            return train_step(built, cfg, at, *rest)

        train.train_step = dying_step
    elif first_try and kind == "kill-in-save":
        rename = Path.rename

        def dying_rename(path, target):
            if rank == 0 and path.name == f"step_{step:06d}.tmp":
                die()
            return rename(path, target)

        Path.rename = dying_rename
    elif kind not in ("kill-at-step", "kill-in-save"):
        raise SystemExit(
            f"KIND must be kill-at-step or kill-in-save, got {kind!r}"
        )
    processes.run_and_exit(measured.main, argv)


if __name__ == "__main__":
    main()
