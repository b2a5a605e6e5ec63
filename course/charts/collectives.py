"""figure("collectives") on the communication page: the collectives that
snippets/torchrun/collectives.py timed on 2 and 4 CPU ranks (gloo),
against the alpha-beta model fitted to them (snippets/comms/alphabeta.py)."""

from course.charts._svg import PALETTE, figure_html, new_figure, style
from course.instruments import results
from snippets.comms.alphabeta import (
    busbw_GBps,
    fit,
    latency_bound_below,
    ring_seconds,
)

MARKERS = {"all_reduce": "o", "all_gather": "s", "reduce_scatter": "^"}
NAMES = {
    "all_reduce": "all-reduce",
    "all_gather": "all-gather",
    "reduce_scatter": "reduce-scatter",
}


def measured(ranks):
    """The rows of the benchmark on `ranks`, as the lab's points."""
    rows = results.load(f"collectives{ranks}")["rows"]
    return [(r["kind"], r["ranks"], r["bytes"], r["seconds"]) for r in rows]


def fitted(ranks):
    """(alpha, beta) of the ranks' all-reduce times."""
    return fit([p for p in measured(ranks) if p[0] == "all_reduce"])


def draw():
    with style():
        fig = new_figure(6.4, 3.6)
        left, right = fig.subplots(1, 2)
        for color, n in zip(PALETTE, (2, 4), strict=False):
            alpha, beta = fitted(n)
            points = [p for p in measured(n) if p[0] == "all_reduce"]
            sizes = [p[2] for p in points]
            left.plot(
                sizes,
                [p[3] * 1e3 for p in points],
                MARKERS["all_reduce"],
                color=color,
                markersize=4,
                label=f"{n} ranks, measured",
            )
            left.plot(
                sizes,
                [
                    ring_seconds("all_reduce", n, s, alpha, beta) * 1e3
                    for s in sizes
                ],
                color=color,
                label=f"{n} ranks, fitted",
            )
            left.axvline(
                latency_bound_below(n, alpha, beta),
                color=color,
                linestyle=":",
                linewidth=1,
            )
        for kind, marker in MARKERS.items():
            points = [p for p in measured(2) if p[0] == kind]
            right.plot(
                [p[2] for p in points],
                [busbw_GBps(*p) for p in points],
                marker,
                color=PALETTE[0] if kind == "all_reduce" else PALETTE[2],
                fillstyle="full" if kind == "all_reduce" else "none",
                markersize=4,
                label=NAMES[kind],
            )
        alpha, beta = fitted(2)
        sizes = [p[2] for p in measured(2) if p[0] == "all_reduce"]
        right.plot(
            sizes,
            [
                busbw_GBps(
                    "all_reduce",
                    2,
                    s,
                    ring_seconds("all_reduce", 2, s, alpha, beta),
                )
                for s in sizes
            ],
            color=PALETTE[0],
            label="fitted, any collective",
        )
        for ax in (left, right):
            ax.set_xscale("log", base=2)
            ticks = [2**10, 2**16, 2**22, 2**26]
            ax.set_xticks(ticks, ["1 KiB", "64 KiB", "4 MiB", "64 MiB"])
            ax.minorticks_off()
            ax.set_xlabel("buffer S")
            ax.grid(True)
        left.set_yscale("log")
        left.set_ylabel("all-reduce time, ms")
        left.legend(fontsize=8)
        right.set_ylabel("busbw, GB/s (2 ranks)")
        right.legend(fontsize=8)
    a2, b2 = fitted(2)
    a4, b4 = fitted(4)
    return figure_html(
        fig,
        name="collectives",
        title="gloo collectives on a CPU against the alpha-beta model",
        alt=(
            "Left: all-reduce time against buffer size from 1 KiB to "
            "64 MiB on 2 and 4 CPU ranks, measured points and fitted "
            "lines, flat for small buffers and rising in proportion to "
            "the size for large ones. Right: bus bandwidth of all-reduce, "
            "all-gather and reduce-scatter on 2 ranks against size, "
            "rising towards the fitted model's limit."
        ),
        caption=(
            f"Fitted to the all-reduce times: {a2 * 1e6:.0f} us a step and "
            f"{1 / b2 / 1e9:.2f} GB/s on 2 ranks, {a4 * 1e6:.0f} us and "
            f"{1 / b4 / 1e9:.2f} GB/s on 4; the dotted lines mark where a "
            "buffer stops being latency-bound. Right: with nccl-tests' "
            "factors the collectives share one busbw scale; gloo's "
            "reduce-scatter runs a whole all-reduce, so it sits below."
        ),
    )
