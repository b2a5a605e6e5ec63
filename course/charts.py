"""The site's charts, drawn from the labs with matplotlib.

Each function returns a `<figure>` of inline SVG whose numbers, in the
chart and in its caption, all come from lab calls. Pages print them
through `course.figures.figure(name)`, which caches them.
"""

import math
import textwrap
from itertools import product

from matplotlib.patches import Patch, Rectangle

from course.svg import (
    DARK_TEXT,
    INK,
    PALETTE,
    arrow,
    bare,
    figure_html,
    log2_axis,
    new_figure,
    style,
    text_box,
    text_on,
)
from snippets.activations.memory import GB, activation_bytes_per_gpu
from snippets.comms.cost import LINKS_GBps, comms_cost
from snippets.ddp.allreduce import allreduce_bytes
from snippets.pipeline.bubble import bubble_fraction
from snippets.pipeline.schedule import (
    KINDS,
    idle_fraction,
    peak_in_flight,
    pipeline_schedule,
)
from snippets.pipeline.tensor import tp_bytes_per_layer, tp_layer_seconds
from snippets.planner.layouts import plan_layouts
from snippets.planner.model import MODELS, cluster
from snippets.strategy.choose import RULES, RUNGS
from snippets.walls.walls import (
    BYTES_MIXED_ADAM,
    FLOPS_PER_PARAM_TOKEN,
    MIXED_ADAM,
    state_GB,
    training_days,
)
from snippets.zero.memory import ALIASES, SHARDED, memory_per_gpu
from snippets.zero.traffic import COLLECTIVES, comm_bytes

P7B = 7_000_000_000  # the 7B model used across the lesson
# The job of the comms lab demo: 64-way DDP on H100s at 40% of the
# 989 TFLOP/s dense bf16 peak, 8192 tokens per GPU per micro-batch.
COMMS_JOB = {
    "params": P7B,
    "world_size": 64,
    "tflops_per_gpu": 989 * 0.40,
    "tokens_per_gpu": 8192,
}
WORLD_SIZES = [2**k for k in range(11)]  # 1 ... 1024


def allreduce_factor():
    sizes = [n for n in range(2, 1025) if n < 16 or n % 8 == 0]
    sent = [allreduce_bytes(P7B, 2, n)["sent_per_rank_GB"] for n in sizes]
    grad = allreduce_bytes(P7B, 2, 2)["grad_GB"]
    at8 = allreduce_bytes(P7B, 2, 8)["sent_per_rank_GB"]
    at64 = allreduce_bytes(P7B, 2, 64)["sent_per_rank_GB"]
    with style():
        fig = new_figure()
        ax = fig.add_subplot()
        ax.axhline(2 * grad, color=INK, linestyle="--", linewidth=1)
        ax.text(
            2,
            2 * grad,
            f" limit: 2 x gradient = {2 * grad:g} GB",
            va="bottom",
            fontsize=9,
        )
        ax.plot(sizes, sent, color=PALETTE[0])
        for n, gb in ((8, at8), (64, at64)):
            ax.plot([n], [gb], "o", color=PALETTE[0])
            ax.annotate(
                f"N={n}: {gb:g} GB",
                (n, gb),
                xytext=(6, -14),
                textcoords="offset points",
                fontsize=9,
            )
        log2_axis(ax, WORLD_SIZES[1:])
        ax.set_ylim(0, 2 * grad * 1.15)
        ax.set_xlabel("world size N (GPUs)")
        ax.set_ylabel("GB sent per rank")
        ax.grid(True)
    return figure_html(
        fig,
        name="allreduce-factor",
        title="All-reduce traffic per rank against world size",
        alt=(
            f"Line chart of the gigabytes each rank sends in one ring "
            f"all-reduce of {grad:g} GB of bf16 gradients, for 2 to 1024 "
            f"GPUs. The line starts at {grad:g} GB and flattens just "
            f"under a dashed line at {2 * grad:g} GB."
        ),
        caption=(
            f"Each rank sends {at8:g} GB with 8 GPUs and {at64:g} GB with "
            f"64, and never reaches {2 * grad:g} GB, twice the gradient: "
            f"more GPUs add almost no traffic per rank (7B parameters, "
            f"bf16 gradients, GB = 10^9 bytes)."
        ),
    )


def memory():
    gpu = 80
    names = {
        "ddp": "DDP",
        "zero1": "ZeRO-1",
        "zero2": "ZeRO-2",
        "zero3": "ZeRO-3",
    }
    curves = {
        s: [memory_per_gpu(s, P7B, n) for n in WORLD_SIZES] for s in SHARDED
    }
    big = WORLD_SIZES[-1]
    with style():
        fig = new_figure()
        ax = fig.add_subplot()
        ax.axhline(gpu, color=INK, linestyle="--", linewidth=1)
        ax.text(
            WORLD_SIZES[-1],
            gpu * 0.93,
            f"one {gpu} GB GPU ",
            va="top",
            ha="right",
            fontsize=9,
        )
        for (s, gbs), color, marker in zip(
            curves.items(), PALETTE[:4], "os^D", strict=True
        ):
            ax.plot(
                WORLD_SIZES,
                gbs,
                color=color,
                marker=marker,
                markersize=4,
                label=names[s],
            )
        log2_axis(ax, WORLD_SIZES)
        ax.set_yscale("log")
        ticks = [0.1, 0.3, 1, 3, 10, 30, 100]
        ax.set_yticks(ticks, [f"{t:g}" for t in ticks])
        ax.set_xlabel("world size N (GPUs)")
        ax.set_ylabel("GB per GPU (log scale)")
        ax.grid(True)
        ax.legend(loc="lower left", ncols=2, fontsize=9)
    ddp = curves["ddp"][0]
    return figure_html(
        fig,
        name="memory",
        title="Model-state memory per GPU under DDP and ZeRO",
        alt=(
            f"Log-scale line chart of gigabytes per GPU for a 7B model "
            f"against world size 1 to {big}. DDP is flat at {ddp:.0f} GB, "
            f"above a dashed {gpu} GB line. ZeRO-1 and ZeRO-2 fall and "
            f"level off; ZeRO-3 falls steadily to "
            f"{curves['zero3'][-1]:.2f} GB."
        ),
        caption=(
            f"DDP needs {ddp:.0f} GB on every GPU however many you add, "
            f"more than an {gpu} GB card. ZeRO-1 and ZeRO-2 level off near "
            f"{curves['zero1'][-1]:.0f} GB and {curves['zero2'][-1]:.0f} "
            f"GB, the parts they leave whole; only ZeRO-3 keeps falling as "
            f"1/N (7B parameters, 16 bytes each, GB = 10^9 bytes)."
        ),
    )


