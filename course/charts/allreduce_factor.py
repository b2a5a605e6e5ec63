"""figure("allreduce-factor") on the DDP page: the gigabytes each rank
sends in a ring all-reduce of 7B bf16 gradients, for 2 to 1024 GPUs
(allreduce_bytes)."""

from course.charts._common import P7B, WORLD_SIZES
from course.charts._svg import (
    INK,
    PALETTE,
    figure_html,
    log2_axis,
    new_figure,
    style,
)
from snippets.ddp.allreduce import allreduce_bytes


def draw():
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
