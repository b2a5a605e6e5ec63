"""Zero-bubble pipeline schedules: the backward pass split into B and W."""

# --8<-- [start:model]
from fractions import Fraction

from snippets.checks import choice, count, number
from snippets.pipeline.schedule import Slot, _check_slots, _plain

SCHEDULES = ("1f1b", "zb-h1", "zb-h2", "zbv")
PUBLISHED = ("1f1b", "zb1p", "dualpipe")


def _split_order(microbatches, warmup, lag, first):
    """A stage's passes: `warmup` forwards, then one B per micro-batch,
    each W `lag` micro-batches behind its B, the next forward before
    (`first` "F") or after (`first` "B") each backward pair."""
    m = microbatches
    order = [("F", i, 0) for i in range(warmup)]
    forwards, weights = warmup, 0
    for i in range(m):
        if first == "F" and forwards < m:
            order.append(("F", forwards, 0))
            forwards += 1
        order.append(("B", i, 0))
        if i >= lag:
            order.append(("W", weights, 0))
            weights += 1
        if first == "B" and forwards < m:
            order.append(("F", forwards, 0))
            forwards += 1
    return order + [("W", i, 0) for i in range(weights, m)]


def _zbv_order(stages, microbatches, device):
    """ZBV (Qi et al., section 6): chunk 0 of a device is virtual stage
    d, chunk 1 is 2p - 1 - d, so the micro-batches run down the devices
    and back up, a V. The same order as torch 2.13's
    ScheduleZBVZeroBubble."""
    p, d = stages, device
    n = max(2 * p - 1, microbatches)  # at least enough to fill the V
    done = {(kind, c): 0 for kind in "FBW" for c in (0, 1)}
    order = []

    def run(kind, chunk):
        order.append((kind, done[kind, chunk], chunk))
        done[kind, chunk] += 1

    for _ in range(2 * (p - d) - 1):
        run("F", 0)
    for _ in range(d):
        run("F", 1)
        run("F", 0)
    for _ in range(p - d):
        for kind in "FBW":
            run(kind, 1)
    while done["F", 1] < done["F", 0] or done["F", 0] < n:
        if done["F", 0] < n:
            run("F", 0)
        for kind, chunk in (("B", 0), ("W", 0), ("F", 1), ("B", 1), ("W", 1)):
            run(kind, chunk)
    for _ in range(d):
        run("B", 0)
        run("B", 1)
    for _ in range(p - d):
        run("B", 0)
        run("W", 0)
    for chunk in (1, 0):
        while done["W", chunk] < done["B", chunk]:
            run("W", chunk)
    return [step for step in order if step[1] < microbatches]


def _orders(stages, microbatches, schedule):
    p, m = stages, microbatches
    if schedule == "zbv":
        return [_zbv_order(p, m, d) for d in range(p)]
    if schedule == "1f1b":  # B and W as one backward pass, no W of its own
        return [
            [
                step
                for step in _split_order(m, min(p - 1 - s, m), 0, "F")
                if step[0] != "W"
            ]
            for s in range(p)
        ]
    if schedule == "zb-h1":  # 1F1B's warm-up, each W s passes late
        return [_split_order(m, min(p - 1 - s, m), s, "F") for s in range(p)]
    # zb-h2: enough forwards to fill the wait for the first B, each W 2s
    # passes late: at most 2p - 1 micro-batches held
    return [
        _split_order(m, min(2 * (p - 1 - s) + 1, m), 2 * s, "B")
        for s in range(p)
    ]


def zero_bubble_schedule(
    stages,
    microbatches,
    schedule="zb-h1",
    forward=1,
    backward_input=1,
    backward_weight=1,
):
    """Every pass of one step as Slot(stage, start, end, kind, micro,
    chunk), kind "F", "B" (input gradient) or "W" (weight gradient).

    A pass waits for its device and for the pass it needs: a forward
    for the forward before it, a B for the B after it, a W for its own
    B. "1f1b" runs B and W as one backward pass (kind "B"). Times are
    those of one micro-batch on one device; under "zbv" a device holds
    two chunks of half its layers, so each chunk's pass takes half.
    """
    p = count("stages", stages)
    m = count("microbatches", microbatches)
    choice("schedule", schedule, SCHEDULES)
    times = {
        "F": count("forward", forward),
        "B": count("backward_input", backward_input),
        "W": count("backward_weight", backward_weight),
    }
    chunks = 2 if schedule == "zbv" else 1
    if schedule == "1f1b":
        times["B"] += times["W"]
    times = {kind: Fraction(t, chunks) for kind, t in times.items()}
    last = chunks * p - 1

    def virtual(device, chunk):  # zbv: down the devices, then back up
        return device if chunk == 0 else last - device

    todo = _orders(p, m, schedule)
    done, free, slots = {}, [0] * p, []
    while any(todo):
        progressed = False
        for d in range(p):
            if not todo[d]:
                continue
            kind, i, chunk = todo[d][0]
            v = virtual(d, chunk)
            if kind == "F":
                needs = (v - 1, "F", i) if v > 0 else None
            elif kind == "B":
                needs = (v + 1, "B", i) if v < last else (v, "F", i)
            else:
                needs = (v, "B", i)
            if needs is not None and needs not in done:
                continue
            start = max(free[d], done.get(needs, 0))
            done[v, kind, i] = free[d] = start + times[kind]
            slots.append(
                Slot(d, _plain(start), _plain(free[d]), kind, i, chunk)
            )
            todo[d].pop(0)
            progressed = True
        if not progressed:  # pragma: no cover - the orders cannot deadlock
            raise RuntimeError("zero-bubble schedule deadlocked")
    return sorted(slots)


