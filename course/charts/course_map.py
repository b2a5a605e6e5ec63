"""figure("course-map") on the home page: the pages in reading order and
what each one adds. It draws from no lab."""

from course.charts._svg import (
    DARK_TEXT,
    PALETTE,
    bare,
    figure_html,
    new_figure,
    style,
    text_box,
)

# The lesson in reading order: (page, title, what it adds). The titles
# are mkdocs.yml's nav, shortened (tests/test_figures.py checks the
# order against the nav).

COURSE_MAP = (
    ("walls.md", "1. One GPU is not enough", "the memory and time walls"),
    ("parallelism.md", "2. Three ways to split", "data, tensor, pipeline"),
    ("ddp.md", "3. Data parallel, DDP", "the ring all-reduce, in bytes"),
    ("zero.md", "4. ZeRO and FSDP", "shard the training state"),
    ("activations.md", "4b. Activations", "recompute to save memory"),
    ("pipeline.md", "5. Tensor, pipeline", "split layers; the bubble"),
    ("zero-bubble.md", "5b. Zero-bubble", "split the backward pass"),
    ("context.md", "5c. Context parallel", "split the sequence"),
    ("experts.md", "5d. Experts", "route tokens to experts"),
    ("accumulation.md", "6. Accumulation", "big batch, small memory"),
    ("comms.md", "7. Communication", "when the link sets the pace"),
    ("fp8.md", "7b. FP8", "faster matmuls, not 2x"),
    ("strategy.md", "8. Choosing a strategy", "climb only when forced"),
    ("planner.md", "8b. Plan a job", "every layout, ranked"),
    ("planner-accuracy.md", "8c. How good is it?", "held to measured runs"),
    ("torchrun.md", "DDP and FSDP, torchrun", "the real thing, measured"),
)


def draw():
    n = len(COURSE_MAP)
    with style():
        fig = new_figure(4.8, 0.4 * n + 0.1)
        ax = fig.add_subplot()
        for i, (_, title, adds) in enumerate(COURSE_MAP):
            color = PALETTE[1] if i == n - 1 else PALETTE[0]
            text_box(ax, 0, i + 0.1, 2.3, 0.8, color)
            ax.text(
                0.08, i + 0.5, title, va="center", color=DARK_TEXT, fontsize=11
            )
            ax.text(2.38, i + 0.5, adds, va="center", fontsize=11)
        ax.set_xlim(0, 4.8)
        ax.set_ylim(n, 0)
        bare(ax)
    return figure_html(
        fig,
        name="course-map",
        title="Map of the course",
        alt=(
            f"A column of {n} boxes, the pages in reading order, each "
            f"with what it adds: "
            + "; ".join(f"{t}: {a}" for _, t, a in COURSE_MAP)
            + "."
        ),
        caption=(
            f"The {n} pages in reading order, and what each one adds. "
            f"Each page builds on the one above it; the last runs DDP and "
            f"FSDP for real under torchrun."
        ),
    )
