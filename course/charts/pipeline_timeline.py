"""figure("pipeline-timeline") on the torchrun page: one measured step of
GPipe and of 1F1B on 4 pipeline ranks (torch.distributed.pipelining,
course/instruments/results/timelines4.json), each under the schedule
lab's timeline of the same schedule (pipeline_schedule)."""

from course.charts._svg import PALETTE, figure_html, new_figure, style
from course.charts._timeline import bars, legend, titles
from course.instruments import results
from snippets.measured import timelines
from snippets.pipeline.schedule import idle_fraction, pipeline_schedule

P, M = 4, 8
LABELS = {"gpipe": "GPipe", "1f1b": "1F1B"}
COLORS = {"F": PALETTE[0], "B": PALETTE[1]}
RANKS = [f"rank {i}" for i in range(P)]


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
            bars(model, lab, RANKS, COLORS, numbers=schedule == "1f1b")
            bars(real, slots, RANKS, COLORS, numbers=False)
            titles(model, real, LABELS[schedule], lab, slots)
            model.set_xlabel("time (a forward takes 1, a backward 2)")
        legend(
            axes[0],
            COLORS,
            {"F": "forward", "B": "backward"},
            loc="upper right",
            bbox_to_anchor=(1, 1.5),
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