def bubble():
    ms = [2**k for k in range(7)]  # 1 ... 64 micro-batches
    fine = sorted({round(2 ** (k / 8)) for k in range(49)})
    with style():
        fig = new_figure()
        ax = fig.add_subplot()
        for p, color in zip((4, 8), PALETTE, strict=False):
            plain = [bubble_fraction(p, m) for m in fine]
            # the interleaved schedule runs m in groups of p
            grouped = [m for m in fine if m % p == 0]
            inter = [bubble_fraction(p, m, "interleaved", 2) for m in grouped]
            ax.plot(fine, plain, color=color, label=f"p={p}: GPipe and 1F1B")
            ax.plot(
                grouped,
                inter,
                color=color,
                linestyle="--",
                label=f"p={p}: interleaved, v=2",
            )
        log2_axis(ax, ms)
        ax.set_ylim(0, 1)
        ax.yaxis.set_major_formatter(lambda y, _: f"{y:.0%}")
        ax.set_xlabel("micro-batches per step m")
        ax.set_ylabel("idle share of the step")
        ax.grid(True)
        ax.legend(fontsize=9)
    p, m = 4, 16
    plain = bubble_fraction(p, m)
    inter = bubble_fraction(p, m, "interleaved", 2)
    return figure_html(
        fig,
        name="bubble",
        title="Pipeline bubble against the number of micro-batches",
        alt=(
            "Line chart of the idle share of a pipeline step against "
            "micro-batches from 1 to 64, for 4 and 8 stages. Every curve "
            "falls as micro-batches are added; the 8-stage curves sit "
            "above the 4-stage ones and the dashed interleaved curves "
            "sit below the solid ones."
        ),
        caption=(
            f"More micro-batches shrink the bubble: with {p} stages and "
            f"m = {m} (4 per stage) the stages idle {plain:.1%} of the step "
            f"under GPipe or 1F1B, and {inter:.1%} with two interleaved "
            f"chunks per device. Doubling the stages needs twice the "
            f"micro-batches for the same share."
        ),
    )


def schedule():
    p, m = 4, 8
    runs = {k: pipeline_schedule(p, m, k) for k in KINDS}
    labels = {"gpipe": "GPipe", "1f1b": "1F1B"}
    colors = {"F": PALETTE[0], "B": PALETTE[1]}
    step = max(s.end for s in runs["gpipe"])
    with style():
        fig = new_figure(6.4, 3.6)
        axes = fig.subplots(2, 1, sharex=True)
        for ax, (kind, slots) in zip(axes, runs.items(), strict=True):
            for stage, op in product(range(p), colors):
                ax.broken_barh(
                    [
                        (s.start, s.end - s.start)
                        for s in slots
                        if s.stage == stage and s.kind == op
                    ],
                    (stage - 0.4, 0.8),
                    facecolors=colors[op],
                    edgecolor="none",
                )
            for s in slots:
                ax.text(
                    (s.start + s.end) / 2,
                    s.stage,
                    str(s.micro + 1),
                    ha="center",
                    va="center",
                    fontsize=8.5,
                    color="#111111",  # 4.9:1 or more on both bar colours
                )
            ax.set_yticks(range(p), [f"stage {i + 1}" for i in range(p)])
            ax.set_ylim(p - 0.5, -0.5)
            ax.set_title(labels[kind], loc="left", fontsize=10)
            ax.tick_params(left=False)
            ax.spines["left"].set_visible(False)
        axes[-1].set_xlim(0, step)
        axes[-1].set_xlabel("time (a forward takes 1 unit, a backward 2)")
        axes[0].legend(
            handles=[
                Patch(color=colors["F"], label="forward"),
                Patch(color=colors["B"], label="backward"),
            ],
            title="number = micro-batch",
            title_fontsize=9,
            fontsize=9,
            loc="upper right",
            bbox_to_anchor=(1, 1.45),
            ncols=2,
        )
    idle = idle_fraction(runs["1f1b"])
    held = {
        k: max(peak_in_flight(slots, st) for st in range(p))
        for k, slots in runs.items()
    }
    return figure_html(
        fig,
        name="schedule",
        title="GPipe and 1F1B schedules of a 4-stage pipeline",
        alt=(
            f"Two timelines of a {p}-stage pipeline running {m} "
            f"micro-batches. In GPipe every stage runs all forward passes, "
            f"then all backward passes. In 1F1B each stage alternates one "
            f"forward and one backward after a short warm-up. Both end at "
            f"time {step}, with the same empty triangles at the start and "
            f"the end."
        ),
        caption=(
            f"Both schedules finish the step in {step} units and leave the "
            f"stages idle {idle:.1%} of it, the bubble_fraction of "
            f"{p} stages and {m} micro-batches. The difference is memory: "
            f"GPipe's first stage holds activations of {held['gpipe']} "
            f"micro-batches at once, 1F1B's at most {held['1f1b']}."
        ),
    )


