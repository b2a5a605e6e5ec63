"""Settings of the training script, each declared once.

Every setting is a dataclass field whose metadata says what it means and
what it accepts; `parser()` derives the command line from the fields,
so a flag cannot drift from the setting it fills. Nothing here imports
torch, so a bad flag is rejected on every rank in well under a second,
before any process group exists.
"""

import argparse
import os
from dataclasses import MISSING, dataclass, field, fields

from snippets.checks import count, number

STRATEGIES = ("ddp", "fsdp", "hsdp")
COMPARED = ("ddp", "fsdp")  # what --compare trains, in turn


def option(default, help, *, minimum=None, choices=None):
    """A setting's default and its flag's rules, kept on the field."""
    rules = {"help": help, "minimum": minimum, "choices": choices}
    return field(default=default, metadata=rules)


# --8<-- [start:config]
@dataclass(frozen=True)
class ModelConfig:
    vocab: int = option(512, "vocabulary size", minimum=2)
    seq_len: int = option(64, "tokens per sequence", minimum=2)
    d_model: int = option(256, "hidden size", minimum=1)
    n_heads: int = option(4, "attention heads", minimum=1)
    n_layers: int = option(4, "transformer blocks", minimum=1)
    d_ff: int = option(1024, "MLP hidden size", minimum=1)


@dataclass(frozen=True)
class TrainConfig:
    strategy: str = option("ddp", "how to split", choices=STRATEGIES)
    shard_size: int | None = option(
        None, "HSDP: ranks per shard group; default: ranks per node", minimum=1
    )
    compare: bool = option(False, "train with DDP, then FSDP, and compare")
    steps: int = option(8, "optimizer steps", minimum=1)
    micro_batch: int = option(8, "sequences per rank per pass", minimum=1)
    accum_steps: int = option(1, "micro-batches per step", minimum=1)
    global_batch: int | None = option(
        None, "sequences per step; sets --accum-steps", minimum=1
    )
    lr: float = option(3e-3, "Adam's learning rate", minimum=0)
    seed: int = option(0, "seeds the weights and the data", minimum=0)
    checkpoint_dir: str | None = option(None, "where checkpoints go")
    checkpoint_every: int = option(0, "steps between saves", minimum=0)
    json: str | None = option(None, "write the measured figures here")
    check: bool = option(False, "compare gradients with one process")
    timeout: float = option(300.0, "seconds to wait for peers", minimum=0)
    log_every: int = option(1, "steps between log lines", minimum=1)
    model: ModelConfig = field(default_factory=ModelConfig)


# --8<-- [end:config]


class ConfigError(ValueError):
    """A flag has a value the script cannot use."""


def _flag_type(kind, minimum):
    """An argparse type: the text as `kind`, then the labs' own check
    (snippets/checks.py), so a flag is refused for the same reasons and
    in the same words as a lab argument."""
    convert, check, what = {
        int: (int, count, "a whole number"),
        float: (float, number, "a number"),
    }[kind]

    def parse(text):
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"must be {what}, got {text!r}"
            ) from None
        bound = {"minimum": minimum}
        if kind is float:
            bound["allow_minimum"] = False
        try:
            return check("the value", value, **bound)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    return parse


def _settings():
    """(field, default) for every flag: TrainConfig's, then the model's."""
    for cls in (TrainConfig, ModelConfig):
        for f in fields(cls):
            if f.default is not MISSING:
                yield f


def parser():
    p = argparse.ArgumentParser(
        prog="python -m snippets.torchrun.train",
        description="Train a small decoder-only LM with DDP or FSDP2.",
    )
    for f in _settings():
        name = "--" + f.name.replace("_", "-")
        rules = f.metadata
        help = f"{rules['help']} (default: {f.default})"
        if f.type is bool:
            p.add_argument(name, action="store_true", help=rules["help"])
        elif rules["choices"]:
            p.add_argument(name, choices=rules["choices"], help=help)
        elif rules["minimum"] is not None:
            kind = float if f.type is float else int
            p.add_argument(
                name,
                type=_flag_type(kind, rules["minimum"]),
                metavar="X" if kind is float else "N",
                help=help,
            )
        else:
            p.add_argument(name, metavar="PATH", help=help)
    p.set_defaults(**{f.name: f.default for f in _settings()})
    # None tells "not given" from "given the default value"
    p.set_defaults(accum_steps=None, strategy=None)
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


def build(args, world_size, env=None):
    """TrainConfig from parsed flags; ConfigError names a bad one."""
    env = os.environ if env is None else env
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
    if args.compare and args.strategy:
        raise ConfigError("--compare trains DDP, then FSDP: drop --strategy")
    shard = args.shard_size
    if args.strategy == "hsdp":
        shard = shard or int(env.get("LOCAL_WORLD_SIZE", world_size))
        if world_size % shard:
            raise ConfigError(
                f"--shard-size ({shard}) must divide the world size "
                f"({world_size}) for --strategy hsdp"
            )
    elif shard is not None:
        raise ConfigError("--shard-size applies to --strategy hsdp only")
    if args.compare and args.checkpoint_dir:
        raise ConfigError("--compare cannot resume: drop --checkpoint-dir")
    values = vars(args) | {
        "accum_steps": accum or 1,
        "strategy": args.strategy or "ddp",
        "shard_size": shard,
    }
    model = ModelConfig(
        **{f.name: values[f.name] for f in fields(ModelConfig)}
    )
    settings = {f.name: values[f.name] for f in _settings()}
    return TrainConfig(
        model=model,
        **{
            f.name: settings[f.name]
            for f in fields(TrainConfig)
            if f.name != "model"
        },
    )


def parse(argv=None, env=None):
    """Parse and check the flags; exits with status 2 on a bad one."""
    p = parser()
    args = p.parse_args(argv)
    try:
        return build(args, world_size_from_env(env), env)
    except ConfigError as error:
        p.error(str(error))
