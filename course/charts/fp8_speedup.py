"""figure("fp8-speedup") on the FP8 page: a step's speed-up against the
share of it in matrix multiplies (fp8_speedup), beside speed-ups
torchtitan measured."""

from course.charts._svg import INK, PALETTE, figure_html, new_figure, style
from snippets.fp8.speedup import fp8_speedup

CURVES = (  # matmul speed-up, cast overhead (share of the bf16 step), label
    (2.0, 0.0, "matmuls 2x, casts free"),
    (2.0, 0.05, "matmuls 2x, casts 5%"),
    (1.5, 0.05, "matmuls 1.5x, casts 5%"),
)
MEASURED = {  # tokens/s per GPU, bf16 and FP8 (docs/fp8.md has sources)
    "Llama 3.1 8B, H100, Float8": (6667, 8532),
    "Llama 3 8B, B200, MXFP8": (8307.5, 9969.0),
    "Llama 3 8B, B200, Float8 rowwise": (8307.5, 8640.5),
}


def draw():
    shares = [i / 100 for i in range(101)]
    with style():
        fig = new_figure(6.4, 3.4)
        ax = fig.add_subplot()
        for (s, o, label), color in zip(CURVES, PALETTE, strict=False):
            ax.plot(
                shares,
                [fp8_speedup(g, s, o) for g in shares],
                color=color,
                label=label,
            )
        dashes = (":", "-.", (0, (1, 4)))
        for (run, (bf16, fp8)), dash in zip(
            MEASURED.items(), dashes, strict=True
        ):
            ax.axhline(
                fp8 / bf16,
                color=INK,
                linestyle=dash,
                linewidth=1,
                label=f"measured: {run}, {fp8 / bf16:.2f}x",
            )
        ax.set_xlim(0, 1)
        ax.set_ylim(0.95, 2.05)
        ax.set_xlabel("share of the bf16 step in matrix multiplies")
        ax.set_ylabel("step speed-up")
        ax.xaxis.set_major_formatter("{x:.0%}")
        ax.legend(loc="upper left", fontsize=8.5)
    top = fp8_speedup(0.9, 2.0, 0.05)
    return figure_html(
        fig,
        name="fp8-speedup",
        title="FP8 step speed-up against the share in matrix multiplies",
        alt=(
            "Three rising curves from 1x at no matrix multiplies to at "
            "most 2x when the step is all matrix multiplies, and dotted "
            "lines at the measured speed-ups "
            + ", ".join(f"{f / b:.2f}x" for b, f in MEASURED.values())
            + "."
        ),
        caption=(
            f"Amdahl's law: only the matrix multiplies get faster. A step "
            f"90% in them gains {top:.2f}x if they run twice as fast and "
            f"the casts cost 5% of the step; the horizontal lines are what "
            f"torchtitan and torchao measured on whole steps."
        ),
    )