def _short(link):
    """'Ethernet, 10 Gb/s' -> '10 Gb/s Ethernet'; 'NVLink 4 (H100,...'
    -> 'NVLink 4'; 'InfiniBand NDR, 400 Gb/s' -> 'InfiniBand NDR'."""
    head, _, tail = link.partition(", ")
    if head == "Ethernet":
        return f"{tail} Ethernet"
    return head.split(" (")[0]


def comms():
    links = LINKS_GBps
    top, bottom = max(links.values()), min(links.values())
    sweep = [top * (bottom / top) ** (k / 60) for k in range(61)]
    runs = [comms_cost(interconnect_GBps=bw, **COMMS_JOB) for bw in sweep]
    compute = runs[0]["compute_s"]
    cross = runs[0]["crossover_GBps"]
    accum = 4
    cross4 = comms_cost(interconnect_GBps=top, accum_steps=accum, **COMMS_JOB)[
        "crossover_GBps"
    ]
    with style():
        fig = new_figure(6.4, 3.8)
        ax = fig.add_subplot()
        ax.plot(
            sweep,
            [r["comms_s"] for r in runs],
            color=PALETTE[1],
            label="all-reduce of the gradients",
        )
        ax.plot(
            sweep,
            [compute] * len(sweep),
            color=PALETTE[0],
            label="compute, 1 micro-batch per step",
        )
        ax.plot(
            sweep,
            [compute * accum] * len(sweep),
            color=PALETTE[0],
            linestyle="--",
            label=f"compute, {accum} micro-batches per step",
        )
        for x, text in (
            (cross, f"{cross:.1f} GB/s"),
            (cross4, f"{cross4:.1f} GB/s"),
        ):
            ax.axvline(x, color=INK, linestyle=":", linewidth=1)
            ax.text(x, 0.012, f" {text}", fontsize=9)
        for i, (link, bw) in enumerate(links.items()):
            t = comms_cost(interconnect_GBps=bw, **COMMS_JOB)["comms_s"]
            ax.plot([bw], [t], "o", color=PALETTE[1], markersize=4)
            # The line rises to the right: above-left and below-right of
            # a point are clear of it. The two NVLinks sit close.
            below = i == 0
            ax.annotate(
                _short(link),
                (bw, t),
                fontsize=8.5,
                ha="left" if below else "right",
                xytext=(5, -11) if below else (-5, 3),
                textcoords="offset points",
            )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(top * 1.3, bottom / 1.3)  # falling bandwidth: right
        ticks = [450, 100, 30, 10, 3, 1]
        ax.set_xticks(ticks, [str(t) for t in ticks])
        ax.minorticks_off()
        yt = [0.01, 0.1, 1, 10]
        ax.set_yticks(yt, [f"{t:g}" for t in yt])
        ax.set_ylim(0.01, 40)
        ax.set_xlabel("one-way link bandwidth per GPU, GB/s (falling ->)")
        ax.set_ylabel("seconds per optimizer step")
        ax.grid(True)
        ax.legend(loc="upper left", fontsize=9)
    slow = runs[-1]["comms_s"]
    return figure_html(
        fig,
        name="comms",
        title="Compute time against all-reduce time as bandwidth falls",
        alt=(
            f"Log-log chart of seconds per step against link bandwidth "
            f"falling from {top:g} to {bottom:g} GB/s. Compute is a flat "
            f"line at {compute:.2f} s; the all-reduce line rises from "
            f"{runs[0]['comms_s']:.3f} s to {slow:.1f} s and crosses it at "
            f"{cross:.1f} GB/s. Points mark NVLink, InfiniBand and "
            f"Ethernet."
        ),
        caption=(
            f"A 64-way DDP step of a 7B model (H100 at 40% of 989 TFLOP/s, "
            f"8192 tokens per GPU) computes for {compute:.2f} s on any "
            f"link; its all-reduce takes longer below {cross:.1f} GB/s, "
            f"between NDR and HDR InfiniBand, and {slow:.1f} s on 10 Gb/s "
            f"Ethernet. Accumulating {accum} micro-batches per step moves "
            f"the crossover to {cross4:.1f} GB/s."
        ),
    )


# --- diagrams ---------------------------------------------------------


