"""figure("planner") on the planner page: every layout the planner tried
for Llama 3 70B on 64 H100s, memory against throughput (plan_layouts)."""

import math

from course.charts._svg import INK, PALETTE, figure_html, new_figure, style
from snippets.planner.layouts import plan_layouts
from snippets.planner.model import MODELS, cluster

PLANNER_JOB = {"global_batch_tokens": 4 * 1024 * 1024, "micro_batch": 1}


def draw():
    nodes = cluster("h100-80gb", 8)
    plan = plan_layouts(MODELS["llama3-70b"], nodes, PLANNER_JOB)
    ranked = plan["ranked"]
    gpu = nodes["gpu_memory_GB"]
    fit = [r for r in ranked if r["fits"]]
    over = [r for r in ranked if not r["fits"]]
    best = max(fit, key=lambda r: r["tokens_per_s"])
    with style():
        fig = new_figure(6.4, 3.4)
        ax = fig.add_subplot()
        for rows, color, marker, label in (
            (fit, PALETTE[0], "o", f"fits ({len(fit)})"),
            (over, PALETTE[1], "x", f"does not fit ({len(over)})"),
        ):
            # layouts closer than a marker's width are drawn once: a
            # hundredth of a decade of memory, a thousand tokens/s
            spots = sorted(
                {
                    (
                        round(math.log10(r["memory_per_gpu_GB"]["total"]), 2),
                        round(r["tokens_per_s"] / 1000, 0),
                    )
                    for r in rows
                }
            )
            ax.plot(
                [10**log for log, _ in spots],
                [k for _, k in spots],
                marker,
                color=color,
                markersize=4,
                label=label,
                linestyle="none",
            )
        ax.axvline(gpu, color=INK, linestyle="--", linewidth=1)
        ax.text(gpu, 0.02, f" {gpu} GB", transform=ax.get_xaxis_transform())
        x, y = best["memory_per_gpu_GB"]["total"], best["tokens_per_s"]
        ax.annotate(
            "fastest that fits",
            (x, y / 1000),
            xytext=(-30, 12),
            textcoords="offset points",
            ha="right",
            arrowprops={"arrowstyle": "->", "color": INK, "linewidth": 1},
        )
        ax.set_xscale("log")
        ticks = [20, 50, 100, 200, 500, 1000]
        ax.set_xticks(ticks, [str(v) for v in ticks])
        ax.minorticks_off()
        ax.set_xlabel("GB per GPU (log scale)")
        ax.set_ylabel("thousand tokens/s")
        ax.grid(True)
        ax.legend(loc="lower right")
    return figure_html(
        fig,
        name="planner",
        title="Every layout the planner tried for Llama 3 70B",
        alt=(
            f"Scatter of {len(ranked)} layouts of Llama 3 70B on 64 "
            f"H100s: memory per GPU on a log scale against throughput. "
            f"{len(fit)} fit under a dashed line at {gpu} GB; the "
            f"fastest of them runs "
            f"{y:,.0f} tokens/s at {x:.1f} GB per GPU."
        ),
        caption=(
            f"The planner scores all {len(ranked)} layouts; {len(fit)} "
            f"fit in memory. The fastest that fits, "
            f"{y:,.0f} tokens/s at {x:.1f} GB per GPU, is the answer at "
            f"the top of the page (plan_layouts)."
        ),
    )
