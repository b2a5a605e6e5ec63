"""figure("planner-accuracy") on "How good is the planner?": each
measured run's tokens/s per GPU against the cost model's prediction by
a fit that held the run's source out, on log axes around y = x
(snippets/planner/accuracy.py), and the runs in no fit against the
fitted planner's."""

from course.build import cache
from course.charts._svg import INK, PALETTE, figure_html, new_figure, style
from snippets.planner import runs
from snippets.planner.accuracy import compared, held_out_fits, summary

# Which colour and marker each source's rows get, by label prefix.
SOURCES = (
    ("megatron-t1", "Megatron-LM, Table 1", "o"),
    ("megatron-t2", "Megatron-LM, Table 2", "s"),
    ("llama3", "Llama 3", "D"),
    ("torchtitan", "torchtitan", "^"),
    ("", "BLOOM, OPT, MT-NLG, NeMo", "v"),
)


def draw():
    # seven fits, kept under the planner's sources (shared with tests)
    held = cache.kept("held-out-fits", held_out_fits)
    rows = [compared(run, held=held) for run in runs.RUNS]
    for r in rows:  # the prediction that never saw the run's source
        r["predicted"] = r["measured"] * (1 + r["held_out_error"])
    s = summary(rows)
    # MosaicML's FSDP runs, in no fit: predicted by the planner's own
    unseen = [compared(run) for run in runs.FOUNDRY_RUNS]
    values = [
        v for r in rows + unseen for v in (r["measured"], r["predicted"])
    ]
    low, high = min(values) / 1.5, max(values) * 1.5
    with style():
        fig = new_figure(5.4, 4.6)
        ax = fig.add_subplot()
        ax.plot([low, high], [low, high], color=INK, linewidth=1)
        for band in (0.85, 1.15):
            ax.plot(
                [low, high],
                [low * band, high * band],
                color=INK,
                linewidth=0.8,
                linestyle="--",
            )
        left = list(rows)
        for i, (prefix, label, marker) in enumerate(SOURCES):
            mine = [r for r in left if r["run"].label.startswith(prefix)]
            left = [r for r in left if r not in mine]
            ax.plot(
                [r["measured"] for r in mine],
                [r["predicted"] for r in mine],
                marker,
                color=PALETTE[i],
                markersize=5,
                linestyle="none",
                label=f"{label} ({len(mine)})",
            )
        ax.plot(
            [r["measured"] for r in unseen],
            [r["predicted"] for r in unseen],
            "o",
            color=INK,
            markerfacecolor="none",
            markersize=5,
            linestyle="none",
            label=f"MosaicML FSDP, in no fit ({len(unseen)})",
        )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(low, high)
        ax.set_ylim(low, high)
        ax.set_aspect("equal")
        ax.set_xlabel("measured tokens/s per GPU")
        ax.set_ylabel("predicted tokens/s per GPU")
        ax.grid(True, which="major")
        ax.legend(loc="upper left", fontsize=9)
    worst = s["held_worst"]
    return figure_html(
        fig,
        name="planner-accuracy",
        title="Predicted against measured throughput, each source held out",
        alt=(
            f"Scatter of {len(rows)} measured training runs, measured "
            "tokens per second per GPU against the planner's prediction "
            "by a fit to the other sources, both on log scales, around the"
            " line y = x with dashed lines 15% above and below. The median"
            f" error is {s['held_median']:.1%}; the worst, "
            f"{worst['held_out_error']:+.1%}, is {worst['run'].label}. "
            f"Hollow circles: {len(unseen)} runs in no fit, predicted by "
            "the fitted planner."
        ),
        caption=(
            "Each point is a measured run, predicted by the model fitted "
            "to every other source; on the solid line the planner predicts"
            " it exactly, and between the dashed lines within 15%. Median "
            f"error {s['held_median']:.1%}, worst "
            f"{worst['held_out_error']:+.1%} ({worst['run'].label}). "
            "The hollow circles are MosaicML's FSDP runs, which no fit "
            "saw, predicted by the planner as fitted to every source."
        ),
    )
