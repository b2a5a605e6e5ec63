"""figure("schedule") on the pipeline page: the GPipe and 1F1B
timelines of a 4-stage pipeline, slot by slot (pipeline_schedule)."""

from course.charts._svg import PALETTE, figure_html, new_figure, style
from course.charts._timeline import bars, legend
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
    stages = [f"stage {i + 1}" for i in range(p)]
    step = max(s.end for s in runs["gpipe"])
    with style():
        fig = new_figure(6.4, 3.6)
        axes = fig.subplots(2, 1, sharex=True)
        for ax, (kind, slots) in zip(axes, runs.items(), strict=True):
            bars(ax, slots, stages, colors, fontsize=8.5)
            ax.set_title(labels[kind], loc="left", fontsize=10)
        axes[-1].set_xlim(0, step)
        axes[-1].set_xlabel("time (a forward takes 1 unit, a backward 2)")
        legend(
            axes[0],
            colors,
            {"F": "forward", "B": "backward"},
            title="number = micro-batch",
            title_fontsize=9,
            loc="upper right",
            bbox_to_anchor=(1, 1.45),
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
