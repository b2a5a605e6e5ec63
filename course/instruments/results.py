"""The launches the course measures with, and their recorded results.

`python -m course.tools.measure` (`make measure`) runs every launch in
LAUNCHES under torchrun and writes what it measured to
results/NAME.json, with a digest of what the result depends on: the
sources of the modules the launch runs (its entry point and everything
of this repository it imports, at any depth), the launch's flags and
torch's version. `load` reads a result for a page and refuses one whose
digest no longer matches, so a page never shows numbers that this
version of the code did not produce, while a change to how results are
shown (this module, report.py, the charts) does not make them stale.
Nothing here imports torch.
"""

import ast
import hashlib
import json
from importlib.metadata import version
from pathlib import Path

from course import ROOT
from snippets.measured.report import Run

HERE = Path(__file__).resolve().parent
FOLDER = HERE / "results"
# The module each kind of launch runs.
ENTRIES = {
    "train": "course.instruments.train",
    "sweep": "course.instruments.sweep",
    "collectives": "snippets.torchrun.collectives",
}


def flags(**values):
    """--name=value flags, in the order given."""
    return tuple(f"--{k.replace('_', '-')}={v}" for k, v in values.items())


# The model of the torchrun page's launches: small, and the ratios they
# show do not depend on the size.
PAGE_MODEL = flags(
    vocab=128, seq_len=32, d_model=64, n_heads=2, n_layers=2, d_ff=256
)
# DDP against FSDP
PAGE = (
    *PAGE_MODEL,
    *flags(micro_batch=4, accum_steps=2, steps=3, log_every=3),
)
# FSDP2's two ways to accumulate (--accum-sync), beside DDP's: four
# micro-batches a step, so that the difference shows.
ACCUM = (
    *PAGE_MODEL,
    *flags(micro_batch=4, accum_steps=4, steps=2, log_every=2),
)
ACCUM_RUNS = tuple(
    (*ACCUM, f"--strategy={strategy}", f"--accum-sync={when}")
    for strategy, when in (
        ("fsdp", "last"),
        ("fsdp", "every"),
        ("ddp", "last"),
        ("ddp", "every"),
    )
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
# Mixture of experts: top-2 of 4 experts in every block, on the parity
# runs' batches. Expert parallelism over 2 ranks at three capacity
# factors; pp 2 x dp 4 with ep 2 on 8 ranks; one process beside them.
EXPERTS = flags(experts=4, top_k=2)
CAPACITY_FACTORS = (1.0, 1.25, 2.0)


def moe(dp, capacity_factor, *layout):
    return parity(
        dp, *EXPERTS, f"--capacity-factor={capacity_factor}", *layout
    )


EP_RUNS = tuple(
    moe(2, cf, "--ep=2", "--check", "--trace") for cf in CAPACITY_FACTORS
)
EP_PIPELINES = tuple(
    moe(4, 1.0, "--ep=2", "--pp=2", f"--strategy={s}", "--check")
    for s in ("fsdp", "ddp")
)
MICROBATCHES = {2: (2, 4, 8), 4: (4, 8, 16)}  # m for p = 2 and p = 4
TIMELINES = {
    p: [timeline(p, s, m) for s in ("gpipe", "1f1b") for m in ms]
    for p, ms in MICROBATCHES.items()
}
# The zero-bubble page: ZBV beside 1F1B and interleaved 1F1B on the same
# 2 ranks and blocks, and the zero-bubble schedules' parity runs.
ZERO_BUBBLE = ("1f1b", "interleaved", "zbv")
ZB_MICROBATCHES = (4, 8)
ZB_TIMELINES = [
    timeline(2, s, m) for m in ZB_MICROBATCHES for s in ZERO_BUBBLE
]
ZB_PARITY = [
    parity(1, "--pp=2", f"--pp-schedule={s}", "--check")
    for s in ("zbv", "interleaved-zb")
]

# Context parallelism on 4 ranks: the parity model split 4 ways by the
# ring, without and with zig-zag, and dp 2 x cp 2 under FSDP; then a
# longer sequence, so that each rank's attention takes some time.
LONG = (
    *flags(vocab=64, seq_len=2048, d_model=128, n_heads=2, n_layers=2),
    *flags(d_ff=256, micro_batch=1, steps=2, log_every=2),
)
CONTEXT = (
    parity(1, "--cp=4", "--cp-balance=none", "--check"),
    parity(1, "--cp=4", "--cp-balance=zigzag", "--check"),
    parity(2, "--cp=2", "--strategy=fsdp", "--check"),
    (*LONG, "--cp=4", "--cp-balance=none"),
    (*LONG, "--cp=4", "--cp-balance=zigzag"),
)

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
            parity(4, "--strategy=hsdp", "--shard-size=2")
            + ("--accum-sync=every",),
        ),
    ),
    "accum2": ("sweep", 2, ACCUM_RUNS),
    "timelines4": ("sweep", 4, tuple(TIMELINES[4])),
    "ranks8": ("sweep", 8, (THREE_D, THREE_D_DDP)),
    "zerobubble2": ("sweep", 2, (*ZB_TIMELINES, *ZB_PARITY)),
    "context4": ("sweep", 4, CONTEXT),
    "experts1": ("train", 1, moe(1, 1.0, "--check")),
    "experts2": ("sweep", 2, EP_RUNS),
    "experts8": ("sweep", 8, EP_PIPELINES),
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


def source(module):
    """The file of `module` if this repository holds it, else None."""
    base = ROOT.joinpath(*module.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def imported(module):
    """The modules of this repository `module` imports, anywhere in it,
    and the packages they sit in."""
    path = source(module)
    package = (
        module if path.name == "__init__.py" else module.rpartition(".")[0]
    )
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from . import x
                parent = package.rsplit(".", node.level - 1)[0]
                base = f"{parent}.{base}".rstrip(".")
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    found = set()
    for name in names:
        parts = name.split(".")
        found.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
    return {name for name in found if source(name)}


def closure(entry):
    """`entry` and every module of this repository it imports, however
    deeply, sorted: what a launch of `entry` runs of ours."""
    seen, todo = set(), [entry]
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo.extend(imported(module) - seen)
    return sorted(seen)


def digest(name):
    """What launch `name`'s result depends on, as one sha256: the
    sources its entry point runs, its processes and flags, and torch."""
    entry, nproc, args = LAUNCHES[name]
    h = hashlib.sha256()
    for module in closure(ENTRIES[entry]):
        h.update(module.encode() + b"\0" + source(module).read_bytes() + b"\0")
    launch = {"nproc": nproc, "args": args, "torch": version("torch")}
    h.update(json.dumps(launch, sort_keys=True, default=list).encode())
    return h.hexdigest()


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
            f"{path} was measured with other sources than the modules "
            f"its launch runs now, other flags or another torch: run "
            f"`make measure`"
        )
    return data


def runs(name):
    """The training runs of launch `name`, as report.Run."""
    return [Run.from_dict(d) for d in load(name)["runs"]]
