"""Lay out a pipeline step slot by slot: who computes what, and when."""

# --8<-- [start:model]
from collections import namedtuple

from snippets.checks import choice, count

Slot = namedtuple("Slot", "stage start end kind micro")
KINDS = ("gpipe", "1f1b")


def _order(stage, stages, microbatches, schedule):
    """The (kind, micro) work list of one stage, in the order it runs."""
    forwards = [("F", i) for i in range(microbatches)]
    backwards = [("B", i) for i in range(microbatches)]
    if schedule == "gpipe":
        return forwards + backwards
    # 1F1B: warm up with enough forwards to fill the stages below, then
    # alternate one forward and one backward, then drain the backwards.
    warmup = min(stages - 1 - stage, microbatches)
    steady = forwards[warmup:]
    order = forwards[:warmup]
    for i, forward in enumerate(steady):
        order += [forward, backwards[i]]
    return order + backwards[len(steady) :]


def pipeline_schedule(
    stages, microbatches, schedule="gpipe", forward=1, backward=2
):
    """Every slot of one step as (stage, start, end, kind, micro).

    kind is "F" or "B". A stage runs its work list in order; a forward
    waits for the same micro-batch on the stage before it, a backward
    for the stage after it. forward and backward are the times of one
    micro-batch on one stage, in any unit.
    """
    count("stages", stages)
    count("microbatches", microbatches)
    choice("schedule", schedule, KINDS)
    count("forward", forward)
    count("backward", backward)
    todo = [_order(s, stages, microbatches, schedule) for s in range(stages)]
    done = {}  # (stage, kind, micro) -> end time
    free = [0] * stages
    slots = []
    while any(todo):
        progressed = False
        for s in range(stages):
            if not todo[s]:
                continue
            kind, i = todo[s][0]
            if kind == "F":
                needs = (s - 1, "F", i) if s > 0 else None
            else:
                needs = (s + 1, "B", i) if s < stages - 1 else (s, "F", i)
            if needs is not None and needs not in done:
                continue
            start = max(free[s], done.get(needs, 0))
            end = start + (forward if kind == "F" else backward)
            done[(s, kind, i)] = free[s] = end
            slots.append(Slot(s, start, end, kind, i))
            todo[s].pop(0)
            progressed = True
        if not progressed:  # pragma: no cover - the orders cannot deadlock
            raise RuntimeError("pipeline schedule deadlocked")
    return sorted(slots)


def _is_slot(item):
    # By its fields rather than isinstance: a reloaded module makes a
    # new Slot class, and slots made before the reload are still slots.
    return getattr(item, "_fields", None) == Slot._fields


def _check_slots(slots):
    """A non-empty list of Slot, as pipeline_schedule returns."""
    if not isinstance(slots, list | tuple) or _is_slot(slots):
        raise TypeError(
            "slots must be a list of Slot, as pipeline_schedule returns, "
            f"got {type(slots).__name__} {slots!r:.60}"
        )
    if not slots:
        raise ValueError("slots must hold at least one Slot, got []")
    for slot in slots:
        if not _is_slot(slot):
            raise TypeError(
                f"slots must hold Slot items, got {type(slot).__name__} "
                f"{slot!r:.60}"
            )
    return slots


def idle_fraction(slots):
    """Share of stage-time spent idle over the whole step."""
    _check_slots(slots)
    stages = 1 + max(slot.stage for slot in slots)
    step = max(slot.end for slot in slots)
    busy = sum(slot.end - slot.start for slot in slots)
    return 1 - busy / (stages * step)


def peak_in_flight(slots, stage):
    """Most micro-batches a stage holds activations for at once: their
    forward has run on it and their backward has not finished."""
    _check_slots(slots)
    count("stage", stage, minimum=0)
    stages = 1 + max(slot.stage for slot in slots)
    if stage >= stages:
        raise ValueError(
            f"stage must be < {stages}, the number of stages in slots; "
            f"got {stage!r}"
        )
    events = []
    for slot in slots:
        if slot.stage == stage:
            # A backward frees its micro-batch at its end, a forward
            # takes one at its start; at equal times free first.
            at = slot.start if slot.kind == "F" else slot.end
            events.append((at, 1 if slot.kind == "F" else -1))
    held = peak = 0
    for _, change in sorted(events):
        held += change
        peak = max(peak, held)
    return peak


# --8<-- [end:model]


if __name__ == "__main__":
    # --8<-- [start:demo]
    from snippets.pipeline.bubble import bubble_fraction

    for kind in KINDS:
        slots = pipeline_schedule(4, 8, kind)
        held = [peak_in_flight(slots, s) for s in range(4)]
        print(
            f"{kind:>5}: step {max(s.end for s in slots)} units, idle "
            f"{idle_fraction(slots):.4f} (formula "
            f"{bubble_fraction(4, 8, kind):.4f}), in flight per stage {held}"
        )
    # --8<-- [end:demo]
