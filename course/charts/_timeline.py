"""Drawing shared by the pipeline timelines (figures "schedule",
"pipeline-timeline", "zero-bubble", "zero-bubble-v" and
"zero-bubble-measured"): a row of bars per rank, the titles of a
lab/measured pair and the legend of the passes' colours."""

from itertools import product

from matplotlib.patches import Patch

from course.charts._svg import text_on
from snippets.pipeline.schedule import idle_fraction


def bars(ax, slots, rows, colors, numbers=True, fontsize=7.5, chunks=None):
    """One row per rank, named `rows`, a bar per pass coloured by its
    kind, a second chunk's lighter (one set of bars per chunk of
    `chunks`, by default those in `slots`); with `numbers`, each pass's
    micro-batch (counted from 1)."""
    chunks = chunks or sorted({s.chunk for s in slots})
    for stage, kind, chunk in product(range(len(rows)), colors, chunks):
        ax.broken_barh(
            [  # to 0.1 ms: the chart cannot show more
                (round(s.start, 1), round(s.end - s.start, 1))
                for s in slots
                if (s.stage, s.kind, s.chunk) == (stage, kind, chunk)
            ],
            (stage - 0.4, 0.8),
            facecolors=colors[kind],
            edgecolor="none",
            **({"alpha": 0.55} if chunk else {}),
        )
    if numbers:
        for s in slots:
            ax.text(
                (s.start + s.end) / 2,
                s.stage,
                str(s.micro + 1),
                ha="center",
                va="center",
                fontsize=fontsize,
                color=text_on(colors[s.kind]),
            )
    ax.set_yticks(range(len(rows)), rows)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.tick_params(left=False)
    ax.spines["left"].set_visible(False)
    ax.set_xlim(0, float(max(s.end for s in slots)))


def titles(top, bottom, name, lab, real):
    """A lab/measured pair's titles, each with its idle share, and the
    measured one's time axis."""
    for ax, what, slots in ((top, "the lab", lab), (bottom, "measured", real)):
        ax.set_title(
            f"{name}, {what}: idle {idle_fraction(slots):.1%}",
            loc="left",
            fontsize=10,
        )
    bottom.set_xlabel("milliseconds")


def legend(ax, colors, labels, **placement):
    """The passes' colours, `labels` by kind, in one row."""
    ax.legend(
        handles=[Patch(color=colors[k], label=t) for k, t in labels.items()],
        fontsize=9,
        ncols=len(labels),
        **placement,
    )
