"""A measured pipeline step, in the schedule lab's terms (no torch).

probes.py records every forward (F), loss (L), backward (B) and, where
a zero-bubble schedule splits the backward, weight gradient (W) each
pipeline stage ran, with its wall-clock start and end and the CPU time
it used. `slots` turns one step of that record into the lab's `Slot`s
(snippets/pipeline/schedule.py), so the lab's own `idle_fraction` and
`peak_in_flight` read a measured step as they read a modelled one.

`replayed` rebuilds the same step in the order each rank ran it, each
forward or backward lasting the median CPU time of its kind on its
stage, and waiting only for what the schedule makes it wait for: the
step as a machine with a core per rank and instant links would run it.
"""

import statistics
from collections import defaultdict

from snippets.pipeline.bubble import bubble_fraction
from snippets.pipeline.schedule import Slot, idle_fraction


def operations(run, step):
    """(stage, kind, micro, start, end, cpu) of `step`, a loss folded into
    the forward before it; start and end in ms from the step's start."""
    events = [e[1:] for e in run.measured.timeline if e[0] == step]
    if not events:
        raise ValueError(f"step must be one the run traced, got {step!r}")
    began = min(e[3] for e in events)
    losses = {
        (s, m): (end, cpu) for s, k, m, _, end, cpu in events if k == "L"
    }
    found = []
    for stage, kind, micro, start, end, cpu in events:
        if kind == "L":
            continue
        if kind == "F" and (stage, micro) in losses:
            end, extra = losses[(stage, micro)][0], losses[(stage, micro)][1]
            cpu += extra
        ms = [(t - began) * 1e3 for t in (start, end)]
        found.append((stage, kind, micro, *ms, cpu * 1e3))
    return sorted(found, key=lambda op: op[3])


def place(run, stage):
    """(pipeline rank, chunk) of `stage`: round robin, rank r holding
    stages r, r + p, ...; or ZBV's V, r and 2p - 1 - r."""
    p = run.config.pp
    if run.config.pp_schedule == "zbv" and stage >= p:
        return 2 * p - 1 - stage, 1
    return stage % p, stage // p


def slots(run, step):
    """The measured slots of `step`, by pipeline rank, as the wall clock
    saw them (ms from the step's first forward)."""
    found = []
    for stage, kind, micro, start, end, _ in operations(run, step):
        rank, chunk = place(run, stage)
        found.append(
            Slot(rank, round(start, 3), round(end, 3), kind, micro, chunk)
        )
    return sorted(found)


def replayed(run, step):
    """`step` again, in the order each rank ran it, each forward or
    backward lasting its stage's median CPU time for that kind; a
    forward waits for the same micro-batch's forward on the stage
    before, a backward for the backward on the stage after (the last
    stage's for its own forward), a weight gradient for its backward."""
    ops = operations(run, step)
    last = max(op[0] for op in ops)
    costs = defaultdict(list)
    for stage, kind, *_, cpu in ops:
        costs[(stage, kind)].append(cpu)
    median = {key: statistics.median(c) for key, c in costs.items()}
    todo = {
        r: [op for op in ops if place(run, op[0])[0] == r]
        for r in range(run.config.pp)
    }
    done, free, found = {}, dict.fromkeys(todo, 0.0), []
    while any(todo.values()):
        for r, queue in todo.items():
            if not queue:
                continue
            stage, kind, micro = queue[0][:3]
            cpu = median[(stage, kind)]
            if kind == "F":
                needs = (stage - 1, "F", micro) if stage else None
            elif kind == "W":
                needs = (stage, "B", micro)
            elif stage < last:
                needs = (stage + 1, "B", micro)
            else:
                needs = (stage, "F", micro)
            if needs is not None and needs not in done:
                continue
            start = max(free[r], done.get(needs, 0.0))
            done[(stage, kind, micro)] = free[r] = start + cpu
            end = round(start + cpu, 3)
            chunk = place(run, stage)[1]
            found.append(Slot(r, round(start, 3), end, kind, micro, chunk))
            queue.pop(0)
    return sorted(found)


def stage_costs(run, step):
    """Each rank's median CPU time of a forward and of a backward, ms."""
    costs = defaultdict(list)
    for stage, kind, *_, cpu in operations(run, step):
        costs[(stage % run.config.pp, kind)].append(cpu)
    return [
        (
            statistics.median(costs[(r, "F")]),
            statistics.median(costs[(r, "B")]),
        )
        for r in range(run.config.pp)
    ]


def slowest(run, step):
    """The most a step of this schedule can idle when its stages take
    these times: every slot as long as the slowest stage's. Of each
    p (m + p - 1) slots, m p hold work, and that work takes the stages'
    mean forward and backward, not the slowest: idle <= 1 - (1 -
    bubble) x mean(F + B) / (max F + max B)."""
    costs = stage_costs(run, step)
    mean = statistics.mean(f + b for f, b in costs)
    worst = max(f for f, _ in costs) + max(b for _, b in costs)
    bubble = bubble_fraction(run.config.pp, run.config.pp_microbatches)
    return 1 - (1 - bubble) * mean / worst


def order(slots_):
    """Each rank's work list, (kind, micro, chunk) in the order it ran."""
    ranks = sorted({s.stage for s in slots_})
    return [
        [
            (s.kind, s.micro, s.chunk)
            for s in sorted(slots_, key=lambda s: s.start)
            if s.stage == r
        ]
        for r in ranks
    ]


def traced_steps(run):
    """The traced steps but the first, whose forward passes also agree
    the shapes the stages send each other."""
    return sorted({e[0] for e in run.measured.timeline})[1:]


def median_idle(run, of=slots):
    """The median idle share of the traced steps, as `of` lays them out."""
    return statistics.median(
        idle_fraction(of(run, s)) for s in traced_steps(run)
    )


def peak_in_flight(run):
    """The most micro-batches each pipeline rank held at once, for each
    traced step but the first: [[rank 0's peaks], [rank 1's], ...]."""
    steps = set(traced_steps(run))
    peaks = {}
    for step, rank, held in run.measured.peak_in_flight:
        if step in steps:
            peaks.setdefault(rank, []).append(held)
    return [peaks[r] for r in sorted(peaks)]


def pass_times(run):
    """The median CPU time of each kind of pass (F, B, W), in ms, over
    every stage and traced step; a loss counts with its forward."""
    costs = defaultdict(list)
    for step in traced_steps(run):
        for _, kind, *_, cpu in operations(run, step):
            costs[kind].append(cpu)
    return {kind: statistics.median(c) for kind, c in sorted(costs.items())}
