"""Lay out a pipeline step slot by slot: who computes what, and when."""

# --8<-- [start:model]
from collections import namedtuple
from fractions import Fraction

from snippets.checks import choice, count
from snippets.pipeline.bubble import interleaved_rounds

Slot = namedtuple("Slot", "stage start end kind micro chunk", defaults=[0])
KINDS = ("gpipe", "1f1b")
SCHEDULES = (*KINDS, "interleaved")


def _order(stage, stages, microbatches, schedule, chunks):
    """The (kind, micro, chunk) work list of one stage, in the order it
    runs."""
    if schedule == "interleaved":
        return _interleaved_order(stage, stages, microbatches, chunks)
    forwards = [("F", i, 0) for i in range(microbatches)]
    backwards = [("B", i, 0) for i in range(microbatches)]
    if schedule == "gpipe":
        return forwards + backwards
    # 1F1B: warm up with enough forwards to fill the stages below, then
    # alternate one forward and one backward, then drain the backwards.
    warmup = min(stages - 1 - stage, microbatches)
    return _one_forward_one_backward(forwards, backwards, warmup)


def _one_forward_one_backward(forwards, backwards, warmup):
    steady = forwards[warmup:]
    order = forwards[:warmup]
    for i, forward in enumerate(steady):
        order += [forward, backwards[i]]
    return order + backwards[len(steady) :]


def _interleaved_order(stage, stages, microbatches, chunks):
    """Interleaved 1F1B as torch.distributed.pipelining's
    ScheduleInterleaved1F1B orders it (torch 2.13; Narayanan et al.
    2021, section 2.2.2, when m is a multiple of p): the micro-batches
    go through in rounds of g = m / max(1, m // p), each round through
    chunk 0 of every device, then chunk 1, and so on; the backward
    passes visit the chunks in reverse. The warm-up runs the forwards
    that the stages after this one need first."""
    group = microbatches // interleaved_rounds(stages, microbatches)
    total = microbatches * chunks
    done = {"F": [0] * chunks, "B": [0] * chunks}

    def unit(k, kind):
        chunk = (k // group) % chunks
        if kind == "B":
            chunk = chunks - 1 - chunk
        done[kind][chunk] += 1
        return (kind, done[kind][chunk] - 1, chunk)

    forwards = [unit(k, "F") for k in range(total)]
    backwards = [unit(k, "B") for k in range(total)]
    warmup = min((chunks - 1) * group + 2 * (stages - 1 - stage), total)
    return _one_forward_one_backward(forwards, backwards, warmup)


def pipeline_schedule(
    stages, microbatches, schedule="gpipe", forward=1, backward=2, chunks=1
):
    """Every slot of one step as (stage, start, end, kind, micro, chunk).

    kind is "F" or "B". A stage runs its work list in order; a forward
    waits for the same micro-batch on the stage before it, a backward
    for the stage after it. forward and backward are the times of one
    micro-batch on one stage, in any unit. The interleaved schedule
    splits each stage into `chunks` = v pieces of 1/v the time, placed
    around the pipeline (chunk c of stage s is virtual stage c p + s);
    it needs microbatches to divide into interleaved_rounds.
    """
    p = count("stages", stages)
    m = count("microbatches", microbatches)
    choice("schedule", schedule, SCHEDULES)
    count("forward", forward)
    count("backward", backward)
    v = count("chunks", chunks)
    if schedule != "interleaved" and v != 1:
        raise ValueError(
            f"chunks must be 1 for schedule {schedule!r}, got {chunks!r}"
        )
    if schedule == "interleaved":
        interleaved_rounds(p, m)
    last = p * v - 1  # the last virtual stage
    time = {"F": Fraction(forward, v), "B": Fraction(backward, v)}
    todo = [_order(s, p, m, schedule, v) for s in range(p)]
    done = {}  # (virtual stage, kind, micro) -> end time
    free = [0] * p
    slots = []
    while any(todo):
        progressed = False
        for s in range(p):
            if not todo[s]:
                continue
            kind, i, chunk = todo[s][0]
            here = chunk * p + s
            if kind == "F":
                needs = (here - 1, "F", i) if here > 0 else None
            else:
                needs = (here + 1, "B", i) if here < last else (here, "F", i)
            if needs is not None and needs not in done:
                continue
            start = max(free[s], done.get(needs, 0))
            end = start + time[kind]
            done[(here, kind, i)] = free[s] = end
            slots.append(Slot(s, _plain(start), _plain(end), kind, i, chunk))
            todo[s].pop(0)
            progressed = True
        if not progressed:  # pragma: no cover - the orders cannot deadlock
            raise RuntimeError("pipeline schedule deadlocked")
    return sorted(slots)


def _plain(time):
    """A whole Fraction as an int, so one-chunk schedules keep ints."""
    return int(time) if time.denominator == 1 else time


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
    return float(1 - busy / (stages * step))


def peak_in_flight(slots, stage):
    """Most micro-batches a stage holds activations for at once: their
    forward has run on it and their backward has not finished. Under
    the interleaved schedule each (micro-batch, chunk) counts once, and
    holds 1 / chunks of the stage's activations."""
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

    def show(label, p, m, kind, v):
        slots = pipeline_schedule(p, m, kind, chunks=v)
        # activations held, in micro-batches' worth of one stage
        held = ", ".join(f"{peak_in_flight(slots, s) / v:g}" for s in range(p))
        print(
            f"{label:>16}: step {float(max(s.end for s in slots)):4.1f},"
            f" idle {idle_fraction(slots):.4f} (formula"
            f" {bubble_fraction(p, m, kind, v):.4f}), in flight per"
            f" stage [{held}]"
        )

    P, M, V = 4, 8, 2
    print(f"{P} stages, {M} micro-batches; a forward takes 1, a backward 2")
    for kind, v in (("gpipe", 1), ("1f1b", 1), ("interleaved", V)):
        show(kind, P, M, kind, v)
    show("interleaved, m=6", P, 6, "interleaved", V)
    try:
        pipeline_schedule(P, 9, "interleaved", chunks=V)
    except ValueError as error:
        print(f"9 micro-batches, interleaved: ValueError: {error}")
    # --8<-- [end:demo]
