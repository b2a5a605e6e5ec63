"""The launches the course measures with, and their recorded results.

`python -m course.measure` (`make measure`) runs every launch in
LAUNCHES under torchrun and writes what it measured to
results/NAME.json, with a digest of what the result depends on: the
sources of snippets/torchrun/ and the launch's own flags. `load` reads
a result for a page and refuses one whose digest no longer matches, so
a page never shows numbers that this version of the code did not
produce. Nothing here imports torch.
"""

import hashlib
import json
from pathlib import Path

from snippets.torchrun.report import Run

HERE = Path(__file__).resolve().parent
FOLDER = HERE / "results"


def flags(**values):
    """--name=value flags, in the order given."""
    return tuple(f"--{k.replace('_', '-')}={v}" for k, v in values.items())


# The torchrun page's DDP-against-FSDP launch: small, and the ratios it
# shows do not depend on the size.
PAGE = flags(
    vocab=128,
    seq_len=32,
    d_model=64,
    n_heads=2,
    n_layers=2,
    d_ff=256,
    micro_batch=4,
    accum_steps=2,
    steps=3,
    log_every=3,
)
# Loss parity: every layout sees 8 sequences per micro-batch, 4
# micro-batches per step, 3 steps, from the same seed.
TINY = flags(vocab=64, seq_len=16, d_model=32, n_heads=4, n_layers=4, d_ff=64)
PARITY = (*TINY, "--steps=3", "--log-every=3")
ROWS = 8  # sequences per micro-batch, over all data-parallel ranks
MICRO = 4  # micro-batches per step


def parity(dp, *layout):
    """A parity run on dp data-parallel ranks: ROWS / dp sequences each."""
    b = f"--micro-batch={ROWS // dp}"
    if any(f.startswith("--pp=") for f in layout):
        return (*PARITY, b, f"--pp-microbatches={MICRO}", *layout)
    return (*PARITY, b, f"--accum-steps={MICRO}", *layout)


# Pipeline timelines: blocks large enough that a forward takes some
# milliseconds, two per stage.
TIMED = (
    *flags(vocab=64, seq_len=64, d_model=128, n_heads=4, d_ff=512),
    "--micro-batch=4",
    "--steps=5",
    "--log-every=5",
    "--trace",
)


def timeline(p, schedule, m):
    return (
        *TIMED,
        f"--n-layers={2 * p}",
        f"--pp={p}",
        f"--pp-schedule={schedule}",
        f"--pp-microbatches={m}",
    )


# pp 2 x tp 2 on 4 ranks; dp 2 x pp 2 x tp 2 on 8, as the planner
# writes it for this model
PP2_TP2 = parity(1, "--pp=2", "--tp=2", "--strategy=fsdp", "--check")
THREE_D = parity(
    2,
    "--strategy=fsdp",
    "--tp=2",
    "--pp=2",
    "--pp-schedule=1f1b",
    "--check",
    "--trace",
)
# DDP (FSDP2's replicate) x interleaved pp 2 x tp 2, recomputing blocks
THREE_D_DDP = parity(
    2,
    "--strategy=ddp",
    "--tp=2",
    "--pp=2",
    "--pp-schedule=interleaved",
    "--pp-chunks=2",
    "--recompute=full",
    "--check",
)
MICROBATCHES = {2: (2, 4, 8), 4: (4, 8, 16)}  # m for p = 2 and p = 4
TIMELINES = {
    p: [timeline(p, s, m) for s in ("gpipe", "1f1b") for m in ms]
    for p, ms in MICROBATCHES.items()
}

# name: (module run under torchrun, processes, arguments). A "sweep"
# trains each tuple of flags in turn in one process group.
LAUNCHES = {
    "compare": ("train", 2, (*PAGE, "--compare", "--check")),
    "solo": ("train", 1, parity(1, "--check")),
    "ranks2": ("sweep", 2, (parity(1, "--tp=2", "--trace"), *TIMELINES[2])),
    "ranks4": (
        "sweep",
        4,
        (
            parity(4, "--strategy=ddp"),
            parity(4, "--strategy=fsdp"),
            parity(4, "--strategy=hsdp", "--shard-size=2", "--check"),
            parity(1, "--tp=4", "--trace"),
            parity(1, "--pp=4"),
            PP2_TP2,
        ),
    ),
    "timelines4": ("sweep", 4, tuple(TIMELINES[4])),
    "ranks8": ("sweep", 8, (THREE_D, THREE_D_DDP)),
    "collectives2": ("collectives", 2, ()),
    "collectives4": ("collectives", 4, ()),
}


def run_flags(name):
    """The flags of each run launch `name` trains, in order: what a
    sweep of those runs would be given."""
    entry, _, args = LAUNCHES[name]
    if entry == "sweep":
        return list(args)
    if "--compare" in args:
        rest = tuple(a for a in args if a != "--compare")
        return [(*rest, "--strategy=ddp"), (*rest, "--strategy=fsdp")]
    return [args]


def sources_digest():
    """sha256 of every Python source in snippets/torchrun/."""
    h = hashlib.sha256()
    for path in sorted(HERE.glob("*.py")):
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def digest(name):
    """What launch `name`'s result depends on, as one sha256."""
    entry, nproc, args = LAUNCHES[name]
    launch = {"entry": entry, "nproc": nproc, "args": args}
    text = json.dumps([sources_digest(), launch], sort_keys=True, default=list)
    return hashlib.sha256(text.encode()).hexdigest()


class StaleResult(RuntimeError):
    """A recorded result that the current code did not produce."""


def load(name):
    """The recorded result of launch `name`, checked against the code."""
    if name not in LAUNCHES:
        raise KeyError(f"name must be one of {sorted(LAUNCHES)}, got {name!r}")
    path = FOLDER / f"{name}.json"
    if not path.is_file():
        raise StaleResult(f"{path} is missing: run `make measure`")
    data = json.loads(path.read_text())
    if data.get("digest") != digest(name):
        raise StaleResult(
            f"{path} was measured with other sources in snippets/torchrun/ "
            f"or other flags than these: run `make measure`"
        )
    return data


def runs(name):
    """The training runs of launch `name`, as report.Run."""
    return [Run.from_dict(d) for d in load(name)["runs"]]
