"""figure("ring") on the DDP page: the steps of a ring all-reduce on
four ranks, and what each rank sends (allreduce_bytes)."""

import math

from course.charts._common import P7B
from course.charts._svg import (
    INK,
    PALETTE,
    bare,
    figure_html,
    new_figure,
    style,
    text_box,
)
from snippets.ddp.allreduce import allreduce_bytes


def draw():
    n = 4
    traffic = allreduce_bytes(P7B, 2, n)
    chunk = traffic["grad_GB"] / n
    steps = [("reduce-scatter", s) for s in range(n - 1)]
    steps += [("all-gather", s) for s in range(n - 1)]
    # Each step a rank sends one chunk, 1/N of the buffer, to the next
    # rank: 2 (N - 1) chunks are the lab's factor 2 (N - 1) / N.
    sent = len(steps) * chunk
    assert math.isclose(sent, traffic["sent_per_rank_GB"])
    colors = {"reduce-scatter": PALETTE[0], "all-gather": PALETTE[1]}
    with style():
        fig = new_figure(6.4, 3.0)
        ax = fig.add_subplot()
        for col, (phase, s) in enumerate(steps):
            for rank in range(n):
                if phase == "reduce-scatter":
                    c = (rank - s) % n
                else:
                    c = (rank + 1 - s) % n
                text_box(
                    ax,
                    col + 0.05,
                    rank + 0.08,
                    0.9,
                    0.84,
                    colors[phase],
                    f"c{c} \u2192 r{(rank + 1) % n}",
                )
            ax.text(col + 0.5, -0.15, f"step {col + 1}", ha="center")
        for rank in range(n):
            ax.text(-0.1, rank + 0.5, f"rank {rank}", ha="right", va="center")
        for phase, x0 in (("reduce-scatter", 0), ("all-gather", n - 1)):
            ax.text(
                x0 + (n - 1) / 2,
                n + 0.35,
                f"{phase}: {n - 1} steps",
                ha="center",
                va="center",
                color=INK,
            )
        ax.set_xlim(-1.1, len(steps))
        ax.set_ylim(n + 0.6, -0.5)
        bare(ax)
    return figure_html(
        fig,
        name="ring",
        title="The steps of a ring all-reduce on four ranks",
        alt=(
            f"Grid of {len(steps)} steps for {n} ranks. In each of the "
            f"first {n - 1} steps, the reduce-scatter, every rank sends "
            f"one chunk of the gradient to the next rank, which adds it "
            f"to its own; in the last {n - 1}, the all-gather, every rank "
            f"passes on a finished chunk. Each cell names the chunk sent "
            f"and the rank it goes to."
        ),
        caption=(
            f"A ring all-reduce of {n} ranks cuts the gradient into {n} "
            f"chunks: c2 \u2192 r1 means the rank sends chunk 2 to rank 1. "
            f"After {n - 1} reduce-scatter steps each rank owns one summed "
            f"chunk; {n - 1} all-gather steps hand those round. Each rank "
            f"sends {len(steps)} chunks of 1/{n} of the gradient: for 7B "
            f"bf16 gradients ({traffic['grad_GB']:g} GB) that is "
            f"{traffic['sent_per_rank_GB']:g} GB, the factor "
            f"{traffic['factor']:g} of allreduce_bytes."
        ),
    )
