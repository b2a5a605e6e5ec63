"""What a training run measured, and the course's models beside it.

train.py fills a `Run` on rank 0 and writes it as JSON (`--json`);
`predict` computes what `memory_per_gpu` and the ring arithmetic say the
same run should have held and sent; `table` sets measured against
predicted for DDP and FSDP. Nothing here imports torch.

    python -m snippets.measured.report RUNS.json  # a finished run's table
"""

import json
import sys
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from snippets.torchrun.config import ModelConfig, TrainConfig
from snippets.units import GB, MB
from snippets.zero.memory import memory_per_gpu

LOSS_TOLERANCE = 1e-4  # DDP vs FSDP, same seed, fp32 on CPU
KINDS = ("all_reduce", "all_gather", "reduce_scatter")


# --8<-- [start:run]
@dataclass(frozen=True)
class StateBytes:
    """Bytes one rank holds, and the bytes per value of each kind."""

    params: int
    grads: int
    optim: int  # Adam's m and v
    bytes_param: int
    bytes_grad: int
    bytes_optim: int  # both moments together

    @property
    def total(self):
        return self.params + self.grads + self.optim


@dataclass(frozen=True)
class GradCheck:
    """Distributed gradients against one process with the whole batch."""

    max_abs_diff: float
    max_abs_grad: float
    tolerance: float
    rule: str
    ok: bool


@dataclass(frozen=True)
class Measured:
    """What rank 0 gathered from every rank (probes.py); None where the
    run was not asked to measure it (--check, --trace)."""

    state: list[StateBytes]  # one per rank
    traffic: dict[str, int]  # bytes per collective kind, one step
    traffic_per_micro: list[dict[str, int]]
    syncs_per_step: list[int]  # one per rank
    grad_check: GradCheck | None = None
    grads_held: list[int] | None = None
    activations: dict | None = None
    weights_sha256: str | None = None
    tp_block: dict | None = None
    tp_step: dict | None = None
    timeline: list | None = None
    peak_in_flight: list[int] | None = None
    ring: list[dict] | None = None  # one per rank, with --cp
    ep_step: list | None = None  # the all-to-alls of the first step
    routing: list | None = None  # per rank: layer -> (routed, kept)

    @classmethod
    def from_dict(cls, d):
        check = d.get("grad_check")
        return cls(
            **d
            | {
                "state": [StateBytes(**b) for b in d["state"]],
                "grad_check": GradCheck(**check) if check else None,
            }
        )


@dataclass(frozen=True)
class Run:
    """One training run: the script's settings, the instruments' flags,
    and what was measured."""

    config: TrainConfig
    measuring: dict  # --check, --trace, --compare, --json
    world_size: int
    device: str
    compute_dtype: str
    torch: str
    params: int
    resumed_from_step: int
    losses: list[float]
    tokens_per_s: float
    measured: Measured

    @classmethod
    def from_dict(cls, d):
        c = dict(d["config"])
        model = ModelConfig(**c.pop("model"))
        return cls(
            **{f.name: d[f.name] for f in fields(cls)}
            | {
                "config": TrainConfig(model=model, **c),
                "measured": Measured.from_dict(d["measured"]),
            }
        )

    @property
    def dp(self):
        return self.world_size // (self.config.tp * self.config.pp)

    @property
    def shard_size(self):
        """Ranks that split the state: 1 (DDP) to the dp size (FSDP)."""
        c = self.config
        return {"ddp": 1, "fsdp": self.dp}.get(c.strategy, c.shard_size)


# --8<-- [end:run]


def ring_sent(traffic, shard_size, replicas):
    """Bytes a rank sends for these collectives on rings (nccl-tests'
    bus bandwidth): (S-1)/S of a buffer all-gathered or reduce-scattered
    among the S ranks of its shard group, 2(R-1)/R of one all-reduced
    among the R replicas (DDP: S = 1; FSDP: R = 1; HSDP: both)."""
    return (shard_size - 1) / shard_size * (
        traffic["all_gather"] + traffic["reduce_scatter"]
    ) + 2 * (replicas - 1) / replicas * traffic["all_reduce"]


