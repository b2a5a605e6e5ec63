"""figure("comms") on the communication page: compute time against
all-reduce time of the comms lab's job as link bandwidth falls
(comms_cost, at what NCCL reaches on each link: REACHED)."""

from course.charts._common import COMMS_JOB
from course.charts._svg import INK, PALETTE, figure_html, new_figure, style
from snippets.comms.cost import REACHED, comms_cost


def _short(link):
    """'Ethernet, 10 Gb/s' -> '10 Gb/s Ethernet'; 'NVLink 4 (H100,...'
    -> 'NVLink 4'; 'InfiniBand NDR, 400 Gb/s' -> 'InfiniBand NDR'."""
    head, _, tail = link.partition(", ")
    if head == "Ethernet":
        return f"{tail} Ethernet"
    return head.split(" (")[0]


def draw():
    links = REACHED
    top, bottom = max(links.values()), min(links.values())
    sweep = [top * (bottom / top) ** (k / 60) for k in range(61)]
    runs = [comms_cost(interconnect_GBps=bw, **COMMS_JOB) for bw in sweep]
    compute = runs[0]["compute_s"]
    cross = runs[0]["crossover_GBps"]
    accum = 4
    cross4 = comms_cost(interconnect_GBps=top, accum_steps=accum, **COMMS_JOB)[
        "crossover_GBps"
    ]
    with style():
        fig = new_figure(6.4, 3.8)
        ax = fig.add_subplot()
        ax.plot(
            sweep,
            [r["comms_s"] for r in runs],
            color=PALETTE[1],
            label="all-reduce of the gradients",
        )
        ax.plot(
            sweep,
            [compute] * len(sweep),
            color=PALETTE[0],
            label="compute, 1 micro-batch per step",
        )
        ax.plot(
            sweep,
            [compute * accum] * len(sweep),
            color=PALETTE[0],
            linestyle="--",
            label=f"compute, {accum} micro-batches per step",
        )
        for x, text in (
            (cross, f"{cross:.1f} GB/s"),
            (cross4, f"{cross4:.1f} GB/s"),
        ):
            ax.axvline(x, color=INK, linestyle=":", linewidth=1)
            ax.text(x, 0.012, f" {text}", fontsize=9)
        for i, (link, bw) in enumerate(links.items()):
            t = comms_cost(interconnect_GBps=bw, **COMMS_JOB)["comms_s"]
            ax.plot([bw], [t], "o", color=PALETTE[1], markersize=4)
            # The line rises to the right: above-left and below-right of
            # a point are clear of it. The two NVLinks sit close.
            below = i == 0
            ax.annotate(
                _short(link),
                (bw, t),
                fontsize=8.5,
                ha="left" if below else "right",
                xytext=(5, -11) if below else (-5, 3),
                textcoords="offset points",
            )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(top * 1.3, bottom / 1.3)  # falling bandwidth: right
        ticks = [370, 100, 30, 10, 3, 1]
        ax.set_xticks(ticks, [str(t) for t in ticks])
        ax.minorticks_off()
        yt = [0.01, 0.1, 1, 10]
        ax.set_yticks(yt, [f"{t:g}" for t in yt])
        ax.set_ylim(0.01, 40)
        ax.set_xlabel("one-way link bandwidth per GPU, GB/s (falling ->)")
        ax.set_ylabel("seconds per optimizer step")
        ax.grid(True)
        ax.legend(loc="upper left", fontsize=9)
    slow = runs[-1]["comms_s"]
    return figure_html(
        fig,
        name="comms",
        title="Compute time against all-reduce time as bandwidth falls",
        alt=(
            f"Log-log chart of seconds per step against link bandwidth "
            f"falling from {top:g} to {bottom:g} GB/s. Compute is a flat "
            f"line at {compute:.2f} s; the all-reduce line rises from "
            f"{runs[0]['comms_s']:.3f} s to {slow:.1f} s and crosses it at "
            f"{cross:.1f} GB/s. Points mark NVLink, InfiniBand and "
            f"Ethernet."
        ),
        caption=(
            f"A 64-way DDP step of a 7B model (H100 at 40% of 989 TFLOP/s, "
            f"8192 tokens per GPU) computes for {compute:.2f} s on any "
            f"link; its all-reduce takes longer below {cross:.1f} GB/s, "
            f"between NDR and HDR InfiniBand, and {slow:.1f} s on 10 Gb/s "
            f"Ethernet. Accumulating {accum} micro-batches per step moves "
            f"the crossover to {cross4:.1f} GB/s."
        ),
    )
