"""figure("expert-load") on the experts page: the tokens a skewed router
sends each of 16 experts, against the capacity of three capacity
factors (synthetic_router, route)."""

from course.charts._svg import INK, PALETTE, figure_html, new_figure, style
from snippets.experts.routing import route, synthetic_router

FACTORS = (1.0, 1.25, 2.0)


def draw():
    tokens, experts, k = 4096, 16, 2
    probs = synthetic_router(tokens, experts, seed=0, skew=1.0)
    runs = {cf: route(probs, k, cf) for cf in FACTORS}
    demand = runs[1.0]["demand"]
    with style():
        fig = new_figure(6.4, 3.2)
        ax = fig.add_subplot()
        ax.bar(range(1, experts + 1), demand, color=PALETTE[0], width=0.7)
        for cf, color, dash in zip(
            FACTORS, PALETTE[1:4], ("-", "--", ":"), strict=True
        ):
            c = runs[cf]["capacity"]
            ax.hlines(
                c, 0.3, experts + 0.5, color=color, linestyle=dash, lw=1.6
            )
            ax.text(
                experts + 0.6,
                c,
                f"capacity factor {cf:g}: {c}",
                va="center",
                fontsize=9,
                color=INK,
            )
        ax.set_xlim(0.3, experts + 6.6)
        ax.set_xticks([1, 4, 8, 12, 16])
        ax.set_xlabel("expert")
        ax.set_ylabel("tokens sent")
    mean = tokens * k // experts
    return figure_html(
        fig,
        name="expert-load",
        title="Tokens a skewed router sends 16 experts, against capacity",
        alt=(
            f"Bars for {experts} experts rising from about {min(demand)} "
            f"tokens for the first to {max(demand)} for the last, with "
            f"horizontal lines at the capacities "
            + ", ".join(str(runs[cf]["capacity"]) for cf in FACTORS)
            + "."
        ),
        caption=(
            f"{tokens} tokens, top-{k}: on average {mean} per expert. "
            f"Every bar above a line loses its excess: "
            + ", ".join(
                f"{runs[cf]['dropped']} assignments dropped at {cf:g}"
                for cf in FACTORS
            )
            + "."
        ),
    )
