"""Measured figures of a training run next to the course's models.

`compare` adds the models' predictions to what train.py measured;
`table` prints DDP and FSDP side by side; `measure` runs the script
under torchrun (2 CPU processes, gloo) and caches the result in
.cache/torchrun/, keyed on the script, the flags and torch's version.
"""

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path

from snippets.ddp.allreduce import allreduce_bytes
from snippets.zero.memory import memory_per_gpu

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
CACHE = ROOT / ".cache" / "torchrun"
GB = 1e9
LOSS_TOLERANCE = 1e-4  # DDP vs FSDP, same seed, fp32 on CPU
PAGE_ARGS = ("--steps", "3", "--micro-batch", "4", "--accum-steps", "2")


# --8<-- [start:compare]
def compare(m):
    """The measured run `m` with each model's prediction beside it."""
    p, world = m["params"], m["world_size"]
    b = m["state_bytes_per_rank"][0]
    k = m["accum_steps"]
    state = memory_per_gpu(
        m["strategy"],
        p,
        world,
        bytes_param=b["bytes_param"],
        bytes_grad=b["bytes_grad"],
        bytes_optim=b["bytes_optim"],
    )
    ring = allreduce_bytes(p, bytes_per_grad=b["bytes_grad"], world_size=world)
    gather = 2 if m["compute_dtype"] == "bf16" else b["bytes_param"]
    if m["strategy"] == "ddp":
        traffic = {
            "all_reduce": round(ring["grad_GB"] * GB),
            "all_gather": 0,
            "reduce_scatter": 0,
        }
    elif world > 1:  # ZeRO-3: gather in forward and backward, scatter
        traffic = {
            "all_reduce": 0,
            "all_gather": 2 * k * p * gather,
            "reduce_scatter": p * b["bytes_grad"],
        }
    else:  # FSDP2 skips its collectives on a single rank
        traffic = {"all_reduce": 0, "all_gather": 0, "reduce_scatter": 0}
    # Each rank sends 2(N-1)/N of an all-reduced buffer, (N-1)/N of an
    # all-gathered or reduce-scattered one (nccl-tests' bus bandwidth).
    share = (world - 1) / world

    def sent(t):
        return share * (
            2 * t["all_reduce"] + t["all_gather"] + t["reduce_scatter"]
        )

    per_micro = [dict.fromkeys(traffic, 0) for _ in range(k)]
    for kind, value in traffic.items():
        if kind == "all_gather":
            for t in per_micro:
                t[kind] = value // k
        else:
            per_micro[-1][kind] = value
    model = {
        "state_bytes": round(state * GB),
        "traffic_last_step": traffic,
        "sent_per_rank": sent(traffic),
        "sent_per_micro": [sent(t) for t in per_micro],
        "syncs_per_step": 1 if any(traffic.values()) else 0,
    }
    if m["strategy"] == "ddp":  # the all-reduce page's model
        model["sent_per_rank"] = ring["sent_per_rank_GB"] * GB
        model["sent_per_micro"][-1] = model["sent_per_rank"]
    measured = {
        "sent_per_rank": sent(m["traffic_last_step"]),
        "sent_per_micro": [sent(t) for t in m["traffic_per_micro_last_step"]],
    }
    return {**m, **measured, "model": model}


# --8<-- [end:compare]


def total(b):
    return b["params"] + b["grads"] + b["optim"]


def summary(r):
    """What train.py prints at the end, rank 0."""
    b = r["state_bytes_per_rank"]
    mod = r["model"]
    lines = [
        f"{r['strategy']}: {r['params']} parameters, "
        f"{r['world_size']} rank(s), {r['compute_dtype']} on {r['device']}",
        "bytes per rank (params + grads + Adam m, v): "
        + ", ".join(str(total(x)) for x in b)
        + f"; model {mod['state_bytes']}",
    ]
    for kind, value in r["traffic_last_step"].items():
        if value or mod["traffic_last_step"][kind]:
            lines.append(
                f"{kind} bytes per step: {value}; "
                f"model {mod['traffic_last_step'][kind]}"
            )
    syncs = sorted(set(r["syncs_per_step"].values()))
    lines.append(
        f"gradient syncs per step: {syncs}; model [{mod['syncs_per_step']}]"
    )
    if r["grad_check"]:
        c = r["grad_check"]
        lines.append(
            f"gradients vs one process: max diff {c['max_abs_diff']:.2e} "
            f"({'ok' if c['ok'] else 'FAILED'}, {c['rule']})"
        )
    lines.append(f"tokens/s: {r['tokens_per_s']:,.0f}")
    return "\n".join(lines)