def steady_idle_fraction(slots):
    """Idle share when every stage starts its next step as soon as its
    own last pass ends, as Qi et al.'s post-validation of the optimizer
    step allows: a step then lasts the longest stage's span from its
    first pass to its last, not the whole pipeline's."""
    _check_slots(slots)
    stages = 1 + max(slot.stage for slot in slots)
    span = max(
        max(s.end for s in slots if s.stage == d)
        - min(s.start for s in slots if s.stage == d)
        for d in range(stages)
    )
    busy = sum(slot.end - slot.start for slot in slots)
    return float(1 - busy / (stages * span))


def peak_held(slots, stage):
    """Most micro-batches a stage holds activations for at once: from
    the start of a forward to the end of its last backward pass (W when
    the backward is split). A ZBV chunk holds half a stage's layers, so
    it counts one half."""
    _check_slots(slots)
    count("stage", stage, minimum=0)
    stages = 1 + max(slot.stage for slot in slots)
    if stage >= stages:
        raise ValueError(
            f"stage must be < {stages}, the number of stages in slots; "
            f"got {stage!r}"
        )
    chunks = 1 + max(slot.chunk for slot in slots)
    split = any(slot.kind == "W" for slot in slots)
    release = "W" if split else "B"
    events = sorted(
        (s.start, 1) if s.kind == "F" else (s.end, -1)
        for s in slots
        if s.stage == stage and s.kind in ("F", release)
    )
    held = peak = 0
    for _, change in events:
        held += change
        peak = max(peak, held)
    return _plain(Fraction(peak, chunks))


def published_bubble(
    stages, schedule, forward, backward, weight, overlapped=None
):
    """Idle time per device in one step, in the unit of the times given,
    as DeepSeek-V3 (Table 2) and the DualPipe repository tabulate it:
    `backward` is the whole backward pass of a chunk, `weight` its W
    part, `overlapped` the time of a forward and a backward chunk run
    together (DualPipe only). 1F1B (p-1)(F+B), ZB1P (p-1)(F+B-2W),
    DualPipe (p/2-1)(F&B+B-3W), p even."""
    p = count("stages", stages)
    choice("schedule", schedule, PUBLISHED)
    number("forward", forward)
    number("backward", backward)
    number("weight", weight)
    if weight >= backward:
        raise ValueError(
            f"weight must be < backward (W is part of the backward pass); "
            f"got weight {weight!r}, backward {backward!r}"
        )
    if schedule == "1f1b":
        return (p - 1) * (forward + backward)
    if schedule == "zb1p":
        return (p - 1) * (forward + backward - 2 * weight)
    if p % 2:
        raise ValueError(f"stages must be even for DualPipe, got {p!r}")
    if overlapped is None:
        raise ValueError("overlapped must be given for DualPipe")
    number("overlapped", overlapped)
    return (p // 2 - 1) * (overlapped + backward - 3 * weight)


def p2p_per_device(stages, microbatches, schedule="1f1b", chunks=1):
    """Point-to-point messages one step sends over the devices'
    boundaries, per device on average: each micro-batch's activations
    forward and their gradient back across every boundary between
    virtual stages that sit on different devices. 1F1B has p - 1 such
    boundaries, interleaving v p - 1, ZBV 2p - 2 (its V turns on one
    device)."""
    p = count("stages", stages)
    m = count("microbatches", microbatches)
    choice("schedule", schedule, ("1f1b", "interleaved", "zbv"))
    v = count("chunks", chunks)
    if schedule != "interleaved" and v != 1:
        raise ValueError(
            f"chunks must be 1 for schedule {schedule!r}, got {chunks!r}"
        )
    boundaries = {"1f1b": p - 1, "interleaved": v * p - 1, "zbv": 2 * p - 2}
    return Fraction(2 * m * boundaries[schedule], p)


# --8<-- [end:model]


if __name__ == "__main__":
    # --8<-- [start:demo]
    from snippets.pipeline.schedule import idle_fraction

    P, M = 4, 8
    print(
        f"{P} stages, {M} micro-batches; F, B and W take 1 unit each,"
        f" {3 * M} units of work per stage"
    )
    print("schedule  step  idle   idle, post-validated  held (stage 1..4)")
    for kind in SCHEDULES:
        slots = zero_bubble_schedule(P, M, kind)
        step = max(s.end for s in slots)
        held = ", ".join(f"{peak_held(slots, s):g}" for s in range(P))
        print(
            f"{kind:>8}  {float(step):4.1f}  {idle_fraction(slots):5.1%}"
            f"  {steady_idle_fraction(slots):20.1%}  [{held}]"
        )
    for kind in PUBLISHED[:2]:
        bubble = published_bubble(P, kind, forward=1, backward=2, weight=1)
        print(f"published {kind} bubble: {bubble} units per device")
    # --8<-- [end:demo]
