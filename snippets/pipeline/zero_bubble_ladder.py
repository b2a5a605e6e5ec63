"""Practice ladder: pick a pipeline schedule for a memory budget."""

# --8<-- [start:model]
from snippets.checks import count, flag
from snippets.pipeline.schedule import idle_fraction
from snippets.pipeline.zero_bubble import (
    SCHEDULES,
    peak_held,
    steady_idle_fraction,
    zero_bubble_schedule,
)


def pick_schedule(stages, microbatches, max_held, post_validated):
    """The schedule that idles least among those whose every stage
    holds at most max_held micro-batches of activations; idle counted
    over one step, or between steps when the optimizer step is
    validated afterwards (each stage moves on at once). Ties go to the
    one that holds less. Returns the choice and, for each schedule that
    fits, (idle share, peak held)."""
    p, m = count("stages", stages), count("microbatches", microbatches)
    budget = count("max_held", max_held)
    flag("post_validated", post_validated)
    idle = steady_idle_fraction if post_validated else idle_fraction
    fits = {}
    for kind in SCHEDULES:
        slots = zero_bubble_schedule(p, m, kind)
        held = max(peak_held(slots, s) for s in range(p))
        if held <= budget:
            fits[kind] = (idle(slots), held)
    if not fits:
        raise ValueError(
            f"max_held must be at least 1F1B's peak, {min(p, m)} micro-"
            f"batches on the first stage; got {budget!r}"
        )
    best = min(fits, key=fits.get)
    return best, fits


# --8<-- [end:model]


if __name__ == "__main__":
    # --8<-- [start:demo]
    P, M = 8, 32
    for held, validated in ((8, False), (8, True), (15, True), (4, False)):
        try:
            best, fits = pick_schedule(P, M, held, validated)
        except ValueError as error:
            print(f"at most {held} held: ValueError: {error}")
            continue
        table = ", ".join(f"{k} {v:.1%}" for k, (v, _) in fits.items())
        print(
            f"at most {held} held, post-validated {validated}: {best}"
            f"  ({table})"
        )
    # --8<-- [end:demo]
