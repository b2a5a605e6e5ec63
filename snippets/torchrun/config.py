"""Settings of the training script, each declared once.

Every setting is a dataclass field whose metadata says what it means and
what it accepts; `parser()` derives the command line from the fields,
so a flag cannot drift from the setting it fills. Nothing here imports
torch, so a bad flag is rejected on every rank in well under a second,
before any process group exists.
"""

import argparse
import math
import os
from dataclasses import MISSING, dataclass, field, fields

from snippets.checks import count, number

STRATEGIES = ("ddp", "fsdp", "hsdp")
SCHEDULES = ("gpipe", "1f1b", "interleaved", "interleaved-zb", "zbv")
RECOMPUTE = ("none", "full")
ACCUM_SYNC = ("last", "every")
CP_BALANCES = ("none", "zigzag")


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
    experts: int = option(
        0, "experts per MLP, a mixture of experts; 0: one dense MLP", minimum=0
    )
    top_k: int = option(
        2, "experts each token visits, with --experts", minimum=1
    )
    capacity_factor: float = option(
        1.25, "seats per expert over the mean load, with --experts", minimum=0
    )


@dataclass(frozen=True)
class TrainConfig:
    strategy: str = option(
        "ddp", "data parallelism over dp", choices=STRATEGIES
    )
    shard_size: int | None = option(
        None, "HSDP: ranks per shard group; default: ranks per node", minimum=1
    )
    tp: int = option(1, "tensor-parallel ranks (Megatron split)", minimum=1)
    cp: int = option(
        1,
        "context-parallel ranks: ring attention over the sequence",
        minimum=1,
    )
    cp_balance: str = option(
        "zigzag",
        "with --cp: each rank holds one piece of the sequence (none), or "
        "chunks r and 2cp-1-r of 2cp (zigzag), for equal causal work",
        choices=CP_BALANCES,
    )
    pp: int = option(1, "pipeline stages", minimum=1)
    pp_schedule: str = option(
        "1f1b", "pipeline schedule, with --pp", choices=SCHEDULES
    )
    pp_microbatches: int | None = option(
        None, "micro-batches per step, with --pp; default: --pp", minimum=1
    )
    pp_chunks: int | None = option(
        None,
        "model chunks per pipeline rank; interleaved(-zb), zbv: 2",
        minimum=1,
    )
    ep: int = option(
        1, "expert-parallel ranks, carved out of dp, with --experts", minimum=1
    )
    recompute: str = option(
        "none", "activation checkpointing per block", choices=RECOMPUTE
    )
    steps: int = option(8, "optimizer steps", minimum=1)
    micro_batch: int = option(8, "sequences per rank per pass", minimum=1)
    accum_steps: int = option(1, "micro-batches per step", minimum=1)
    accum_sync: str = option(
        "last",
        "with --accum-steps: reduce gradients on the last micro-batch "
        "(FSDP holds them unsharded until then) or on every one",
        choices=ACCUM_SYNC,
    )
    global_batch: int | None = option(
        None, "sequences per step; sets --accum-steps", minimum=1
    )
    lr: float = option(3e-3, "Adam's learning rate", minimum=0)
    seed: int = option(0, "seeds the weights and the data", minimum=0)
    checkpoint_dir: str | None = option(None, "where checkpoints go")
    checkpoint_every: int = option(0, "steps between saves", minimum=0)
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
        allow_abbrev=False,  # --check is no prefix of --checkpoint-dir
        description="Train a small decoder-only LM with DDP, FSDP2 or "
        "HSDP, tensor, pipeline and context parallelism.",
    )
    for f in _settings():
        name = "--" + f.name.replace("_", "-")
        rules = f.metadata
        help = f"{rules['help']} (default: {f.default})"
        if rules["choices"]:
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
    p.set_defaults(
        accum_steps=None, strategy=None, pp_schedule=None, cp_balance=None
    )
    p.set_defaults(top_k=None, capacity_factor=None)
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


def divisors(n):
    return ", ".join(str(d) for d in range(1, n + 1) if n % d == 0)