def ring():
    n = 4
    traffic = allreduce_bytes(P7B, 2, n)
    chunk = traffic["grad_GB"] / n
    steps = [("reduce-scatter", s) for s in range(n - 1)]
    steps += [("all-gather", s) for s in range(n - 1)]
    # Each step a rank sends one chunk, 1/N of the buffer, to the next
    # rank: 2 (N - 1) chunks are the lab's factor 2 (N - 1) / N.
    sent = len(steps) * chunk
    assert math.isclose(sent, traffic["sent_per_rank_GB"])
    colors = {"reduce-scatter": PALETTE[0], "all-gather": PALETTE[1]}
    with style():
        fig = new_figure(6.4, 3.0)
        ax = fig.add_subplot()
        for col, (phase, s) in enumerate(steps):
            for rank in range(n):
                if phase == "reduce-scatter":
                    c = (rank - s) % n
                else:
                    c = (rank + 1 - s) % n
                text_box(
                    ax,
                    col + 0.05,
                    rank + 0.08,
                    0.9,
                    0.84,
                    colors[phase],
                    f"c{c} \u2192 r{(rank + 1) % n}",
                )
            ax.text(col + 0.5, -0.15, f"step {col + 1}", ha="center")
        for rank in range(n):
            ax.text(-0.1, rank + 0.5, f"rank {rank}", ha="right", va="center")
        for phase, x0 in (("reduce-scatter", 0), ("all-gather", n - 1)):
            ax.text(
                x0 + (n - 1) / 2,
                n + 0.35,
                f"{phase}: {n - 1} steps",
                ha="center",
                va="center",
                color=INK,
            )
        ax.set_xlim(-1.1, len(steps))
        ax.set_ylim(n + 0.6, -0.5)
        bare(ax)
    return figure_html(
        fig,
        name="ring",
        title="The steps of a ring all-reduce on four ranks",
        alt=(
            f"Grid of {len(steps)} steps for {n} ranks. In each of the "
            f"first {n - 1} steps, the reduce-scatter, every rank sends "
            f"one chunk of the gradient to the next rank, which adds it "
            f"to its own; in the last {n - 1}, the all-gather, every rank "
            f"passes on a finished chunk. Each cell names the chunk sent "
            f"and the rank it goes to."
        ),
        caption=(
            f"A ring all-reduce of {n} ranks cuts the gradient into {n} "
            f"chunks: c2 \u2192 r1 means the rank sends chunk 2 to rank 1. "
            f"After {n - 1} reduce-scatter steps each rank owns one summed "
            f"chunk; {n - 1} all-gather steps hand those round. Each rank "
            f"sends {len(steps)} chunks of 1/{n} of the gradient: for 7B "
            f"bf16 gradients ({traffic['grad_GB']:g} GB) that is "
            f"{traffic['sent_per_rank_GB']:g} GB, the factor "
            f"{traffic['factor']:g} of allreduce_bytes."
        ),
    )


def _state_parts(strategy, params, world_size):
    """GB per GPU of (parameters, gradients, optimizer state), each
    measured with memory_per_gpu by switching the others off."""
    full = memory_per_gpu(strategy, params, world_size)
    no_optim = memory_per_gpu(strategy, params, world_size, bytes_optim=0)
    grads4 = memory_per_gpu(
        strategy, params, world_size, bytes_grad=4, bytes_optim=0
    )
    grad = grads4 - no_optim  # 2 bytes of gradient more
    parts = (no_optim - grad, grad, full - no_optim)
    assert math.isclose(sum(parts), full)
    return parts


def zero_stages():
    n, gpu = 8, 80
    names = {"ddp": "DDP", "zero1": "ZeRO-1", "zero2": "ZeRO-2"}
    names["zero3"] = "ZeRO-3"
    parts = {s: _state_parts(s, P7B, n) for s in SHARDED}
    kinds = ("parameters (bf16)", "gradients (bf16)", "optimizer (fp32)")
    with style():
        fig = new_figure(6.4, 3.2)
        ax = fig.add_subplot()
        rows = list(reversed(SHARDED))
        for y, s in enumerate(rows):
            left = 0
            for kind, gb, color in zip(kinds, parts[s], PALETTE, strict=False):
                ax.barh(y, gb, left=left, color=color, height=0.62, label=kind)
                left += gb
            ax.text(left + 1.5, y, f"{left:.2f} GB", va="center")
        ax.axvline(gpu, color=INK, linestyle="--", linewidth=1)
        ax.text(gpu, len(rows) - 0.45, f" one {gpu} GB GPU", va="center")
        ax.set_yticks(range(len(rows)), [names[s] for s in rows])
        ax.set_xlim(0, max(sum(p) for p in parts.values()) * 1.2)
        ax.set_xlabel(f"GB per GPU, 7B model on {n} GPUs")
        ax.tick_params(left=False)
        ax.spines["left"].set_visible(False)
        handles, labels = ax.get_legend_handles_labels()
        ax.legend(
            handles[:3],
            labels[:3],
            loc="upper center",
            bbox_to_anchor=(0.5, -0.28),
            ncols=3,
        )
    ddp, z1, z2, z3 = (sum(parts[s]) for s in SHARDED)
    return figure_html(
        fig,
        name="zero-stages",
        title="What each ZeRO stage keeps per GPU",
        alt=(
            f"Stacked horizontal bars of gigabytes per GPU for a 7B model "
            f"on {n} GPUs, split into parameters, gradients and optimizer "
            f"state. DDP {ddp:.2f} GB, ZeRO-1 {z1:.2f}, ZeRO-2 {z2:.2f}, "
            f"ZeRO-3 {z3:.2f}; a dashed line marks an {gpu} GB GPU."
        ),
        caption=(
            f"Each stage shards one more part across the {n} GPUs: ZeRO-1 "
            f"the optimizer state (the widest bar, "
            f"{parts['ddp'][2]:.0f} GB under DDP), ZeRO-2 the gradients "
            f"too, ZeRO-3 the parameters as well. Per GPU: {ddp:.2f}, "
            f"{z1:.2f}, {z2:.2f} and {z3:.2f} GB (memory_per_gpu, 16 bytes "
            f"per parameter)."
        ),
    )


