"""The training script with the course's instruments attached.

    torchrun --standalone --nproc_per_node=2 -m course.instruments.train \\
        --compare --check --json runs.json [the script's flags]

It takes every flag of snippets/torchrun/train.py and four of its own:
--json, --check, --trace and --compare. It trains through the script's
own `train`, with `Probes` as its Watch, and rank 0 prints and writes
what they measured as report.Run records.
"""

import sys
from dataclasses import replace

import torch
import torch.distributed as dist

from course.instruments.probes import Probes
from snippets.measured import report
from snippets.torchrun import config
from snippets.torchrun.processes import (
    pick_device,
    run_and_exit,
    start_process_group,
)
from snippets.torchrun.train import train

COMPARED = ("ddp", "fsdp")  # what --compare trains, in turn
MEASURING = ("json", "check", "trace", "compare")


def parser():
    """The script's parser, with the instruments' flags added."""
    p = config.parser()
    p.prog = "python -m course.instruments.train"
    p.add_argument("--json", metavar="PATH", help="write the figures here")
    p.add_argument(
        "--check",
        action="store_true",
        help="compare gradients with one process; digest the weights",
    )
    p.add_argument(
        "--trace",
        action="store_true",
        help="record collectives, pipeline timelines, activations held",
    )
    p.add_argument(
        "--compare",
        action="store_true",
        help="train with DDP, then FSDP, and compare",
    )
    return p


def parse(argv=None, env=None):
    """(the script's TrainConfig, the measuring flags); a bad flag exits
    with status 2 and its reason, before any process group exists."""
    p = parser()
    args = p.parse_args(argv)
    measuring = {name: getattr(args, name) for name in MEASURING}
    if args.compare:
        for flag, given in (
            ("--strategy", args.strategy),
            ("--checkpoint-dir", args.checkpoint_dir),
            ("--tp", args.tp > 1),
            ("--pp", args.pp > 1),
        ):
            if given:
                p.error(
                    f"--compare trains DDP, then FSDP, on data parallelism "
                    f"alone, from scratch: drop {flag}"
                )
    try:
        cfg = config.build(args, config.world_size_from_env(env), env)
    except config.ConfigError as error:
        p.error(str(error))
    return cfg, measuring


def measured_run(cfg, measuring, device, mixed):
    """Train `cfg` with Probes; its report.Run, or None if no step ran."""
    probes = Probes(
        cfg, device, mixed, check=measuring["check"], trace=measuring["trace"]
    )
    done = train(cfg, device, mixed, probes)
    if not probes.steps:
        return None
    return report.Run(
        config=cfg,
        measuring={k: measuring[k] for k in MEASURING},
        world_size=dist.get_world_size(),
        device=device.type,
        compute_dtype="bf16" if mixed else "fp32",
        torch=torch.__version__,
        params=probes.params,
        resumed_from_step=done.resumed_from_step,
        losses=done.losses,
        tokens_per_s=done.tokens_per_s,
        measured=report.Measured.from_dict(probes.results()),
    )


def train_in_turn(runs, json_path=None):
    """Train each (config, measuring flags), on every rank, in one
    process group; rank 0 prints and writes the runs."""
    device, backend, mixed = pick_device()
    start_process_group(backend, device, runs[0][0].timeout)
    try:
        done = [measured_run(cfg, m, device, mixed) for cfg, m in runs]
        if all(done) and dist.get_rank() == 0:
            report.write(done, json_path)
    finally:
        dist.destroy_process_group()  # on success and on error


def main(argv=None):
    cfg, measuring = parse(argv)
    if not measuring["compare"]:
        train_in_turn([(cfg, measuring)], measuring["json"])
        return
    runs = [(replace(cfg, strategy=s), measuring) for s in COMPARED]
    train_in_turn(runs, measuring["json"])


if __name__ == "__main__":
    run_and_exit(main, sys.argv[1:])