def _layout(args, world_size):
    """The data-parallel size, once --tp, --pp and --cp fit the world
    size."""
    tp, pp, cp = args.tp, args.pp, args.cp
    if world_size % (tp * pp * cp):
        names, sizes, dims = "--tp x --pp", f"{tp} x {pp}", "pp x tp"
        if cp > 1:
            names, sizes = names + " x --cp", f"{sizes} x {cp}"
            dims = "cp x tp"  # cp refuses pp
        raise ConfigError(
            f"{names} ({sizes} = {tp * pp * cp}) must divide the world "
            f"size ({world_size}), as dp x {dims} is every rank; "
            f"products that fit: {divisors(world_size)}"
        )
    shares = (
        ("n-heads", args.n_heads),
        ("d-ff", args.d_ff),
        ("vocab", args.vocab),
    )
    for name, size in shares:
        if size % tp:
            raise ConfigError(
                f"--{name} ({size}) must be a multiple of --tp ({tp}), so "
                f"that each tp rank holds an equal share; --tp that fit: "
                f"{divisors(size)}"
            )
    _context(args)
    if args.seq_len // cp % tp:
        per_rank = "" if cp == 1 else f" / --cp ({cp})"
        raise ConfigError(
            f"--seq-len ({args.seq_len}){per_rank} must be a multiple of "
            f"--tp ({tp}): sequence parallelism gives each tp rank an "
            "equal share"
        )
    return world_size // (tp * pp * cp)


def _context(args):
    """--cp and --cp-balance: the sequence must split evenly, and cp
    runs beside FSDP, DDP and tp, not with a pipeline or HSDP."""
    cp, balance = args.cp, args.cp_balance
    if cp == 1:
        if balance is not None:
            raise ConfigError("--cp-balance applies to --cp > 1 only")
        args.cp_balance = "zigzag"
        return
    balance = args.cp_balance = balance or "zigzag"
    pieces = 2 * cp if balance == "zigzag" else cp
    if args.seq_len % pieces:
        raise ConfigError(
            f"--seq-len ({args.seq_len}) must be a multiple of "
            f"{'2 x ' if balance == 'zigzag' else ''}--cp ({pieces}) with "
            f"--cp-balance {balance}: "
            + (
                "each rank holds two equal chunks"
                if balance == "zigzag"
                else "each rank holds an equal piece"
            )
        )
    if args.pp > 1:
        raise ConfigError(
            f"--cp ({cp}) applies without --pp only (--pp 1): this "
            "script does not run a ring inside pipeline stages"
        )
    if args.strategy == "hsdp":
        raise ConfigError(
            f"--cp ({cp}) runs with --strategy ddp or fsdp, not hsdp: "
            "FSDP shards over dp x cp"
        )


