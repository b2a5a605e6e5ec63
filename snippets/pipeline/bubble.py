"""Share of a pipeline-parallel step that the stages spend idle."""

# --8<-- [start:model]
from snippets.checks import choice, count, number

SCHEDULES = ("gpipe", "1f1b", "interleaved")


def bubble_fraction(stages, microbatches, schedule="gpipe", chunks=1):
    """Idle time of the pipeline as a fraction of the whole step.

    With p stages and m micro-batches the fill and drain cost p - 1
    micro-batch slots, out of m + p - 1 (GPipe paper, section 2.3).
    1F1B reorders the work but idles just as long. The interleaved
    schedule gives each device `chunks` = v smaller stages, which cuts
    the fill and drain to (p - 1) / v slots. It runs the micro-batches
    in groups of p, so m must be a multiple of p (Megatron-LM 2021,
    section 2.2.2).
    """
    count("stages", stages)
    count("microbatches", microbatches)
    choice("schedule", schedule, SCHEDULES)
    count("chunks", chunks)
    if schedule != "interleaved" and chunks != 1:
        raise ValueError(
            f"chunks must be 1 for schedule {schedule!r}, got {chunks!r}"
        )
    if schedule == "interleaved" and chunks > 1 and microbatches % stages:
        raise ValueError(
            f"microbatches must be a multiple of stages ({stages}) for the "
            f"interleaved schedule, got {microbatches!r}"
        )
    idle = (stages - 1) / chunks
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
    for m in (1, 4, 16, 64):
        plain = bubble_fraction(P, m)
        inter = "-"  # interleaving runs micro-batches in groups of P
        if m % P == 0:
            inter = f"{bubble_fraction(P, m, 'interleaved', 2):.1%}"
        print(
            f"{m:>2}  {plain:10.1%}  {inter:>15}"
            f"  {megatron_ratio(plain):20.3f}"
        )
    # --8<-- [end:demo]
