"""figure("walls") on the first page: the memory wall and the time wall
of a 7B model (state_GB, training_days)."""

from course.charts._common import P7B
from course.charts._svg import (
    INK,
    PALETTE,
    figure_html,
    new_figure,
    style,
    text_on,
)
from snippets.walls.walls import (
    BYTES_MIXED_ADAM,
    MIXED_ADAM,
    state_GB,
    training_days,
)


def draw():
    gpu, peak, mfu, tokens = 80, 989, 0.40, 2_000_000_000_000
    parts = {what: state_GB(P7B, size) for what, size in MIXED_ADAM.items()}
    total = state_GB(P7B)
    gpus = (1, 64, 1024)
    days = [training_days(P7B, tokens, g, peak, mfu) for g in gpus]
    short = ("weights", "grads", "master", "moment 1", "moment 2")
    with style():
        fig = new_figure(6.4, 3.6)
        top, bottom = fig.subplots(2, 1, height_ratios=(1, 1.3))
        left = 0
        for name, gb, color in zip(
            short, parts.values(), PALETTE, strict=False
        ):
            top.barh(0, gb, left=left, color=color, height=0.6)
            top.text(
                left + gb / 2,
                0,
                name,
                ha="center",
                va="center",
                color=text_on(color),
                rotation=0 if gb > 20 else 90,
                fontsize=9,
            )
            left += gb
        top.axvline(gpu, color=INK, linestyle="--", linewidth=1)
        top.text(gpu, 0.45, f" one H100: {gpu} GB", va="bottom")
        top.text(total, 0, f" {total:.0f} GB", va="center")
        top.set_xlim(0, total * 1.25)
        top.set_yticks([])
        top.set_title("memory: 7B training state", loc="left")
        top.set_xlabel("GB")
        bottom.barh(range(len(gpus)), days, color=PALETTE[0], height=0.6)
        for y, d in enumerate(days):
            bottom.text(d * 1.1, y, f"{d:,.1f} days", va="center")
        bottom.set_xscale("log")
        bottom.set_xlim(1, max(days) * 20)
        ticks = [1, 10, 100, 1000, 10000]
        bottom.set_xticks(ticks, [f"{v:,}" for v in ticks])
        bottom.minorticks_off()
        bottom.set_yticks(
            range(len(gpus)), [f"{g} GPU{'s' * (g > 1)}" for g in gpus]
        )
        bottom.set_ylim(len(gpus) - 0.5, -0.5)
        bottom.set_title("time: 2T tokens at 40% of 989 TFLOP/s", loc="left")
        bottom.set_xlabel("days (log scale)")
        for ax in (top, bottom):
            ax.tick_params(left=False)
            ax.spines["left"].set_visible(False)
    return figure_html(
        fig,
        name="walls",
        title="The memory wall and the time wall for a 7B model",
        alt=(
            f"Two bar charts. Top: the {total:.0f} GB training state of a "
            f"7B model in five parts, weights, gradients, fp32 master "
            f"copy and two Adam moments, past a dashed line at one "
            f"{gpu} GB GPU. Bottom: days to train on 2 trillion tokens, "
            f"{days[0]:,.0f} on one GPU, {days[1]:,.1f} on 64 and "
            f"{days[2]:,.1f} on 1024, on a log scale."
        ),
        caption=(
            f"Two walls. The training state of a 7B model, "
            f"{BYTES_MIXED_ADAM} bytes per parameter, takes {total:.0f} GB "
            f"and no {gpu} GB GPU holds it; and one GPU would train it on "
            f"2T tokens for {days[0]:,.0f} days, {days[2]:,.1f} on "
            f"{gpus[2]} (state_GB, training_days)."
        ),
    )
