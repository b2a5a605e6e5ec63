"""figure("torchrun") on the torchrun page: what FSDP trades against DDP
on two ranks, the prediction the run checks (memory_per_gpu,
comm_bytes)."""

from course.charts._common import P7B
from course.charts._svg import PALETTE, figure_html, new_figure, style
from snippets.zero.memory import ALIASES, memory_per_gpu
from snippets.zero.traffic import COLLECTIVES, comm_bytes


def draw():
    n = 2  # the CPU run on the page: two ranks
    pair = ("ddp", "fsdp")
    held = {s: memory_per_gpu(s, P7B, n) for s in pair}
    sent = {s: comm_bytes(s, P7B, n) for s in pair}
    names = {"ddp": "DDP", "fsdp": "FSDP"}
    steps = {s: COLLECTIVES[ALIASES.get(s, s)] for s in pair}
    with style():
        fig = new_figure(6.4, 2.9)
        left, right = fig.subplots(1, 2, sharey=True)
        ys = range(len(pair))
        for ax, values, color, title in (
            (left, held, PALETTE[0], "held per rank"),
            (right, sent, PALETTE[1], "sent per rank per step"),
        ):
            ratios = [values[s] / values["ddp"] for s in pair]
            ax.barh(ys, ratios, color=color, height=0.55)
            for y, r in zip(ys, ratios, strict=True):
                ax.text(r + 0.04, y, f"{r:g}x", va="center")
            ax.set_xlim(0, 2)
            ax.set_title(title, loc="left")
            ax.set_xlabel("times DDP's")
            ax.tick_params(left=False)
            ax.spines["left"].set_visible(False)
        left.set_yticks(ys, [names[s] for s in pair])
        left.set_ylim(len(pair) - 0.4, -0.9)
        for y, s in zip(ys, pair, strict=True):
            right.text(0.04, y - 0.42, " + ".join(steps[s]), fontsize=9)
    mem = held["fsdp"] / held["ddp"]
    traffic = sent["fsdp"] / sent["ddp"]
    return figure_html(
        fig,
        name="torchrun",
        title="What FSDP trades against DDP on two ranks",
        alt=(
            f"Two bar charts for {n} ranks. Model state held per rank: "
            f"DDP 1x, FSDP {mem:g}x. Bytes sent per rank per step: DDP "
            f"1x, in a reduce-scatter and an all-gather; FSDP "
            f"{traffic:g}x, in two all-gathers and a reduce-scatter."
        ),
        caption=(
            f"The prediction the run below checks: on {n} ranks FSDP "
            f"keeps {mem:g} of DDP's model state per rank and sends "
            f"{traffic:g} times its bytes, because it gathers the weights "
            f"again for the backward pass (memory_per_gpu, comm_bytes; "
            f"the ratios hold for any model size)."
        ),
    )
