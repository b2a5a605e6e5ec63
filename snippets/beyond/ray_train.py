"""The course's training script launched by Ray Train: TorchTrainer
starts `workers` Ray actors, each runs the script with the rank, world
size and rendezvous address torchrun would give it, and rank 0's log
goes back to the driver, which prints the losses.

    python -m snippets.beyond.ray_train            # 2 CPU workers
"""

import os
import re
import socket
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

import ray
import torch.distributed as dist
from ray.train import Checkpoint, RunConfig, ScalingConfig
from ray.train.torch import TorchTrainer

ROOT = Path(__file__).resolve().parents[2]
RECORD = Path(__file__).with_name("ray_train.txt")  # tests/test_beyond.py
FLAGS = ["--strategy=fsdp", "--steps=4", "--vocab=128", "--seq-len=32"]
FLAGS += ["--d-model=64", "--n-heads=2", "--n-layers=2", "--d-ff=128"]


# --8<-- [start:worker]
def worker(config):
    """One Ray Train worker: the script, as torchrun would start it."""
    ctx = ray.train.get_context()
    rank = ctx.get_world_rank()
    # Ray's own process group picks a port for the script's group.
    port = [free_port() if rank == 0 else None]
    dist.broadcast_object_list(port, src=0)
    env = os.environ | {
        "RANK": str(rank),
        "LOCAL_RANK": str(ctx.get_local_rank()),
        "WORLD_SIZE": str(ctx.get_world_size()),
        "MASTER_PORT": str(port[0]),  # MASTER_ADDR: Ray's rank 0 node
    }
    with tempfile.TemporaryDirectory() as tmp:
        command = [sys.executable, "-m", "snippets.torchrun.train"]
        done = subprocess.run(
            [*command, *config["flags"]],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
        )
        if done.returncode:
            raise RuntimeError(f"rank {rank}: {done.stderr[-2000:]}")
        # rank 0's log goes back to the driver as a checkpoint
        Path(tmp, "log.txt").write_text(done.stdout)
        saved = Checkpoint.from_directory(tmp) if rank == 0 else None
        ray.train.report({}, checkpoint=saved)


# --8<-- [end:worker]
def free_port():
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


# --8<-- [start:trainer]
def launch(workers=2, flags=FLAGS):
    """Train with `workers` CPU workers; what rank 0 printed."""
    with tempfile.TemporaryDirectory() as storage:
        trainer = TorchTrainer(
            worker,
            train_loop_config={"flags": flags},
            scaling_config=ScalingConfig(num_workers=workers, use_gpu=False),
            run_config=RunConfig(storage_path=storage),
        )
        with trainer.fit().checkpoint.as_directory() as saved:
            return Path(saved, "log.txt").read_text()


# --8<-- [end:trainer]
def summary(log, flags=FLAGS):
    """What the page shows: the world, the strategy and the losses (not
    the tokens per second, which depend on the machine)."""
    world, device = re.search(r"on (\d+) rank\(s\), (\w+)", log).groups()
    strategy = next(f for f in flags if f.startswith("--strategy="))
    lines = [
        f"Ray Train: {world} workers, strategy "
        f"{strategy.split('=')[1]}, on the {device}"
    ]
    for step, loss in re.findall(r"step\s+(\d+)\s+loss (\S+)", log):
        lines.append(f"step {step}  loss {loss}")
    return "\n".join(lines)


# The raylet gives each of its two agents 15 s (fixed in Ray 2.58) to
# write a port to a file, then aborts. An agent needs about 2.3 s of CPU
# for it; on a 2-core machine that other jobs kept at a load of 13 to 30
# it took 11 to 14 s, and over 15 s in a run that failed at ray.init.
@contextmanager
def started_first(nice=-10, group=Path("/proc/self/autogroup")):
    """While Ray starts, weigh this session's processes above the other
    sessions', where the OS lets this process (as root). Linux shares the
    CPU between sessions first (their autogroups), and a process's own
    nice counts only inside its session."""
    try:  # the file reads "/autogroup-N nice K"
        usual = re.fullmatch(r"\S+ nice (-?\d+)\s*", group.read_text())
        if usual:  # a container may show the file empty
            group.write_text(str(nice))
    except OSError:  # not allowed, or no autogroups
        usual = None
    if not usual:
        yield
        return
    try:
        yield
    finally:
        group.write_text(usual[1])


def main():
    """Print the run's summary; RECORD holds the one the page shows."""
    # Ray gives its node 30 s to register; a busy 2-core machine once
    # took longer (1 start in 8 failed under a parallel build).
    os.environ.setdefault("RAY_raylet_start_wait_time_s", "120")
    with started_first():
        ray.init(
            "local", num_cpus=2, include_dashboard=False, log_to_driver=False
        )
    try:
        print(summary(launch()))
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()