def _pipeline(args):
    """(schedule, micro-batches, chunks), once they fit --pp."""
    pp, given = (
        args.pp,
        [
            f"--{n.replace('_', '-')}"
            for n in ("pp_schedule", "pp_microbatches", "pp_chunks")
            if getattr(args, n) is not None
        ],
    )
    if pp == 1:
        if given:
            raise ConfigError(f"{given[0]} applies to --pp > 1 only")
        return "1f1b", 1, 1
    schedule = args.pp_schedule or "1f1b"
    several = schedule in ("interleaved", "interleaved-zb", "zbv")
    chunks = args.pp_chunks or (2 if several else 1)
    m = args.pp_microbatches or pp
    if schedule.startswith("interleaved") and chunks < 2:
        raise ConfigError(
            f"--pp-chunks ({chunks}) must be >= 2 for --pp-schedule "
            f"{schedule}: each rank holds several chunks of the model"
        )
    if schedule == "zbv" and chunks != 2:
        raise ConfigError(
            f"--pp-chunks ({chunks}) must be 2 for --pp-schedule zbv: "
            "each rank holds one stage on the way down the ranks and one "
            "on the way back up"
        )
    if not several and chunks != 1:
        raise ConfigError(
            f"--pp-chunks ({chunks}) must be 1 for --pp-schedule {schedule};"
            " only interleaved, interleaved-zb and zbv hold several chunks"
            " per rank"
        )
    if args.n_layers % (pp * chunks):
        raise ConfigError(
            f"--n-layers ({args.n_layers}) must be a multiple of --pp x "
            f"--pp-chunks ({pp} x {chunks} = {pp * chunks}): every stage "
            "holds the same number of blocks"
        )
    if schedule == "1f1b" and m < pp:
        raise ConfigError(
            f"--pp-microbatches ({m}) must be >= --pp ({pp}) for 1f1b, "
            "which starts with one forward per stage"
        )
    if schedule == "interleaved" and m % pp:
        raise ConfigError(
            f"--pp-microbatches ({m}) must be a multiple of --pp ({pp}) "
            "for interleaved, which runs them in groups of --pp"
        )
    rounds = max(1, m // pp)
    if schedule == "interleaved-zb" and m % rounds:
        fit = [n for n in range(1, 4 * pp + 1) if n % max(1, n // pp) == 0]
        raise ConfigError(
            f"--pp-microbatches ({m}) must be a multiple of its number of "
            f"rounds, {m} // --pp ({pp}) = {rounds}, for interleaved-zb, "
            "which runs them in equal rounds; counts that fit up to "
            f"{4 * pp}: {', '.join(map(str, fit))}"
        )
    return schedule, m, chunks


def _experts(args, dp):
    """(top-k, capacity factor), once the experts fit the layout."""
    e, k, cf, ep = args.experts, args.top_k, args.capacity_factor, args.ep
    if not e:
        for flag, given in (
            ("--top-k", k is not None),
            ("--capacity-factor", cf is not None),
            ("--ep", ep > 1),
        ):
            if given:
                raise ConfigError(f"{flag} applies to --experts > 0 only")
        return 2, 1.25
    k = 2 if k is None else k
    if k > e:
        raise ConfigError(
            f"--top-k ({k}) must be <= --experts ({e}): a token visits "
            "distinct experts"
        )
    if e % ep or dp % ep:
        raise ConfigError(
            f"--ep ({ep}) must divide --experts ({e}) and the data-parallel "
            f"size ({dp}): each of the ep ranks holds experts / ep experts "
            f"and the groups are cut out of dp; --ep that fit: "
            f"{divisors(math.gcd(e, dp))}"
        )
    if args.tp > 1:
        raise ConfigError(
            f"--experts with --tp ({args.tp}) is not built: an MoE layer "
            "runs whole on each rank; drop --tp or --experts"
        )
    if args.cp > 1:
        raise ConfigError(
            f"--experts with --cp ({args.cp}) is not built: the experts' "
            "capacity is counted per whole sequence; drop --cp or --experts"
        )
    if args.pp_schedule in ("interleaved-zb", "zbv"):
        raise ConfigError(
            f"--experts with --pp-schedule {args.pp_schedule} is not built:"
            " its split backward is untested with the all-to-alls; use "
            "gpipe, 1f1b or interleaved"
        )
    if ep > 1 and args.strategy == "hsdp":
        raise ConfigError(
            "--ep > 1 takes --strategy ddp or fsdp: the experts' own "
            "data-parallel groups are not split for HSDP"
        )
    return k, 1.25 if cf is None else cf


def build(args, world_size, env=None):
    """TrainConfig from parsed flags; ConfigError names a bad one."""
    env = os.environ if env is None else env
    if args.d_model % args.n_heads:
        raise ConfigError(
            f"--d-model ({args.d_model}) must be a multiple of "
            f"--n-heads ({args.n_heads})"
        )
    dp = _layout(args, world_size)
    schedule, m, chunks = _pipeline(args)
    top_k, capacity_factor = _experts(args, dp)
    accum = args.accum_steps
    if args.pp > 1 and accum not in (None, 1):
        raise ConfigError(
            f"--accum-steps ({accum}) must be 1 with --pp: the pipeline "
            "runs --pp-microbatches micro-batches per step instead"
        )
    if args.pp > 1 and args.accum_sync == "every":
        raise ConfigError(
            "--accum-sync every applies without --pp only: "
            "torch.distributed.pipelining reduces gradients after the "
            "last micro-batch itself"
        )
    if args.global_batch is not None:
        per_pass = args.micro_batch * dp
        if args.global_batch % per_pass:
            raise ConfigError(
                f"--global-batch ({args.global_batch}) must be a multiple "
                f"of --micro-batch x data-parallel size ({args.micro_batch}"
                f" x {dp} = {per_pass})"
            )
        derived = args.global_batch // per_pass
        flag, current = "--accum-steps", accum
        if args.pp > 1:
            flag, current = "--pp-microbatches", args.pp_microbatches
        if current is not None and current != derived:
            raise ConfigError(
                f"{flag} {current} contradicts --global-batch "
                f"{args.global_batch}, which needs {flag} {derived}"
            )
        if args.pp > 1:
            m = derived
            args.pp_microbatches = m
            _pipeline(args)  # the derived count must fit the schedule
        else:
            accum = derived
    if args.checkpoint_every and not args.checkpoint_dir:
        raise ConfigError("--checkpoint-every needs --checkpoint-dir")
    shard = args.shard_size
    if args.strategy == "hsdp":
        shard = shard or int(env.get("LOCAL_WORLD_SIZE", dp))
        if dp % shard:
            raise ConfigError(
                f"--shard-size ({shard}) must divide the data-parallel size "
                f"({dp} = {world_size} ranks / (--pp {args.pp} x --tp "
                f"{args.tp})) for --strategy hsdp"
            )
    elif shard is not None:
        raise ConfigError("--shard-size applies to --strategy hsdp only")
    values = vars(args) | {
        "accum_steps": accum or 1,
        "strategy": args.strategy or "ddp",
        "shard_size": shard,
        "pp_schedule": schedule,
        "pp_microbatches": m,
        "pp_chunks": chunks,
        "top_k": top_k,
        "capacity_factor": capacity_factor,
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
