"""How often to checkpoint a job that fails every few hours."""

# --8<-- [start:model]
import math

from snippets.checks import number


def checkpoint_interval(mtbf_s, blocking_s):
    """Young's first-order optimum, sqrt(2 x MTBF x C): the seconds of
    training between checkpoints that lose the least time, for a mean
    time between failures mtbf_s and a checkpoint that stops training
    for blocking_s. With it, about C / interval is spent saving and
    interval / (2 MTBF) redoing the work lost at each failure."""
    number("mtbf_s", mtbf_s)
    number("blocking_s", blocking_s)
    interval = math.sqrt(2 * mtbf_s * blocking_s)
    lost = blocking_s / interval + interval / (2 * mtbf_s)
    return {"interval_s": interval, "lost_share": lost}


# --8<-- [end:model]


if __name__ == "__main__":
    # --8<-- [start:demo]
    # Llama 3 405B: 466 interruptions in a 54-day period (section 3.3.4).
    mtbf = 54 * 86_400 / 466
    print(f"Mean time between interruptions: {mtbf / 3600:.2f} h.")
    print()
    print("| checkpoint blocks training for | every | time lost |")
    print("| ---: | ---: | ---: |")
    for blocking in (300, 60, 5):
        r = checkpoint_interval(mtbf, blocking)
        print(
            f"| {blocking} s | {r['interval_s'] / 60:.0f} min"
            f" | {r['lost_share']:.1%} |"
        )
    # --8<-- [end:demo]