def sent_by(r, traffic):
    """`ring_sent` for run `r`'s groups."""
    return ring_sent(traffic, r.shard_size, r.dp // r.shard_size)


# --8<-- [start:predict]
@dataclass(frozen=True)
class Predicted:
    """What the course's models say run `r` holds and sends."""

    state_bytes: int
    traffic: dict[str, int]
    traffic_per_micro: list[dict[str, int]] = field(repr=False)
    syncs_per_step: int
    grads_held: int  # the most gradient bytes between two micro-batches


def predict(r):
    p, k, b = r.params, r.config.accum_steps, r.measured.state[0]
    shards, replicas = r.shard_size, r.dp // r.shard_size
    state = memory_per_gpu(
        "zero3" if shards > 1 else "ddp",
        p,
        shards,
        bytes_param=b.bytes_param,
        bytes_grad=b.bytes_grad,
        bytes_optim=b.bytes_optim,
    )
    every = r.config.accum_sync == "every"  # reduce on every micro-batch
    grad = p * b.bytes_grad
    # What each micro-batch that reduces sends: ZeRO-3 reduce-scatters
    # the gradient; replicas all-reduce it (or, with HSDP, its shard).
    reduce = dict.fromkeys(KINDS, 0)
    if shards > 1:
        reduce["reduce_scatter"] = grad
    if replicas > 1:
        reduce["all_reduce"] = grad // shards
    per_micro = [dict.fromkeys(KINDS, 0) for _ in range(k)]
    for i, t in enumerate(per_micro):
        if shards > 1:  # ZeRO-3 gathers in forward and backward
            gather = 2 if r.compute_dtype == "bf16" else b.bytes_param
            t["all_gather"] = 2 * p * gather
        last = i == k - 1
        if every or last:
            t["reduce_scatter"] = reduce["reduce_scatter"]
        # HSDP defers its replicas' all-reduce to the last micro-batch
        # (set_requires_all_reduce); DDP with "every" reduces each one.
        if last or (every and shards == 1):
            t["all_reduce"] = reduce["all_reduce"]
    traffic = {kind: sum(t[kind] for t in per_micro) for kind in KINDS}
    syncs = sum(1 for t in per_micro if t["all_reduce"] or t["reduce_scatter"])
    # Between micro-batches a rank holds its shard of the gradients, or
    # the whole of them: DDP always, FSDP2 while it defers the sync.
    whole = shards == 1 or (k > 1 and not every)
    return Predicted(
        state_bytes=round(state * GB),
        traffic=traffic,
        traffic_per_micro=per_micro,
        syncs_per_step=syncs,
        grads_held=grad if whole else grad // shards,
    )


# --8<-- [end:predict]


def problems(runs, loss_tolerance=LOSS_TOLERANCE):
    """Where measured and predicted disagree; [] if nowhere."""
    found = []
    for r in runs:
        m, x, name = predict(r), r.measured, r.config.strategy
        for i, b in enumerate(x.state):
            if b.total != m.state_bytes:
                found.append(f"{name} rank {i}: state bytes {b.total}")
        if x.traffic != m.traffic:
            found.append(f"{name}: traffic {x.traffic}")
        if set(x.syncs_per_step) != {m.syncs_per_step}:
            found.append(f"{name}: syncs per step {x.syncs_per_step}")
        if x.grads_held and set(x.grads_held) != {m.grads_held}:
            found.append(f"{name}: gradients held {x.grads_held}")
        a = x.activations
        if a and (a["block"], a["model"]) != (
            a["block_predicted"],
            a["model_predicted"],
        ):
            found.append(f"{name}: activation bytes {a}")
        if x.grad_check and not x.grad_check.ok:
            found.append(f"{name}: gradient check {x.grad_check}")
    if len(runs) > 1 and max_loss_gap(*runs) > loss_tolerance:
        found.append(f"losses differ by {max_loss_gap(*runs):.3g}")
    return found


def max_loss_gap(*runs):
    """The largest difference between the runs' losses at any step."""
    steps = zip(*(r.losses for r in runs), strict=True)
    return max(max(s) - min(s) for s in steps)


def summary(r):
    """What train.py prints at the end of a run, rank 0: the prediction
    beside each figure where the run is data parallelism alone."""
    c, x = r.config, r.measured
    # the lesson's DP models hold every weight on every rank
    pure = c.tp == c.pp == c.ep == 1
    m = predict(r) if pure else None
    lines = [
        f"{c.strategy}, tp {c.tp}, pp {c.pp}: {r.params:,} parameters, "
        f"{r.world_size} rank(s), {r.compute_dtype} on {r.device}",
        f"state per rank: {', '.join(f'{b.total:,}' for b in x.state)} bytes"
        + (f"; predicted {m.state_bytes:,}" if pure else ""),
    ]
    for kind in KINDS:
        if x.traffic[kind] or (pure and m.traffic[kind]):
            lines.append(
                f"{kind} per step: {x.traffic[kind]:,} bytes"
                + (f"; predicted {m.traffic[kind]:,}" if pure else "")
            )
    if pure:
        lines.append(
            f"gradient syncs per step: {sorted(set(x.syncs_per_step))}; "
            f"predicted [{m.syncs_per_step}]"
        )
        lines.append(
            f"bytes sent per rank, step: {sent_by(r, x.traffic):,.0f}"
        )
        if x.grads_held:
            lines.append(
                f"gradient bytes held between micro-batches, at most: "
                f"{max(x.grads_held):,}; predicted {m.grads_held:,}"
            )
    if g := x.grad_check:
        lines.append(
            f"gradients vs one process: max diff {g.max_abs_diff:.2e} "
            f"({'ok' if g.ok else 'FAILED'}, {g.rule})"
        )
    if a := x.activations:
        lines.append(
            f"activations per block, one micro-batch: {a['block']:,} bytes; "
            f"predicted {a['block_predicted']:,}"
        )
    lines.append(f"tokens/s: {r.tokens_per_s:,.0f}")
    return "\n".join(lines)


# --8<-- [start:table]
def table(*measured_runs):
    """Measured against predicted for each run: a Markdown table in MB
    (1 MB = 1e6 bytes) per rank, for one optimizer step."""
    runs = [(r, predict(r)) for r in measured_runs]
    names = [r.config.strategy.upper() for r in measured_runs]

    def mb(value):
        return "" if value is None else f"{value / MB:.3f}"

    def row(label, measured, predicted=lambda m, r: None, unit=mb):
        cells = []
        for r, m in runs:
            cells += [unit(measured(r)), unit(predicted(m, r))]
        return f"| {label} | " + " | ".join(cells) + " |"

    def sent(pick):
        return (
            lambda r: sent_by(
                r, pick(r.measured.traffic, r.measured.traffic_per_micro)
            ),
            lambda m, r: sent_by(r, pick(m.traffic, m.traffic_per_micro)),
        )

    step = sent(lambda total, per_micro: total)
    first = sent(lambda total, per_micro: per_micro[0])
    last = sent(lambda total, per_micro: per_micro[-1])
    return "\n".join(
        [
            "| per rank, MB | "
            + " | ".join(f"{n} measured | {n} predicted" for n in names)
            + " |",
            "| --- |" + " ---: |" * (2 * len(names)),
            row("parameters", lambda r: r.measured.state[0].params),
            row("gradients", lambda r: r.measured.state[0].grads),
            row("Adam m and v", lambda r: r.measured.state[0].optim),
            row(
                "state (`memory_per_gpu`)",
                lambda r: r.measured.state[0].total,
                lambda m, r: m.state_bytes,
            ),
            *(
                row(
                    f"{kind.replace('_', '-')} buffer",
                    lambda r, k=kind: r.measured.traffic[k],
                    lambda m, r, k=kind: m.traffic[k],
                )
                for kind in KINDS
            ),
            row("sent on the ring, step", *step),
            row("sent, first micro-batch", *first),
            row("sent, last micro-batch", *last),
            row(
                "gradient syncs (count)",
                lambda r: max(r.measured.syncs_per_step),
                lambda m, r: m.syncs_per_step,
                unit=lambda v: "" if v is None else str(v),
            ),
        ]
    )


# --8<-- [end:table]


def write(runs, json_path=None):
    """Rank 0 at the end: each run's summary, the side-by-side table of
    a --compare, and the JSON (--json)."""
    for run in runs:
        print(summary(run), flush=True)
    alike = {(r.config.model, r.config.steps) for r in runs}
    if (
        len(runs) > 1
        and len(alike) == 1
        and all(r.config.tp == r.config.pp == r.config.ep == 1 for r in runs)
    ):
        print(table(*runs), flush=True)
        for problem in problems(runs):
            print("MISMATCH:", problem, flush=True)
    if json_path:
        dump(runs, json_path)


def load(path):
    """The runs a `--json` file holds."""
    return [Run.from_dict(d) for d in json.loads(Path(path).read_text())]


def dump(runs, path):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps([asdict(r) for r in runs], indent=1) + "\n")


def main(argv):
    """`python -m snippets.measured.report RUNS.json`: the table of a
    finished `--compare` run (the GPU workflow's), and its problems."""
    if len(argv) != 1:
        print("usage: python -m snippets.measured.report RUNS.json")
        return 2
    ddp, fsdp = load(argv[0])
    tolerance = 5e-2 if ddp.compute_dtype == "bf16" else LOSS_TOLERANCE
    print(table(ddp, fsdp))
    print(
        f"{ddp.world_size} ranks, {ddp.device}, {ddp.compute_dtype}; "
        f"max |loss ddp - loss fsdp| = {max_loss_gap(ddp, fsdp):.3g} "
        f"(tolerance {tolerance:g})"
    )
    found = problems([ddp, fsdp], tolerance)
    for line in found:
        print("MISMATCH:", line)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