def _matrix(ax, x, y, size, t, part, split, color, name):
    """A weight matrix as a square cut into t slices (split "col" or
    "row"), the slice `part` filled: the one this GPU holds."""
    for i in range(t):
        if split == "col":
            box = (x + i * size / t, y, size / t, size)
        else:
            box = (x, y + i * size / t, size, size / t)
        ax.add_patch(
            Rectangle(
                box[:2],
                *box[2:],
                facecolor=color if i == part else "none",
                edgecolor=INK,
                linewidth=0.8,
            )
        )
    ax.text(x + size / 2, y + size + 0.12, name, ha="center", va="top")


def tensor_split():
    t, h, s = 2, 4096, 4096
    t8 = 8
    mb = tp_bytes_per_layer(s, 1, h, t8) / 1e6
    compute, comms = tp_layer_seconds(s, 1, h, t8, 989 * 0.40, 450)
    with style():
        fig = new_figure(6.4, 3.3)
        ax = fig.add_subplot()
        size = 1.0
        for gpu in range(t):
            y = gpu * 1.9
            mid = y + size / 2
            ax.text(-0.15, mid, f"GPU {gpu + 1}", ha="right", va="center")
            text_box(ax, 0, y + 0.2, 0.6, 0.6, PALETTE[4], "X")
            arrow(ax, 0.65, 0.95, mid)
            _matrix(ax, 1.0, y, size, t, gpu, "col", PALETTE[0], "A: columns")
            arrow(ax, 2.05, 2.35, mid)
            text_box(
                ax, 2.38, y + 0.2, 1.1, 0.6, PALETTE[0], f"GeLU(XA{gpu + 1})"
            )
            arrow(ax, 3.55, 3.9, mid)
            _matrix(ax, 3.95, y, size, t, gpu, "row", PALETTE[1], "B: rows")
            arrow(ax, 5.0, 5.3, mid)
            text_box(ax, 5.35, y + 0.2, 0.6, 0.6, PALETTE[1], f"Z{gpu + 1}")
            arrow(ax, 6.0, 6.3, mid)
        text_box(
            ax, 6.35, 0.2, 1.1, 1.9 + 0.6, PALETTE[2], "all-reduce\nZ1 + Z2"
        )
        ax.text(
            3.6,
            3.5,
            "no communication between the two matmuls",
            ha="center",
            va="center",
        )
        ax.set_xlim(-0.95, 7.55)
        ax.set_ylim(3.7, -0.1)
        bare(ax)
    return figure_html(
        fig,
        name="tensor-split",
        title="Tensor parallelism splits the MLP's two matrices",
        alt=(
            f"Diagram of one MLP block on {t} GPUs. Each GPU holds the "
            f"whole input X, one column slice of the first matrix A and "
            f"the matching row slice of the second matrix B. It computes "
            f"GeLU of X times its slice of A, multiplies by its slice of "
            f"B, and the partial results Z1 and Z2 meet in one all-reduce."
        ),
        caption=(
            f"Split A by columns and B by rows, and each GPU runs the "
            f"whole MLP on its slice with no traffic in between; one "
            f"all-reduce sums the partial outputs. With t = {t8} and "
            f"h = {h}, s = {s}, the forward and backward all-reduces of a "
            f"layer send {mb:.1f} MB per GPU, {comms * 1e3:.2f} ms on "
            f"NVLink against {compute * 1e3:.2f} ms of compute "
            f"(tp_bytes_per_layer, tp_layer_seconds)."
        ),
    )


def accumulation():
    link = LINKS_GBps["InfiniBand HDR, 200 Gb/s"]
    share = FLOPS_PER_PARAM_TOKEN["forward"] / sum(
        FLOPS_PER_PARAM_TOKEN.values()
    )
    runs = {
        k: comms_cost(interconnect_GBps=link, accum_steps=k, **COMMS_JOB)
        for k in (1, 4)
    }
    with style():
        fig = new_figure(6.4, 2.6)
        ax = fig.add_subplot()
        for row, (k, r) in enumerate(runs.items()):
            micro = r["compute_s"] / k
            x = 0
            for _ in range(k):
                fwd, bwd = micro * share, micro * (1 - share)
                text_box(ax, x, row + 0.15, fwd, 0.7, PALETTE[0], "F")
                text_box(ax, x + fwd, row + 0.15, bwd, 0.7, PALETTE[1], "B")
                x += micro
            text_box(
                ax,
                x,
                row + 0.15,
                r["comms_s"],
                0.7,
                PALETTE[2],
                "all-reduce",
            )
            x += r["comms_s"]
            ax.plot([x, x], [row + 0.05, row + 0.95], color=INK, linewidth=2)
            ax.text(x, row + 0.5, " step", va="center")
        ax.set_yticks([0.5, 1.5], [f"A = {k}" for k in runs], fontsize=10)
        ax.set_ylim(2, 0)
        ax.set_xlabel("seconds of one optimizer step on one rank")
        ax.tick_params(left=False)
        ax.spines["left"].set_visible(False)
        ax.set_xlim(
            0, max(r["compute_s"] + r["comms_s"] for r in runs.values()) * 1.12
        )
    waits = {
        k: r["comms_s"] / (r["compute_s"] + r["comms_s"])
        for k, r in runs.items()
    }
    one = runs[1]
    return figure_html(
        fig,
        name="accumulation",
        title="One optimizer step with and without gradient accumulation",
        alt=(
            f"Two timelines of one rank. With A = 1 one forward and one "
            f"backward pass take {one['compute_s']:.2f} s and the "
            f"all-reduce that follows {one['comms_s']:.2f} s. With A = 4 "
            f"four forward and backward pairs run back to back, then the "
            f"same all-reduce, then the optimizer step."
        ),
        caption=(
            f"Accumulation runs A micro-batches, forward (F) and backward "
            f"(B), before one all-reduce and one optimizer step. For the "
            f"64-GPU 7B job of the comms page on {link:g} GB/s "
            f"InfiniBand, the all-reduce takes {one['comms_s']:.2f} s "
            f"either way: {waits[1]:.0%} of the step with A = 1, "
            f"{waits[4]:.0%} with A = 4 (comms_cost)."
        ),
    )


