"""figure("memory") on the ZeRO page: model-state gigabytes per GPU of a
7B model under DDP and the three ZeRO stages, for 1 to 1024 GPUs
(memory_per_gpu)."""

from course.charts._common import P7B, WORLD_SIZES
from course.charts._svg import (
    INK,
    PALETTE,
    figure_html,
    log2_axis,
    new_figure,
    style,
)
from snippets.zero.memory import SHARDED, memory_per_gpu


def draw():
    gpu = 80
    names = {
        "ddp": "DDP",
        "zero1": "ZeRO-1",
        "zero2": "ZeRO-2",
        "zero3": "ZeRO-3",
    }
    curves = {
        s: [memory_per_gpu(s, P7B, n) for n in WORLD_SIZES] for s in SHARDED
    }
    big = WORLD_SIZES[-1]
    with style():
        fig = new_figure()
        ax = fig.add_subplot()
        ax.axhline(gpu, color=INK, linestyle="--", linewidth=1)
        ax.text(
            WORLD_SIZES[-1],
            gpu * 0.93,
            f"one {gpu} GB GPU ",
            va="top",
            ha="right",
            fontsize=9,
        )
        for (s, gbs), color, marker in zip(
            curves.items(), PALETTE[:4], "os^D", strict=True
        ):
            ax.plot(
                WORLD_SIZES,
                gbs,
                color=color,
                marker=marker,
                markersize=4,
                label=names[s],
            )
        log2_axis(ax, WORLD_SIZES)
        ax.set_yscale("log")
        ticks = [0.1, 0.3, 1, 3, 10, 30, 100]
        ax.set_yticks(ticks, [f"{t:g}" for t in ticks])
        ax.set_xlabel("world size N (GPUs)")
        ax.set_ylabel("GB per GPU (log scale)")
        ax.grid(True)
        ax.legend(loc="lower left", ncols=2, fontsize=9)
    ddp = curves["ddp"][0]
    return figure_html(
        fig,
        name="memory",
        title="Model-state memory per GPU under DDP and ZeRO",
        alt=(
            f"Log-scale line chart of gigabytes per GPU for a 7B model "
            f"against world size 1 to {big}. DDP is flat at {ddp:.0f} GB, "
            f"above a dashed {gpu} GB line. ZeRO-1 and ZeRO-2 fall and "
            f"level off; ZeRO-3 falls steadily to "
            f"{curves['zero3'][-1]:.2f} GB."
        ),
        caption=(
            f"DDP needs {ddp:.0f} GB on every GPU however many you add, "
            f"more than an {gpu} GB card. ZeRO-1 and ZeRO-2 level off near "
            f"{curves['zero1'][-1]:.0f} GB and {curves['zero2'][-1]:.0f} "
            f"GB, the parts they leave whole; only ZeRO-3 keeps falling as "
            f"1/N (7B parameters, 16 bytes each, GB = 10^9 bytes)."
        ),
    )
