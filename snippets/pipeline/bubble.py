"""Share of a pipeline-parallel step that the stages spend idle."""

# --8<-- [start:model]
from snippets.checks import choice, count, number

SCHEDULES = ("gpipe", "1f1b", "interleaved")


def interleaved_rounds(stages, microbatches):
    """The rounds torch.distributed.pipelining's ScheduleInterleaved1F1B
    (torch 2.13) splits the micro-batches into: max(1, m // p). Each
    round of m / rounds micro-batches goes through every device's first
    chunk, then its second, and so on; m must divide into the rounds."""
    p, m = count("stages", stages), count("microbatches", microbatches)
    rounds = max(1, m // p)
    if m % rounds:
        raise ValueError(
            f"microbatches must be a multiple of the rounds, max(1, "
            f"microbatches // stages) = {rounds}, for the interleaved "
            f"schedule; got {m} on {p} stages"
        )
    return rounds


def bubble_fraction(stages, microbatches, schedule="gpipe", chunks=1):
    """Idle time of the pipeline as a fraction of the whole step.

    With p stages and m micro-batches the fill and drain cost p - 1
    micro-batch slots, out of m + p - 1 (GPipe paper, section 2.3).
    1F1B reorders the work but idles just as long. The interleaved
    schedule gives each device `chunks` = v smaller stages, which cuts
    the fill and drain to (p - 1) / v slots once m >= p; with fewer
    micro-batches than stages each missing one adds (v - 1) / v slot
    (measured on the slot-by-slot schedule, snippets/pipeline/schedule.py).
    """
    count("stages", stages)
    count("microbatches", microbatches)
    choice("schedule", schedule, SCHEDULES)
    v = count("chunks", chunks)
    if schedule != "interleaved" and v != 1:
        raise ValueError(
            f"chunks must be 1 for schedule {schedule!r}, got {chunks!r}"
        )
    idle = stages - 1
    if schedule == "interleaved" and v > 1:
        interleaved_rounds(stages, microbatches)
        idle = (idle + max(0, stages - microbatches) * (v - 1)) / v
    return idle / (microbatches + idle)


def megatron_ratio(fraction):
    """Convert an idle fraction to bubble time / ideal compute time,
    the measure of Megatron-LM (Narayanan et al. 2021, section 2.2)."""
    number("fraction", fraction, allow_minimum=True)
    if fraction >= 1:
        raise ValueError(f"fraction must be < 1, got {fraction!r}")
    return fraction / (1 - fraction)


# --8<-- [end:model]


if __name__ == "__main__":
    # --8<-- [start:demo]
    P = 4
    print(" m  gpipe/1f1b  interleaved v=2  bubble/ideal (gpipe)")
    for m in (1, 4, 6, 16, 64):
        plain = bubble_fraction(P, m)
        inter = bubble_fraction(P, m, "interleaved", 2)
        print(
            f"{m:>2}  {plain:10.1%}  {inter:15.1%}"
            f"  {megatron_ratio(plain):20.3f}"
        )
    # --8<-- [end:demo]
