"""figure("schedule") on the pipeline page: the GPipe and 1F1B
timelines of a 4-stage pipeline, slot by slot (pipeline_schedule)."""

from itertools import product

from matplotlib.patches import Patch

from course.charts._svg import PALETTE, figure_html, new_figure, style
from snippets.pipeline.schedule import (
    KINDS,
    idle_fraction,
    peak_in_flight,
    pipeline_schedule,
)


def draw():
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
