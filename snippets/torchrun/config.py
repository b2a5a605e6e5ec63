"""Settings of the training script, and their checks.

Nothing here imports torch, so a bad flag is rejected on every rank in
well under a second, before any process group exists.
"""

import argparse
import os
from dataclasses import dataclass

from snippets.checks import count, number

STRATEGIES = ("ddp", "fsdp")


# --8<-- [start:config]
@dataclass(frozen=True)
class ModelConfig:
    vocab: int = 512
    seq_len: int = 64
    d_model: int = 256
    n_heads: int = 4
    n_layers: int = 4
    d_ff: int = 1024


@dataclass(frozen=True)
class TrainConfig:
    model: ModelConfig
    strategy: str = "ddp"
    steps: int = 8
    micro_batch: int = 8
    accum_steps: int = 1
    lr: float = 3e-3
    seed: int = 0
    checkpoint_dir: str | None = None
    checkpoint_every: int = 0  # 0: never
    json: str | None = None
    check: bool = False  # compare gradients with a one-process run
    timeout_s: float = 300.0  # process-group start-up and collectives
    log_every: int = 1
    fail_at_step: int = 0  # tests only: a rank dies at this step
    fail_in_save: int = 0  # tests only: die while saving this step


# --8<-- [end:config]


class ConfigError(ValueError):
    """A flag has a value the script cannot use."""


def _flag_type(convert, kind, check, **bounds):
    """An argparse type: turn the text into `kind`, then apply the same
    validator the labs use (snippets/checks.py), so a flag is refused
    for the same reasons and in the same words as a lab argument."""

    def parse(text):
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"must be {kind}, got {text!r}"
            ) from None
        try:
            return check("the value", value, **bounds)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    return parse


def _int_at_least(minimum):
    return _flag_type(int, "a whole number", count, minimum=minimum)


_positive_float = _flag_type(float, "a number", number)


def parser():
    p = argparse.ArgumentParser(
        prog="python -m snippets.torchrun.train",
        description="Train a small decoder-only LM with DDP or FSDP2.",
    )
    one, zero = _int_at_least(1), _int_at_least(0)
    m = ModelConfig()
    p.add_argument("--strategy", choices=STRATEGIES, default="ddp")
    p.add_argument("--steps", type=one, default=8)
    p.add_argument("--micro-batch", type=one, default=8)
    p.add_argument("--accum-steps", type=one, default=None)
    p.add_argument(
        "--global-batch",
        type=one,
        default=None,
        help="sequences per optimizer step; must be a multiple of "
        "micro-batch x world size (sets --accum-steps)",
    )
    p.add_argument("--lr", type=_positive_float, default=3e-3)
    p.add_argument("--seed", type=zero, default=0)
    p.add_argument("--vocab", type=_int_at_least(2), default=m.vocab)
    p.add_argument("--seq-len", type=_int_at_least(2), default=m.seq_len)
    p.add_argument("--d-model", type=one, default=m.d_model)
    p.add_argument("--n-heads", type=one, default=m.n_heads)
    p.add_argument("--n-layers", type=one, default=m.n_layers)
    p.add_argument("--d-ff", type=one, default=m.d_ff)
    p.add_argument("--checkpoint-dir", default=None)
    p.add_argument("--checkpoint-every", type=zero, default=0)
    p.add_argument("--json", default=None, help="write the figures here")
    p.add_argument(
        "--check",
        action="store_true",
        help="compare the first step's gradients with one process",
    )
    p.add_argument("--timeout", type=_positive_float, default=300.0)
    p.add_argument("--log-every", type=one, default=1)
    p.add_argument("--fail-at-step", type=zero, default=0, help="tests only")
    p.add_argument("--fail-in-save", type=zero, default=0, help="tests only")
    return p


def world_size_from_env(env=None):
    env = os.environ if env is None else env
    text = env.get("WORLD_SIZE", "1")
    try:
        world = int(text)
    except ValueError:
        raise ConfigError(
            f"WORLD_SIZE must be a whole number >= 1, got {text!r}"
        ) from None
    if world < 1:
        raise ConfigError(f"WORLD_SIZE must be >= 1, got {world}")
    return world


def build(args, world_size):
    """TrainConfig from parsed flags; ConfigError names a bad one."""
    if args.d_model % args.n_heads:
        raise ConfigError(
            f"--d-model ({args.d_model}) must be a multiple of "
            f"--n-heads ({args.n_heads})"
        )
    accum = args.accum_steps
    if args.global_batch is not None:
        per_pass = args.micro_batch * world_size
        if args.global_batch % per_pass:
            raise ConfigError(
                f"--global-batch ({args.global_batch}) must be a multiple "
                f"of --micro-batch x world size ({args.micro_batch} x "
                f"{world_size} = {per_pass})"
            )
        derived = args.global_batch // per_pass
        if accum is not None and accum != derived:
            raise ConfigError(
                f"--accum-steps {accum} contradicts --global-batch "
                f"{args.global_batch}, which needs --accum-steps {derived}"
            )
        accum = derived
    if args.checkpoint_every and not args.checkpoint_dir:
        raise ConfigError("--checkpoint-every needs --checkpoint-dir")
    for flag, step in (
        ("--fail-at-step", args.fail_at_step),
        ("--fail-in-save", args.fail_in_save),
    ):
        if step > args.steps:
            raise ConfigError(
                f"{flag} ({step}) must be <= --steps ({args.steps})"
            )
    model = ModelConfig(
        vocab=args.vocab,
        seq_len=args.seq_len,
        d_model=args.d_model,
        n_heads=args.n_heads,
        n_layers=args.n_layers,
        d_ff=args.d_ff,
    )
    return TrainConfig(
        model=model,
        strategy=args.strategy,
        steps=args.steps,
        micro_batch=args.micro_batch,
        accum_steps=accum or 1,
        lr=args.lr,
        seed=args.seed,
        checkpoint_dir=args.checkpoint_dir,
        checkpoint_every=args.checkpoint_every,
        json=args.json,
        check=args.check,
        timeout_s=args.timeout,
        log_every=args.log_every,
        fail_at_step=args.fail_at_step,
        fail_in_save=args.fail_in_save,
    )


def parse(argv=None, env=None):
    """Parse and check the flags; exits with status 2 on a bad one."""
    p = parser()
    args = p.parse_args(argv)
    try:
        return build(args, world_size_from_env(env))
    except ConfigError as error:
        p.error(str(error))
