"""figure("zero-bubble-v") on the zero-bubble page: ZB-H2 and ZBV on 4
devices, pass by pass (zero_bubble_schedule)."""

from course.charts._svg import figure_html
from course.charts.zero_bubble import M, P, gantt
from snippets.pipeline.zero_bubble import peak_held, steady_idle_fraction


def draw():
    fig, runs = gantt(("zb-h2", "zbv"))
    end = {k: float(max(s.end for s in slots)) for k, slots in runs.items()}
    held = {
        k: max(peak_held(slots, st) for st in range(P))
        for k, slots in runs.items()
    }
    steady = {k: steady_idle_fraction(slots) for k, slots in runs.items()}
    return figure_html(
        fig,
        name="zero-bubble-v",
        title="ZB-H2 and ZBV on 4 GPUs",
        alt=(
            f"Two timelines of {P} GPUs running {M} micro-batches. In "
            f"ZB-H2 each GPU works without a gap from its first pass to "
            f"its last, the whole forming a parallelogram. ZBV gives each "
            f"GPU two half-size chunks, the second drawn lighter, and "
            f"ends at {end['zbv']:g}."
        ),
        caption=(
            f"ZB-H2 holds up to {held['zb-h2']:g} micro-batches and leaves "
            f"only the slanted edges of a parallelogram, which vanish when "
            f"each GPU starts its next step at once: "
            f"{steady['zb-h2']:.0%} idle then. ZBV does the same at "
            f"{held['zbv']:g}, 1F1B's memory ({steady['zbv']:.0%} idle). "
            f"Lighter: ZBV's second chunk, on the way back up."
        ),
    )