# --8<-- [start:table]
def table(ddp, fsdp):
    """DDP and FSDP side by side, measured and modelled: bytes, counts."""

    def row(label, pick):
        cells = [pick(r, m) for r in (ddp, fsdp) for m in (False, True)]
        return (f"{label:<31}" + "".join(f"{c:>11}" for c in cells)).rstrip()

    def state(kind):
        return lambda r, m: "" if m else r["state_bytes_per_rank"][0][kind]

    def total_state(r, m):
        return (
            r["model"]["state_bytes"]
            if m
            else total(r["state_bytes_per_rank"][0])
        )

    def moved(kind):
        return lambda r, m: (r["model"] if m else r)["traffic_last_step"][kind]

    def sent(micro):
        def pick(r, m):
            src = r["model"] if m else r
            value = (
                src["sent_per_rank"]
                if micro is None
                else src["sent_per_micro"][micro]
            )
            return round(value)

        return pick

    def syncs(r, m):
        if m:
            return r["model"]["syncs_per_step"]
        return max(r["syncs_per_step"].values())

    head = ("ddp", "model", "fsdp", "model")
    return "\n".join(
        [
            f"{'per rank, one optimizer step':<31}"
            + "".join(f"{h:>11}" for h in head),
            row("parameter bytes", state("params")),
            row("gradient bytes", state("grads")),
            row("Adam m and v bytes", state("optim")),
            row("state bytes (memory_per_gpu)", total_state),
            row("all-reduce bytes (buffer)", moved("all_reduce")),
            row("all-gather bytes (output)", moved("all_gather")),
            row("reduce-scatter bytes (input)", moved("reduce_scatter")),
            row("bytes sent, ring: step", sent(None)),
            row("  first micro-batch", sent(0)),
            row("  last micro-batch", sent(-1)),
            row("gradient syncs", syncs),
        ]
    )


# --8<-- [end:table]


def key(args):
    h = hashlib.sha256()
    for path in sorted(HERE.glob("*.py")) + [
        ROOT / "snippets" / "zero" / "memory.py",
        ROOT / "snippets" / "ddp" / "allreduce.py",
    ]:
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    h.update(json.dumps(list(args)).encode())
    h.update(version("torch").encode())
    return h.hexdigest()[:16]


def run(strategy, args=PAGE_ARGS, nproc=2, timeout=240):
    """Run train.py under torchrun on CPU; its JSON result."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        command = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            f"--nproc_per_node={nproc}",
            "-m",
            "snippets.torchrun.train",
            "--strategy",
            strategy,
            *args,
            "--json",
            str(out),
        ]
        env = dict(os.environ, CUDA_VISIBLE_DEVICES="", OMP_NUM_THREADS="1")
        env["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(ROOT), env.get("PYTHONPATH")])
        )
        done = subprocess.run(
            command,
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if done.returncode:
            raise RuntimeError(
                f"torchrun {strategy} exited {done.returncode}:\n"
                f"{done.stderr[-3000:]}"
            )
        return json.loads(out.read_text())


def measure(strategy, args=PAGE_ARGS):
    """`run`, cached unless the environment variable CI is set."""
    args = (*args, "--check")
    path = CACHE / f"{strategy}-{key((strategy, *args))}.json"
    if path.is_file() and not os.environ.get("CI"):
        return json.loads(path.read_text())
    result = run(strategy, args)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=1) + "\n")
    return result


def problems(ddp, fsdp, loss_tolerance=LOSS_TOLERANCE):
    """Where the measurements and the models disagree; [] if nowhere."""
    found = []
    for r in (ddp, fsdp):
        name, mod = r["strategy"], r["model"]
        for i, b in enumerate(r["state_bytes_per_rank"]):
            if total(b) != mod["state_bytes"]:
                found.append(f"{name} rank {i}: state bytes {total(b)}")
        if r["traffic_last_step"] != mod["traffic_last_step"]:
            found.append(f"{name}: traffic {r['traffic_last_step']}")
        if set(r["syncs_per_step"].values()) != {mod["syncs_per_step"]}:
            found.append(f"{name}: syncs per step {r['syncs_per_step']}")
        if r["grad_check"] and not r["grad_check"]["ok"]:
            found.append(f"{name}: gradient check {r['grad_check']}")
    gap = max_loss_gap(ddp, fsdp)
    if gap > loss_tolerance:
        found.append(f"ddp vs fsdp losses differ by {gap:.3g}")
    return found


def max_loss_gap(ddp, fsdp):
    pairs = zip(ddp["losses"], fsdp["losses"], strict=True)
    return max(abs(a - b) for a, b in pairs)


def main(argv):
    """`report ddp.json fsdp.json`: the table of two finished runs
    (the GPU workflow's); no arguments: measure on this CPU."""
    if argv:
        ddp, fsdp = (json.loads(Path(a).read_text()) for a in argv)
        tolerance = 5e-2 if ddp["compute_dtype"] == "bf16" else None
    else:
        ddp, fsdp, tolerance = measure("ddp"), measure("fsdp"), None
    tolerance = tolerance or LOSS_TOLERANCE
    print(table(ddp, fsdp))
    print(
        f"{ddp['world_size']} ranks, {ddp['device']}, "
        f"{ddp['compute_dtype']}; max |loss ddp - loss fsdp| = "
        f"{max_loss_gap(ddp, fsdp):.3g} (tolerance {tolerance:g})"
    )
    found = problems(ddp, fsdp, tolerance)
    for line in found:
        print("MISMATCH:", line)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
