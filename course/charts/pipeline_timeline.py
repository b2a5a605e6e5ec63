"""figure("pipeline-timeline") on the torchrun page: one measured step of
GPipe and of 1F1B on 4 pipeline ranks (torch.distributed.pipelining,
course/instruments/results/timelines4.json), each under the schedule
lab's timeline of the same schedule (pipeline_schedule)."""

from itertools import product

from matplotlib.patches import Patch

from course.charts._svg import (
    DARK_TEXT,
    PALETTE,
    figure_html,
    new_figure,
    style,
)
from course.instruments import results
from snippets.measured import timelines
from snippets.pipeline.schedule import idle_fraction, pipeline_schedule

P, M = 4, 8
LABELS = {"gpipe": "GPipe", "1f1b": "1F1B"}
COLORS = {"F": PALETTE[0], "B": PALETTE[1]}


def measured(schedule):
    """The run of `schedule` at p = P, m = M, and its median step."""
    [run] = [
        r
        for r in results.runs("timelines4")
        if (r.config.pp_schedule, r.config.pp, r.config.pp_microbatches)
        == (schedule, P, M)
    ]
    steps = timelines.traced_steps(run)
    shares = sorted((idle_fraction(timelines.slots(run, s)), s) for s in steps)
    return run, shares[len(shares) // 2][1]


def bars(ax, slots, numbers, ranks=P, colors=COLORS):
    """One row per rank, a bar per pass; a second chunk's lighter."""
    chunks = sorted({s.chunk for s in slots})
    for stage, kind, chunk in product(range(ranks), colors, chunks):
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
                fontsize=7.5,
                color=DARK_TEXT,
            )
    ax.set_yticks(range(ranks), [f"rank {i}" for i in range(ranks)])
    ax.set_ylim(ranks - 0.5, -0.5)
    ax.tick_params(left=False)
    ax.spines["left"].set_visible(False)
    ax.set_xlim(0, max(s.end for s in slots))


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


def draw():
    rows = []
    for schedule in LABELS:
        run, step = measured(schedule)
        lab = pipeline_schedule(P, M, schedule)
        rows.append((schedule, lab, timelines.slots(run, step)))
    with style():
        fig = new_figure(6.4, 7.2)
        axes = fig.subplots(4, 1)
        for i, (schedule, lab, slots) in enumerate(rows):
            model, real = axes[2 * i], axes[2 * i + 1]
            # numbers where the order is the point: 1F1B's interleaving
            bars(model, lab, numbers=schedule == "1f1b")
            bars(real, slots, numbers=False)
            titles(model, real, LABELS[schedule], lab, slots)
            model.set_xlabel("time (a forward takes 1, a backward 2)")
        axes[0].legend(
            handles=[
                Patch(color=COLORS["F"], label="forward"),
                Patch(color=COLORS["B"], label="backward"),
            ],
            fontsize=9,
            loc="upper right",
            bbox_to_anchor=(1, 1.5),
            ncols=2,
        )
    shares = {s: idle_fraction(slots) for s, _, slots in rows}
    return figure_html(
        fig,
        name="pipeline-timeline",
        title=f"GPipe and 1F1B on {P} pipeline ranks: the lab and PyTorch",
        alt=(
            f"Four timelines of {P} pipeline ranks running {M} "
            "micro-batches. For GPipe and for 1F1B, the schedule lab's "
            "timeline sits above one step of torch.distributed.pipelining "
            "on four CPU processes. Each measured rank runs its forwards "
            "and backwards in the lab's order, with the same empty "
            "triangles at the start and the end, and wider gaps."
        ),
        caption=(
            f"One step each of torch.distributed.pipelining's GPipe and "
            f"1F1B on {P} CPU ranks with {M} micro-batches (the median of "
            f"the recorded steps), under the lab's timeline of the same "
            f"schedule. Every rank runs the lab's order. The measured "
            f"ranks idle {shares['gpipe']:.0%} (GPipe) and "
            f"{shares['1f1b']:.0%} (1F1B) of the step, the lab "
            f"{idle_fraction(rows[0][1]):.0%}: four ranks share two cores "
            "here, so a rank also waits for a core and for the messages "
            "from its neighbours."
        ),
    )
