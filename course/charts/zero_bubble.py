"""figure("zero-bubble") on the zero-bubble page: 1F1B against ZB-H1 on
4 devices, pass by pass (zero_bubble_schedule). gantt() also draws
figure("zero-bubble-v")."""

from course.charts._svg import PALETTE, figure_html, new_figure, style
from course.charts._timeline import bars, legend
from snippets.pipeline.schedule import idle_fraction
from snippets.pipeline.zero_bubble import peak_held, zero_bubble_schedule

P, M = 4, 8  # devices, micro-batches
LABELS = {"1f1b": "1F1B", "zb-h1": "ZB-H1", "zb-h2": "ZB-H2", "zbv": "ZBV"}
COLORS = {"F": PALETTE[0], "B": PALETTE[1], "W": PALETTE[2]}
GPUS = [f"GPU {i + 1}" for i in range(P)]


def gantt(kinds):
    """The figure of the schedules `kinds`, one timeline each, and their
    slots."""
    runs = {k: zero_bubble_schedule(P, M, k) for k in kinds}
    step = max(s.end for slots in runs.values() for s in slots)
    with style():
        fig = new_figure(6.4, 1.1 + 1.45 * len(runs))
        axes = fig.subplots(len(runs), 1, sharex=True)
        for ax, (kind, slots) in zip(axes, runs.items(), strict=True):
            # ZBV's half-size passes are too narrow for a number
            bars(ax, slots, GPUS, COLORS, kind != "zbv", 8.5, chunks=(0, 1))
            end = max(s.end for s in slots)
            ax.set_title(
                f"{LABELS[kind]}: step {float(end):g}, idle "
                f"{idle_fraction(slots):.1%}",
                loc="left",
                fontsize=10,
            )
        axes[-1].set_xlim(0, step)
        axes[-1].set_xlabel("time (F, B and W take 1 unit each)")
        legend(
            axes[0],
            COLORS,
            {"F": "F forward", "B": "B input grad", "W": "W weight grad"},
            loc="lower right",
            bbox_to_anchor=(1, 1.25),
        )
    return fig, runs


def draw():
    fig, runs = gantt(("1f1b", "zb-h1"))
    end = {k: float(max(s.end for s in slots)) for k, slots in runs.items()}
    held = {
        k: max(peak_held(slots, st) for st in range(P))
        for k, slots in runs.items()
    }
    return figure_html(
        fig,
        name="zero-bubble",
        title="1F1B and ZB-H1 on 4 GPUs",
        alt=(
            f"Two timelines of {P} GPUs running {M} micro-batches. 1F1B "
            f"runs each backward pass whole and leaves idle triangles at "
            f"the start and the end. ZB-H1 splits the backward into B and "
            f"W, runs the B passes early and moves the W passes into the "
            f"gaps. The steps end at {end['1f1b']:g} and {end['zb-h1']:g}."
        ),
        caption=(
            f"Same work, {3 * M} units per GPU. Splitting the backward "
            f"pass cuts the step from {end['1f1b']:g} to {end['zb-h1']:g} "
            f"units at 1F1B's memory: {held['zb-h1']:g} micro-batches held "
            f"at most, on every GPU. 1F1B's backward is one pass, B and W "
            f"together."
        ),
    )
