"""figure("bubble") on the pipeline page: the idle share of a pipeline
step against the number of micro-batches (bubble_fraction)."""

from course.charts._svg import (
    PALETTE,
    figure_html,
    log2_axis,
    new_figure,
    style,
)
from snippets.pipeline.bubble import bubble_fraction


def draw():
    ms = [2**k for k in range(7)]  # 1 ... 64 micro-batches
    fine = sorted({round(2 ** (k / 8)) for k in range(49)})
    with style():
        fig = new_figure()
        ax = fig.add_subplot()
        for p, color in zip((4, 8), PALETTE, strict=False):
            plain = [bubble_fraction(p, m) for m in fine]
            # torch's interleaved schedule needs m % max(1, m // p) == 0
            grouped = [m for m in fine if m % max(1, m // p) == 0]
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
