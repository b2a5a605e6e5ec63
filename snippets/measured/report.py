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

from snippets.units import GB, MB
from snippets.zero.memory import memory_per_gpu

LOSS_TOLERANCE = 1e-4  # DDP vs FSDP, same seed, fp32 on CPU
KINDS = ("all_reduce", "all_gather", "reduce_scatter")
# What probes.py measures only when asked (--check, --trace).
OPTIONAL = (
    "grads_held",
    "activations",
    "weights_sha256",
    "tp_block",
    "tp_step",
    "timeline",
    "peak_in_flight",
)


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
class Run:
    """One training run: its settings, and what rank 0 gathered from
    every rank (the sections of `measured` are probes.py's)."""

    config: dict  # the TrainConfig, every setting
    world_size: int
    device: str
    compute_dtype: str
    torch: str
    params: int
    resumed_from_step: int
    losses: list[float]
    tokens_per_s: float
    measured: dict

    @classmethod
    def from_dict(cls, d):
        return cls(**{f.name: d[f.name] for f in fields(cls)})

    def __getattr__(self, name):
        """A setting (r.strategy, r.tp), else a measured figure (r.traffic);
        None for a figure the run was not asked to measure."""
        d = self.__dict__
        if "config" in d and name in d["config"]:
            return d["config"][name]
        if "measured" in d and name in d["measured"]:
            return d["measured"][name]
        if name in OPTIONAL:
            return None
        raise AttributeError(name)

    @property
    def dp(self):
        return self.world_size // (self.tp * self.pp)

    @property
    def shard_size(self):
        """Ranks that split the state: 1 (DDP) to the dp size (FSDP)."""
        return {"ddp": 1, "fsdp": self.dp}.get(
            self.strategy, self.config["shard_size"]
        )

    @property
    def seq_len(self):
        return self.model["seq_len"]

    @property
    def state(self):
        return [StateBytes(**b) for b in self.measured["state"]]

    @property
    def grad_check(self):
        found = self.measured.get("grad_check")
        return GradCheck(**found) if found else None


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
    p, k, b = r.params, r.accum_steps, r.state[0]
    shards, replicas = r.shard_size, r.dp // r.shard_size
    state = memory_per_gpu(
        "zero3" if shards > 1 else "ddp",
        p,
        shards,
        bytes_param=b.bytes_param,
        bytes_grad=b.bytes_grad,
        bytes_optim=b.bytes_optim,
    )
    every = r.accum_sync == "every"  # reduce on every micro-batch
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
        m = predict(r)
        for i, b in enumerate(r.state):
            if b.total != m.state_bytes:
                found.append(f"{r.strategy} rank {i}: state bytes {b.total}")
        if r.traffic != m.traffic:
            found.append(f"{r.strategy}: traffic {r.traffic}")
        if set(r.syncs_per_step) != {m.syncs_per_step}:
            found.append(f"{r.strategy}: syncs per step {r.syncs_per_step}")
        if r.grads_held and set(r.grads_held) != {m.grads_held}:
            found.append(f"{r.strategy}: gradients held {r.grads_held}")
        a = r.activations
        if a and (a["block"], a["model"]) != (
            a["block_predicted"],
            a["model_predicted"],
        ):
            found.append(f"{r.strategy}: activation bytes {a}")
        if r.grad_check and not r.grad_check.ok:
            found.append(f"{r.strategy}: gradient check {r.grad_check}")
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
    pure = r.tp == r.pp == 1
    m = predict(r) if pure else None
    lines = [
        f"{r.strategy}, tp {r.tp}, pp {r.pp}: {r.params:,} parameters, "
        f"{r.world_size} rank(s), {r.compute_dtype} on {r.device}",
        f"state per rank: {', '.join(f'{b.total:,}' for b in r.state)} bytes"
        + (f"; predicted {m.state_bytes:,}" if pure else ""),
    ]
    for kind in KINDS:
        if r.traffic[kind] or (pure and m.traffic[kind]):
            lines.append(
                f"{kind} per step: {r.traffic[kind]:,} bytes"
                + (f"; predicted {m.traffic[kind]:,}" if pure else "")
            )
    if pure:
        lines.append(
            f"gradient syncs per step: {sorted(set(r.syncs_per_step))}; "
            f"predicted [{m.syncs_per_step}]"
        )
        lines.append(
            f"bytes sent per rank, step: {sent_by(r, r.traffic):,.0f}"
        )
        if r.grads_held:
            lines.append(
                f"gradient bytes held between micro-batches, at most: "
                f"{max(r.grads_held):,}; predicted {m.grads_held:,}"
            )
    if r.grad_check:
        c = r.grad_check
        lines.append(
            f"gradients vs one process: max diff {c.max_abs_diff:.2e} "
            f"({'ok' if c.ok else 'FAILED'}, {c.rule})"
        )
    if r.activations:
        a = r.activations
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
    names = [r.strategy.upper() for r in measured_runs]

    def mb(value):
        return "" if value is None else f"{value / MB:.3f}"

    def row(label, measured, predicted=lambda m, r: None, unit=mb):
        cells = []
        for r, m in runs:
            cells += [unit(measured(r)), unit(predicted(m, r))]
        return f"| {label} | " + " | ".join(cells) + " |"

    def sent(pick):
        return (
            lambda r: sent_by(r, pick(r.traffic, r.traffic_per_micro)),
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
            row("parameters", lambda r: r.state[0].params),
            row("gradients", lambda r: r.state[0].grads),
            row("Adam m and v", lambda r: r.state[0].optim),
            row(
                "state (`memory_per_gpu`)",
                lambda r: r.state[0].total,
                lambda m, r: m.state_bytes,
            ),
            *(
                row(
                    f"{kind.replace('_', '-')} buffer",
                    lambda r, k=kind: r.traffic[k],
                    lambda m, r, k=kind: m.traffic[k],
                )
                for kind in KINDS
            ),
            row("sent on the ring, step", *step),
            row("sent, first micro-batch", *first),
            row("sent, last micro-batch", *last),
            row(
                "gradient syncs (count)",
                lambda r: max(r.syncs_per_step),
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
    if len(runs) > 1 and all(r.tp == r.pp == 1 for r in runs):
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
