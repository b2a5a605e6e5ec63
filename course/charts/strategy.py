"""figure("strategy") on the strategy page: choose_strategy's rules as a
chain of yes-or-no questions, drawn from its own RULES."""

import textwrap

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
from snippets.strategy.choose import RULES, RUNGS


def _question(name):
    return name.replace("_", " ").replace("gpu", "GPU") + "?"


def strategy_chain():
    """choose_strategy's rules (its RULES, in the order it tries them)
    as [(question, rung), ...] and the rung when every answer is no."""
    chain = [(_question(q), RUNGS[r]) for q, r in RULES if q is not None]
    last = [RUNGS[r] for q, r in RULES if q is None]
    if len(last) != 1:
        raise ValueError("RULES must end in one (None, rung) rule")
    return chain, last[0]


def draw():
    chain, last = strategy_chain()
    rows = len(chain) + 1
    with style():
        fig = new_figure(6.4, 0.95 * rows + 0.2)
        ax = fig.add_subplot()
        for y, (question, rung) in enumerate(chain):
            text_box(ax, 0, y + 0.15, 2.4, 0.6, PALETTE[4], question)
            arrow(ax, 2.45, 3.05, y + 0.45)
            ax.text(
                2.75,
                y + 0.38,
                "yes",
                ha="center",
                va="bottom",
            )
            text_box(
                ax,
                3.1,
                y + 0.05,
                3.3,
                0.8,
                PALETTE[0],
                textwrap.fill(rung, 38, break_on_hyphens=False),
            )
            ax.annotate(
                "",
                (1.2, y + 1.15),
                (1.2, y + 0.75),
                arrowprops={"arrowstyle": "->", "color": INK},
            )
            ax.text(1.3, y + 0.95, "no", va="center")
        text_box(
            ax,
            0,
            len(chain) + 0.15,
            6.4,
            0.7,
            PALETTE[0],
            textwrap.fill(last, 70),
        )
        ax.set_xlim(0, 6.4)
        ax.set_ylim(rows, 0)
        bare(ax)
    return figure_html(
        fig,
        name="strategy",
        title="The strategy ladder as yes-or-no questions",
        alt=(
            "Flowchart of choose_strategy. "
            + " ".join(f"{q} If yes: {r}. Otherwise:" for q, r in chain)
            + f" {last}."
        ),
        caption=(
            f"Ask the {len(chain)} questions top to bottom and stop at the "
            f"first yes. The chart is drawn from RULES, the list "
            f"choose_strategy itself walks, so it changes when the "
            f"function's rules do."
        ),
    )