def walls():
    gpu, peak, mfu, tokens = 80, 989, 0.40, 2_000_000_000_000
    parts = {what: state_GB(P7B, size) for what, size in MIXED_ADAM.items()}
    total = state_GB(P7B)
    gpus = (1, 64, 1024)
    days = [training_days(P7B, tokens, g, peak, mfu) for g in gpus]
    short = ("weights", "grads", "master", "moment 1", "moment 2")
    with style():
        fig = new_figure(6.4, 3.6)
        top, bottom = fig.subplots(2, 1, height_ratios=(1, 1.3))
        left = 0
        for name, gb, color in zip(
            short, parts.values(), PALETTE, strict=False
        ):
            top.barh(0, gb, left=left, color=color, height=0.6)
            top.text(
                left + gb / 2,
                0,
                name,
                ha="center",
                va="center",
                color=text_on(color),
                rotation=0 if gb > 20 else 90,
                fontsize=9,
            )
            left += gb
        top.axvline(gpu, color=INK, linestyle="--", linewidth=1)
        top.text(gpu, 0.45, f" one H100: {gpu} GB", va="bottom")
        top.text(total, 0, f" {total:.0f} GB", va="center")
        top.set_xlim(0, total * 1.25)
        top.set_yticks([])
        top.set_title("memory: 7B training state", loc="left")
        top.set_xlabel("GB")
        bottom.barh(range(len(gpus)), days, color=PALETTE[0], height=0.6)
        for y, d in enumerate(days):
            bottom.text(d * 1.1, y, f"{d:,.1f} days", va="center")
        bottom.set_xscale("log")
        bottom.set_xlim(1, max(days) * 20)
        ticks = [1, 10, 100, 1000, 10000]
        bottom.set_xticks(ticks, [f"{v:,}" for v in ticks])
        bottom.minorticks_off()
        bottom.set_yticks(
            range(len(gpus)), [f"{g} GPU{'s' * (g > 1)}" for g in gpus]
        )
        bottom.set_ylim(len(gpus) - 0.5, -0.5)
        bottom.set_title("time: 2T tokens at 40% of 989 TFLOP/s", loc="left")
        bottom.set_xlabel("days (log scale)")
        for ax in (top, bottom):
            ax.tick_params(left=False)
            ax.spines["left"].set_visible(False)
    return figure_html(
        fig,
        name="walls",
        title="The memory wall and the time wall for a 7B model",
        alt=(
            f"Two bar charts. Top: the {total:.0f} GB training state of a "
            f"7B model in five parts, weights, gradients, fp32 master "
            f"copy and two Adam moments, past a dashed line at one "
            f"{gpu} GB GPU. Bottom: days to train on 2 trillion tokens, "
            f"{days[0]:,.0f} on one GPU, {days[1]:,.1f} on 64 and "
            f"{days[2]:,.1f} on 1024, on a log scale."
        ),
        caption=(
            f"Two walls. The training state of a 7B model, "
            f"{BYTES_MIXED_ADAM} bytes per parameter, takes {total:.0f} GB "
            f"and no {gpu} GB GPU holds it; and one GPU would train it on "
            f"2T tokens for {days[0]:,.0f} days, {days[2]:,.1f} on "
            f"{gpus[2]} (state_GB, training_days)."
        ),
    )


def activations():
    seven_b = {"seq_len": 4096, "micro_batch": 1, "hidden": 4096}
    cases = (
        ("all stored", {}),
        ("FlashAttention", {"flash_attention": True}),
        ("selective recompute", {"recompute": "selective"}),
        ("full recompute", {"recompute": "full"}),
        (
            "TP 8 + SP, Flash",
            {
                "tp": 8,
                "sequence_parallel": True,
                "flash_attention": True,
            },
        ),
    )
    gbs = [
        activation_bytes_per_gpu(32, heads=32, **seven_b, **extra) / GB
        for _, extra in cases
    ]
    state = state_GB(P7B)
    with style():
        fig = new_figure(6.4, 3.0)
        ax = fig.add_subplot()
        ys = range(len(cases))
        ax.barh(ys, gbs, color=PALETTE[0], height=0.6)
        for y, gb in zip(ys, gbs, strict=True):
            inside = gb > max(gbs) / 2  # clear of the dashed line
            ax.text(
                gb - 1.5 if inside else gb + 1.5,
                y,
                f"{gb:.2f} GB",
                va="center",
                ha="right" if inside else "left",
                color=DARK_TEXT if inside else INK,
            )
        ax.axvline(state, color=INK, linestyle="--", linewidth=1)
        ax.text(
            state,
            len(cases) - 0.35,
            f"training state {state:.0f} GB ",
            ha="right",
            va="center",
        )
        ax.set_yticks(ys, [name for name, _ in cases])
        ax.set_ylim(len(cases) - 0.1, -0.5)
        ax.set_xlim(0, max(max(gbs), state) * 1.2)
        ax.set_xlabel("GB of activations, 7B, one 4096-token sequence")
        ax.tick_params(left=False)
        ax.spines["left"].set_visible(False)
    return figure_html(
        fig,
        name="activations",
        title="Activation memory of a 7B model under each remedy",
        alt=(
            f"Horizontal bars of activation gigabytes for one 4096-token "
            f"sequence through a 7B model: all stored {gbs[0]:.2f}, "
            f"FlashAttention {gbs[1]:.2f}, selective recomputation "
            f"{gbs[2]:.2f}, full recomputation {gbs[3]:.2f}, tensor "
            f"parallel 8 with sequence parallelism {gbs[4]:.2f}. A dashed "
            f"line marks the {state:.0f} GB training state."
        ),
        caption=(
            f"Stored in full, one sequence's activations take "
            f"{gbs[0]:.2f} GB, close to the {state:.0f} GB of weights, "
            f"gradients and Adam state; dropping the attention scores "
            f"leaves {gbs[1]:.2f} GB and full recomputation "
            f"{gbs[3]:.2f} GB (activation_bytes_per_gpu)."
        ),
    )


