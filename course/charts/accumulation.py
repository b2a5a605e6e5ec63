"""figure("accumulation") on the accumulation page: one optimizer step
with and without gradient accumulation, for the comms page's job on
InfiniBand (comms_cost)."""

from course.charts._common import COMMS_JOB
from course.charts._svg import (
    INK,
    PALETTE,
    figure_html,
    new_figure,
    style,
    text_box,
)
from snippets.comms.cost import REACHED, comms_cost
from snippets.walls.walls import FLOPS_PER_PARAM_TOKEN


def draw():
    link = REACHED["InfiniBand HDR, 200 Gb/s"]
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
