"""figure("zero-bubble-measured") on the zero-bubble page: one measured
step each of 1F1B, interleaved 1F1B and ZBV on 2 pipeline ranks
(torch.distributed.pipelining, course/instruments/results/
zerobubble2.json), each under the lab's timeline of the same schedule."""

from course.charts._svg import figure_html, new_figure, style
from course.charts._timeline import bars, legend, titles
from course.charts.zero_bubble import COLORS
from course.instruments import results
from snippets.measured import timelines
from snippets.pipeline.schedule import idle_fraction, pipeline_schedule
from snippets.pipeline.zero_bubble import zero_bubble_schedule

P, M = 2, 4
RANKS = [f"rank {i}" for i in range(P)]
LABELS = {"1f1b": "1F1B", "interleaved": "Interleaved 1F1B", "zbv": "ZBV"}


def lab(schedule):
    """The lab's step: F 1, B 1 and W 1 per stage, halves per chunk."""
    if schedule == "interleaved":
        slots = pipeline_schedule(P, M, schedule, chunks=2)
    else:
        slots = zero_bubble_schedule(P, M, schedule)
    return [s._replace(start=float(s.start), end=float(s.end)) for s in slots]


def measured(schedule):
    """The slots of the median step (by idle share) of `schedule`."""
    [run] = [
        r
        for r in results.runs("zerobubble2")
        if r.measured.timeline
        and (r.config.pp_schedule, r.config.pp_microbatches) == (schedule, M)
    ]
    steps = [timelines.slots(run, s) for s in timelines.traced_steps(run)]
    return sorted(steps, key=idle_fraction)[len(steps) // 2]


def draw():
    rows = [(s, lab(s), measured(s)) for s in LABELS]
    with style():
        fig = new_figure(6.4, 8.0)
        axes = fig.subplots(6, 1)
        for i, (schedule, model, real) in enumerate(rows):
            top, bottom = axes[2 * i], axes[2 * i + 1]
            bars(top, model, RANKS, COLORS, numbers=False)
            bars(bottom, real, RANKS, COLORS, numbers=False)
            titles(top, bottom, LABELS[schedule], model, real)
            top.set_xlabel("time (F, B and W 1 each; a chunk's half)")
        legend(
            axes[0],
            COLORS,
            {"F": "F forward", "B": "B backward (input)", "W": "W weights"},
            loc="lower right",
            bbox_to_anchor=(1, 1.25),
        )
    idle = {s: idle_fraction(real) for s, _, real in rows}
    return figure_html(
        fig,
        name="zero-bubble-measured",
        title=f"1F1B, interleaved 1F1B and ZBV on {P} ranks: lab and PyTorch",
        alt=(
            f"Six timelines of {P} pipeline ranks running {M} "
            "micro-batches: for 1F1B, interleaved 1F1B and ZBV, the "
            "lab's timeline above one step of torch.distributed."
            "pipelining on two CPU processes. Each measured rank runs "
            "its passes in the lab's order; ZBV's W passes fill the end "
            "of the step, and the measured steps have wider gaps."
        ),
        caption=(
            f"One step each (the median of the recorded steps) of "
            f"PyTorch's Schedule1F1B, ScheduleInterleaved1F1B and "
            f"ScheduleZBVZeroBubble on {P} CPU ranks with {M} "
            f"micro-batches, under the lab's timeline of the same "
            f"schedule; lighter: a rank's second chunk. Measured idle "
            f"share on this machine: 1F1B {idle['1f1b']:.0%}, interleaved "
            f"{idle['interleaved']:.0%}, ZBV {idle['zbv']:.0%}."
        ),
    )
