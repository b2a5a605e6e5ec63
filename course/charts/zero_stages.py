"""figure("zero-stages") on the ZeRO page: what each ZeRO stage keeps
per GPU, split into parameters, gradients and optimizer state
(memory_per_gpu)."""

import math

from course.charts._common import P7B
from course.charts._svg import INK, PALETTE, figure_html, new_figure, style
from snippets.zero.memory import SHARDED, memory_per_gpu


def _state_parts(strategy, params, world_size):
    """GB per GPU of (parameters, gradients, optimizer state), each
    measured with memory_per_gpu by switching the others off."""
    full = memory_per_gpu(strategy, params, world_size)
    no_optim = memory_per_gpu(strategy, params, world_size, bytes_optim=0)
    grads4 = memory_per_gpu(
        strategy, params, world_size, bytes_grad=4, bytes_optim=0
    )
    grad = grads4 - no_optim  # 2 bytes of gradient more
    parts = (no_optim - grad, grad, full - no_optim)
    assert math.isclose(sum(parts), full)
    return parts


def draw():
    n, gpu = 8, 80
    names = {"ddp": "DDP", "zero1": "ZeRO-1", "zero2": "ZeRO-2"}
    names["zero3"] = "ZeRO-3"
    parts = {s: _state_parts(s, P7B, n) for s in SHARDED}
    kinds = ("parameters (bf16)", "gradients (bf16)", "optimizer (fp32)")
    with style():
        fig = new_figure(6.4, 3.2)
        ax = fig.add_subplot()
        rows = list(reversed(SHARDED))
        for y, s in enumerate(rows):
            left = 0
            for kind, gb, color in zip(kinds, parts[s], PALETTE, strict=False):
                ax.barh(y, gb, left=left, color=color, height=0.62, label=kind)
                left += gb
            ax.text(left + 1.5, y, f"{left:.2f} GB", va="center")
        ax.axvline(gpu, color=INK, linestyle="--", linewidth=1)
        ax.text(gpu, len(rows) - 0.45, f" one {gpu} GB GPU", va="center")
        ax.set_yticks(range(len(rows)), [names[s] for s in rows])
        ax.set_xlim(0, max(sum(p) for p in parts.values()) * 1.2)
        ax.set_xlabel(f"GB per GPU, 7B model on {n} GPUs")
        ax.tick_params(left=False)
        ax.spines["left"].set_visible(False)
        handles, labels = ax.get_legend_handles_labels()
        ax.legend(
            handles[:3],
            labels[:3],
            loc="upper center",
            bbox_to_anchor=(0.5, -0.28),
            ncols=3,
        )
    ddp, z1, z2, z3 = (sum(parts[s]) for s in SHARDED)
    return figure_html(
        fig,
        name="zero-stages",
        title="What each ZeRO stage keeps per GPU",
        alt=(
            f"Stacked horizontal bars of gigabytes per GPU for a 7B model "
            f"on {n} GPUs, split into parameters, gradients and optimizer "
            f"state. DDP {ddp:.2f} GB, ZeRO-1 {z1:.2f}, ZeRO-2 {z2:.2f}, "
            f"ZeRO-3 {z3:.2f}; a dashed line marks an {gpu} GB GPU."
        ),
        caption=(
            f"Each stage shards one more part across the {n} GPUs: ZeRO-1 "
            f"the optimizer state (the widest bar, "
            f"{parts['ddp'][2]:.0f} GB under DDP), ZeRO-2 the gradients "
            f"too, ZeRO-3 the parameters as well. Per GPU: {ddp:.2f}, "
            f"{z1:.2f}, {z2:.2f} and {z3:.2f} GB (memory_per_gpu, 16 bytes "
            f"per parameter)."
        ),
    )
