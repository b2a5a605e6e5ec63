"""The site's charts, drawn from the labs with matplotlib.

Each function returns a `<figure>` of inline SVG whose numbers, in the
chart and in its caption, all come from lab calls. Pages print them
through `course.figures.figure(name)`, which caches them.
"""

from itertools import product

from matplotlib.patches import Patch

from course.svg import INK, PALETTE, figure_html, new_figure, style
from snippets.comms.cost import LINKS_GBps, comms_cost
from snippets.ddp.allreduce import allreduce_bytes
from snippets.pipeline.bubble import bubble_fraction
from snippets.pipeline.schedule import (
    KINDS,
    idle_fraction,
    peak_in_flight,
    pipeline_schedule,
)
from snippets.zero.memory import SHARDED, memory_per_gpu

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


def _log2_axis(ax, values):
    ax.set_xscale("log", base=2)
    ax.set_xticks(values, [str(v) for v in values])
    ax.minorticks_off()


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
        _log2_axis(ax, WORLD_SIZES[1:])
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
        _log2_axis(ax, WORLD_SIZES)
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
            inter = [bubble_fraction(p, m, "interleaved", 2) for m in fine]
            ax.plot(fine, plain, color=color, label=f"p={p}: GPipe and 1F1B")
            ax.plot(
                fine,
                inter,
                color=color,
                linestyle="--",
                label=f"p={p}: interleaved, v=2",
            )
        _log2_axis(ax, ms)
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
                    fontsize=7,
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
            title_fontsize=8,
            fontsize=8,
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
            ax.text(x, 0.012, f" {text}", fontsize=8)
        for i, (link, bw) in enumerate(links.items()):
            t = comms_cost(interconnect_GBps=bw, **COMMS_JOB)["comms_s"]
            ax.plot([bw], [t], "o", color=PALETTE[1], markersize=4)
            # The line rises to the right: above-left and below-right of
            # a point are clear of it. The two NVLinks sit close.
            below = i == 0
            ax.annotate(
                _short(link),
                (bw, t),
                fontsize=7.5,
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
        ax.legend(loc="upper left", fontsize=8.5)
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


# name on the page -> function
CHARTS = {
    "allreduce-factor": allreduce_factor,
    "memory": memory,
    "bubble": bubble,
    "schedule": schedule,
    "comms": comms,
}