# The lesson in reading order: (page, title, what it adds). The titles
# are mkdocs.yml's nav, shortened (tests/test_figures.py checks the
# order against the nav).
COURSE_MAP = (
    ("walls.md", "1. One GPU is not enough", "the memory and time walls"),
    ("parallelism.md", "2. Three ways to split", "data, tensor, pipeline"),
    ("ddp.md", "3. Data parallel, DDP", "the ring all-reduce, in bytes"),
    ("zero.md", "4. ZeRO and FSDP", "shard the training state"),
    ("activations.md", "4b. Activations", "recompute to save memory"),
    ("pipeline.md", "5. Tensor, pipeline", "split layers; the bubble"),
    ("accumulation.md", "6. Accumulation", "big batch, small memory"),
    ("comms.md", "7. Communication", "when the link sets the pace"),
    ("strategy.md", "8. Choosing a strategy", "climb only when forced"),
    ("planner.md", "8b. Plan a job", "every layout, ranked"),
    ("torchrun.md", "DDP and FSDP, torchrun", "the real thing, measured"),
)


def course_map():
    n = len(COURSE_MAP)
    with style():
        fig = new_figure(4.8, 0.4 * n + 0.1)
        ax = fig.add_subplot()
        for i, (_, title, adds) in enumerate(COURSE_MAP):
            color = PALETTE[1] if i == n - 1 else PALETTE[0]
            text_box(ax, 0, i + 0.1, 2.3, 0.8, color)
            ax.text(
                0.08, i + 0.5, title, va="center", color=DARK_TEXT, fontsize=11
            )
            ax.text(2.38, i + 0.5, adds, va="center", fontsize=11)
        ax.set_xlim(0, 4.8)
        ax.set_ylim(n, 0)
        bare(ax)
    return figure_html(
        fig,
        name="course-map",
        title="Map of the course",
        alt=(
            f"A column of {n} boxes, the pages in reading order, each "
            f"with what it adds: "
            + "; ".join(f"{t}: {a}" for _, t, a in COURSE_MAP)
            + "."
        ),
        caption=(
            f"The {n} pages in reading order, and what each one adds. "
            f"Each page builds on the one above it; the last runs DDP and "
            f"FSDP for real under torchrun."
        ),
    )


# name on the page -> function
CHARTS = {
    "allreduce-factor": allreduce_factor,
    "memory": memory,
    "bubble": bubble,
    "schedule": schedule,
    "comms": comms,
    "ring": ring,
    "zero-stages": zero_stages,
    "tensor-split": tensor_split,
    "accumulation": accumulation,
    "walls": walls,
    "activations": activations,
    "course-map": course_map,
}


def _question(name):
    return name.replace("_", " ").replace("gpu", "GPU") + "?"


def strategy_chain():
    """choose_strategy's rules (its RULES, in the order it tries them)
    as [(question, rung), ...] and the rung when every answer is no."""
    chain = [(_question(q), RUNGS[r]) for q, r in RULES if q is not None]
    last = [RUNGS[r] for q, r in RULES if q is None]
    if len(last) != 1:
        raise ValueError("RULES must end in one (None, rung) rule")
    return chain, last[0]


def strategy():
    chain, last = strategy_chain()
    rows = len(chain) + 1
    with style():
        fig = new_figure(6.4, 0.95 * rows + 0.2)
        ax = fig.add_subplot()
        for y, (question, rung) in enumerate(chain):
            text_box(ax, 0, y + 0.15, 2.4, 0.6, PALETTE[4], question)
            arrow(ax, 2.45, 3.05, y + 0.45)
            ax.text(
                2.75,
                y + 0.38,
                "yes",
                ha="center",
                va="bottom",
            )
            text_box(
                ax,
                3.1,
                y + 0.05,
                3.3,
                0.8,
                PALETTE[0],
                textwrap.fill(rung, 38, break_on_hyphens=False),
            )
            ax.annotate(
                "",
                (1.2, y + 1.15),
                (1.2, y + 0.75),
                arrowprops={"arrowstyle": "->", "color": INK},
            )
            ax.text(1.3, y + 0.95, "no", va="center")
        text_box(
            ax,
            0,
            len(chain) + 0.15,
            6.4,
            0.7,
            PALETTE[0],
            textwrap.fill(last, 70),
        )
        ax.set_xlim(0, 6.4)
        ax.set_ylim(rows, 0)
        bare(ax)
    return figure_html(
        fig,
        name="strategy",
        title="The strategy ladder as yes-or-no questions",
        alt=(
            "Flowchart of choose_strategy. "
            + " ".join(f"{q} If yes: {r}. Otherwise:" for q, r in chain)
            + f" {last}."
        ),
        caption=(
            f"Ask the {len(chain)} questions top to bottom and stop at the "
            f"first yes. The chart is drawn from RULES, the list "
            f"choose_strategy itself walks, so it changes when the "
            f"function's rules do."
        ),
    )


