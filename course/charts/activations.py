"""figure("activations") on the activations page: the activation memory
of a 7B model under each remedy (activation_bytes_per_gpu)."""

from course.charts._common import P7B
from course.charts._svg import (
    DARK_TEXT,
    INK,
    PALETTE,
    figure_html,
    new_figure,
    style,
)
from snippets.activations.memory import activation_bytes_per_gpu
from snippets.units import GB
from snippets.walls.walls import state_GB


def draw():
    seven_b = {"seq_len": 4096, "micro_batch": 1, "hidden": 4096}
    cases = (
        ("all stored", {}),
        ("FlashAttention", {"flash_attention": True}),
        ("selective recompute", {"recompute": "selective"}),
        ("full recompute", {"recompute": "full"}),
        (
            "TP 8 + SP, Flash",
            {
                "tp": 8,
                "sequence_parallel": True,
                "flash_attention": True,
            },
        ),
    )
    gbs = [
        activation_bytes_per_gpu(32, heads=32, **seven_b, **extra) / GB
        for _, extra in cases
    ]
    state = state_GB(P7B)
    with style():
        fig = new_figure(6.4, 3.0)
        ax = fig.add_subplot()
        ys = range(len(cases))
        ax.barh(ys, gbs, color=PALETTE[0], height=0.6)
        for y, gb in zip(ys, gbs, strict=True):
            inside = gb > max(gbs) / 2  # clear of the dashed line
            ax.text(
                gb - 1.5 if inside else gb + 1.5,
                y,
                f"{gb:.2f} GB",
                va="center",
                ha="right" if inside else "left",
                color=DARK_TEXT if inside else INK,
            )
        ax.axvline(state, color=INK, linestyle="--", linewidth=1)
        ax.text(
            state,
            len(cases) - 0.35,
            f"training state {state:.0f} GB ",
            ha="right",
            va="center",
        )
        ax.set_yticks(ys, [name for name, _ in cases])
        ax.set_ylim(len(cases) - 0.1, -0.5)
        ax.set_xlim(0, max(max(gbs), state) * 1.2)
        ax.set_xlabel("GB of activations, 7B, one 4096-token sequence")
        ax.tick_params(left=False)
        ax.spines["left"].set_visible(False)
    return figure_html(
        fig,
        name="activations",
        title="Activation memory of a 7B model under each remedy",
        alt=(
            f"Horizontal bars of activation gigabytes for one 4096-token "
            f"sequence through a 7B model: all stored {gbs[0]:.2f}, "
            f"FlashAttention {gbs[1]:.2f}, selective recomputation "
            f"{gbs[2]:.2f}, full recomputation {gbs[3]:.2f}, tensor "
            f"parallel 8 with sequence parallelism {gbs[4]:.2f}. A dashed "
            f"line marks the {state:.0f} GB training state."
        ),
        caption=(
            f"Stored in full, one sequence's activations take "
            f"{gbs[0]:.2f} GB, close to the {state:.0f} GB of weights, "
            f"gradients and Adam state; dropping the attention scores "
            f"leaves {gbs[1]:.2f} GB and full recomputation "
            f"{gbs[3]:.2f} GB (activation_bytes_per_gpu)."
        ),
    )
