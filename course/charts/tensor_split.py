"""figure("tensor-split") on the pipeline page: how tensor parallelism
splits the MLP's two matrices, and what the all-reduce costs
(tp_bytes_per_layer, tp_layer_seconds)."""

from matplotlib.patches import Rectangle

from course.charts._svg import (
    INK,
    PALETTE,
    arrow,
    bare,
    figure_html,
    new_figure,
    style,
    text_box,
)
from snippets.pipeline.tensor import tp_bytes_per_layer, tp_layer_seconds


def _matrix(ax, x, y, size, t, part, split, color, name):
    """A weight matrix as a square cut into t slices (split "col" or
    "row"), the slice `part` filled: the one this GPU holds."""
    for i in range(t):
        if split == "col":
            box = (x + i * size / t, y, size / t, size)
        else:
            box = (x, y + i * size / t, size, size / t)
        ax.add_patch(
            Rectangle(
                box[:2],
                *box[2:],
                facecolor=color if i == part else "none",
                edgecolor=INK,
                linewidth=0.8,
            )
        )
    ax.text(x + size / 2, y + size + 0.12, name, ha="center", va="top")


def draw():
    t, h, s = 2, 4096, 4096
    t8 = 8
    mb = tp_bytes_per_layer(s, 1, h, t8) / 1e6
    compute, comms = tp_layer_seconds(s, 1, h, t8, 989 * 0.40, 450)
    with style():
        fig = new_figure(6.4, 3.3)
        ax = fig.add_subplot()
        size = 1.0
        for gpu in range(t):
            y = gpu * 1.9
            mid = y + size / 2
            ax.text(-0.15, mid, f"GPU {gpu + 1}", ha="right", va="center")
            text_box(ax, 0, y + 0.2, 0.6, 0.6, PALETTE[4], "X")
            arrow(ax, 0.65, 0.95, mid)
            _matrix(ax, 1.0, y, size, t, gpu, "col", PALETTE[0], "A: columns")
            arrow(ax, 2.05, 2.35, mid)
            text_box(
                ax, 2.38, y + 0.2, 1.1, 0.6, PALETTE[0], f"GeLU(XA{gpu + 1})"
            )
            arrow(ax, 3.55, 3.9, mid)
            _matrix(ax, 3.95, y, size, t, gpu, "row", PALETTE[1], "B: rows")
            arrow(ax, 5.0, 5.3, mid)
            text_box(ax, 5.35, y + 0.2, 0.6, 0.6, PALETTE[1], f"Z{gpu + 1}")
            arrow(ax, 6.0, 6.3, mid)
        text_box(
            ax, 6.35, 0.2, 1.1, 1.9 + 0.6, PALETTE[2], "all-reduce\nZ1 + Z2"
        )
        ax.text(
            3.6,
            3.5,
            "no communication between the two matmuls",
            ha="center",
            va="center",
        )
        ax.set_xlim(-0.95, 7.55)
        ax.set_ylim(3.7, -0.1)
        bare(ax)
    return figure_html(
        fig,
        name="tensor-split",
        title="Tensor parallelism splits the MLP's two matrices",
        alt=(
            f"Diagram of one MLP block on {t} GPUs. Each GPU holds the "
            f"whole input X, one column slice of the first matrix A and "
            f"the matching row slice of the second matrix B. It computes "
            f"GeLU of X times its slice of A, multiplies by its slice of "
            f"B, and the partial results Z1 and Z2 meet in one all-reduce."
        ),
        caption=(
            f"Split A by columns and B by rows, and each GPU runs the "
            f"whole MLP on its slice with no traffic in between; one "
            f"all-reduce sums the partial outputs. With t = {t8} and "
            f"h = {h}, s = {s}, the forward and backward all-reduces of a "
            f"layer send {mb:.1f} MB per GPU, {comms * 1e3:.2f} ms on "
            f"NVLink against {compute * 1e3:.2f} ms of compute "
            f"(tp_bytes_per_layer, tp_layer_seconds)."
        ),
    )