CHARTS["strategy"] = strategy


def torchrun():
    n = 2  # the CPU run on the page: two ranks
    pair = ("ddp", "fsdp")
    held = {s: memory_per_gpu(s, P7B, n) for s in pair}
    sent = {s: comm_bytes(s, P7B, n) for s in pair}
    names = {"ddp": "DDP", "fsdp": "FSDP"}
    steps = {s: COLLECTIVES[ALIASES.get(s, s)] for s in pair}
    with style():
        fig = new_figure(6.4, 2.9)
        left, right = fig.subplots(1, 2, sharey=True)
        ys = range(len(pair))
        for ax, values, color, title in (
            (left, held, PALETTE[0], "held per rank"),
            (right, sent, PALETTE[1], "sent per rank per step"),
        ):
            ratios = [values[s] / values["ddp"] for s in pair]
            ax.barh(ys, ratios, color=color, height=0.55)
            for y, r in zip(ys, ratios, strict=True):
                ax.text(r + 0.04, y, f"{r:g}x", va="center")
            ax.set_xlim(0, 2)
            ax.set_title(title, loc="left")
            ax.set_xlabel("times DDP's")
            ax.tick_params(left=False)
            ax.spines["left"].set_visible(False)
        left.set_yticks(ys, [names[s] for s in pair])
        left.set_ylim(len(pair) - 0.4, -0.9)
        for y, s in zip(ys, pair, strict=True):
            right.text(0.04, y - 0.42, " + ".join(steps[s]), fontsize=9)
    mem = held["fsdp"] / held["ddp"]
    traffic = sent["fsdp"] / sent["ddp"]
    return figure_html(
        fig,
        name="torchrun",
        title="What FSDP trades against DDP on two ranks",
        alt=(
            f"Two bar charts for {n} ranks. Model state held per rank: "
            f"DDP 1x, FSDP {mem:g}x. Bytes sent per rank per step: DDP "
            f"1x, in a reduce-scatter and an all-gather; FSDP "
            f"{traffic:g}x, in two all-gathers and a reduce-scatter."
        ),
        caption=(
            f"The prediction the run below checks: on {n} ranks FSDP "
            f"keeps {mem:g} of DDP's model state per rank and sends "
            f"{traffic:g} times its bytes, because it gathers the weights "
            f"again for the backward pass (memory_per_gpu, comm_bytes; "
            f"the ratios hold for any model size)."
        ),
    )


PLANNER_JOB = {"global_batch_tokens": 4 * 1024 * 1024, "micro_batch": 1}


def planner():
    nodes = cluster("h100-80gb", 8)
    plan = plan_layouts(MODELS["llama3-70b"], nodes, PLANNER_JOB)
    ranked = plan["ranked"]
    gpu = nodes["gpu_memory_GB"]
    fit = [r for r in ranked if r["fits"]]
    over = [r for r in ranked if not r["fits"]]
    best = max(fit, key=lambda r: r["tokens_per_s"])
    with style():
        fig = new_figure(6.4, 3.4)
        ax = fig.add_subplot()
        for rows, color, marker, label in (
            (fit, PALETTE[0], "o", f"fits ({len(fit)})"),
            (over, PALETTE[1], "x", f"does not fit ({len(over)})"),
        ):
            ax.plot(
                [r["memory_per_gpu_GB"]["total"] for r in rows],
                [r["tokens_per_s"] / 1000 for r in rows],
                marker,
                color=color,
                markersize=4,
                label=label,
                linestyle="none",
            )
        ax.axvline(gpu, color=INK, linestyle="--", linewidth=1)
        ax.text(gpu, 0.02, f" {gpu} GB", transform=ax.get_xaxis_transform())
        x, y = best["memory_per_gpu_GB"]["total"], best["tokens_per_s"]
        ax.annotate(
            "fastest that fits",
            (x, y / 1000),
            xytext=(-30, 12),
            textcoords="offset points",
            ha="right",
            arrowprops={"arrowstyle": "->", "color": INK, "linewidth": 1},
        )
        ax.set_xscale("log")
        ticks = [20, 50, 100, 200, 500, 1000]
        ax.set_xticks(ticks, [str(v) for v in ticks])
        ax.minorticks_off()
        ax.set_xlabel("GB per GPU (log scale)")
        ax.set_ylabel("thousand tokens/s")
        ax.grid(True)
        ax.legend(loc="lower right")
    return figure_html(
        fig,
        name="planner",
        title="Every layout the planner tried for Llama 3 70B",
        alt=(
            f"Scatter of {len(ranked)} layouts of Llama 3 70B on 64 "
            f"H100s: memory per GPU on a log scale against throughput. "
            f"{len(fit)} fit under a dashed line at {gpu} GB; the "
            f"fastest of them runs "
            f"{y:,.0f} tokens/s at {x:.1f} GB per GPU."
        ),
        caption=(
            f"The planner scores all {len(ranked)} layouts; {len(fit)} "
            f"fit in memory. The fastest that fits, "
            f"{y:,.0f} tokens/s at {x:.1f} GB per GPU, is the answer at "
            f"the top of the page (plan_layouts)."
        ),
    )


CHARTS["torchrun"] = torchrun
CHARTS["planner"] = planner
