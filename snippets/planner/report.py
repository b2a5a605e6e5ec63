"""The planner's answer as data, and the one renderer that lays it out:
`plan` returns the answer, the ranked rows and the launch command as
plain JSON-ready values; `html` lays them out for the page and the
form, `text` for the command line."""

# --8<-- [start:model]
import html as escape

from snippets.checks import choice, count
from snippets.planner.command import (
    launch_command,
    launch_notes,
    unrunnable,
)
from snippets.planner.layouts import name, plan_layouts
from snippets.planner.model import MODELS, cluster, from_hf_config

# The table's columns: key in a row, heading, and how a value prints.
COLUMNS = (
    ("rank", "#", "{}"),
    ("layout", "layout", "{}"),
    ("memory_GB", "GB per GPU", "{:.1f}"),
    ("fits", "fits", "{}"),
    ("step_s", "step, s", "{:.2f}"),
    ("overhead_s", "comms + bubble, s", "{:.2f}"),
    ("tokens_per_s", "tokens/s", "{:,.0f}"),
    ("mfu", "MFU", "{:.1%}"),
)


def row(rank, r):
    """One ranked layout as plain values (and the layout itself)."""
    s = r["step_s"]
    return {
        "rank": rank,
        "layout": name(r["layout"]),
        "memory_GB": r["memory_per_gpu_GB"]["total"],
        "fits": "yes" if r["fits"] else "no",
        "step_s": s["total"],
        "overhead_s": s["total"] - s["compute"] - s["optimizer"],
        "tokens_per_s": r["tokens_per_s"],
        "mfu": r["mfu"],
        "fields": r["layout"],
        "memory_per_gpu_GB": r["memory_per_gpu_GB"],
        "seconds": s,
    }


def answer(model, nodes, training, top=5):
    """The planner's answer for checked-or-not inputs, as data."""
    count("top", top)
    planned = plan_layouts(model, nodes, training)
    ranked = planned["ranked"]
    result = {
        "answer": planned["answer"],
        "fits": planned["fits"],
        "searched": len(ranked),
        "columns": [[key, heading] for key, heading, _ in COLUMNS],
        "rows": [row(i, r) for i, r in enumerate(ranked[:top], start=1)],
        "launch": None,
        "mesh": None,
    }
    fitting = [r for r in ranked if r["fits"]]
    runnable = [r for r in fitting if unrunnable(r["layout"]) is None]
    if ranked and ranked[0]["moe"]:  # the script's commands are dense
        runnable = []
    if runnable:
        best = runnable[0]
        result["launch"] = {
            "rank": ranked.index(best) + 1,
            "layout": name(best["layout"]),
            "command": launch_command(model, nodes, training, best["layout"])[
                1
            ],
            "notes": launch_notes(training, best["layout"]),
        }
    if fitting and (not runnable or fitting[0] is not runnable[0]):
        result["mesh"] = {
            "rank": 1,
            "outline": launch_command(
                model, nodes, training, fitting[0]["layout"]
            )[1],
        }
    return result


def plan(
    config=None,
    *,
    preset=None,
    seq_len=None,
    gpu="h100-80gb",
    nodes=1,
    global_batch_tokens=4 * 1024 * 1024,
    micro_batch=1,
    reserve_GB=4.0,
    precision="bf16",
    stack="native",
    top=5,
    **cluster_values,
):
    """The answer for the command line's inputs: `config` is the text
    of a config.json, or `preset` names one of MODELS. The cluster is
    `nodes` nodes of the `gpu` preset, with any of its values given in
    `cluster_values` (gpus_per_node=4, nic_GBps=25, ...; None keeps the
    preset's) in their place. A bad input raises ValueError (or
    TypeError) naming its field."""
    if (config is None) == (preset is None):
        raise ValueError("give either config (config.json text) or preset")
    if preset is not None:
        choice("preset", preset, sorted(MODELS))
        model = dict(MODELS[preset])
        if seq_len is not None:
            model["seq_len"] = seq_len
    else:
        model = from_hf_config(config, seq_len=seq_len)
    training = {
        "global_batch_tokens": global_batch_tokens,
        "micro_batch": micro_batch,
        "reserve_GB": reserve_GB,
        "precision": precision,
        "stack": stack,
    }
    count("top", top)
    return answer(model, cluster(gpu, nodes, **cluster_values), training, top)


def cells(result):
    """The table's rows as the strings they print as."""
    formats = {key: fmt for key, _, fmt in COLUMNS}
    return [
        [formats[key].format(r[key]) for key, _ in result["columns"]]
        for r in result["rows"]
    ]


def launch_text(result):
    """The launch section's sentence, or None."""
    launch = result["launch"]
    if launch is None:
        return None
    return (
        f"Launch #{launch['rank']}, the best layout this course's script "
        "runs (it trains the course's GPT-style decoder at this size: no "
        "grouped-query attention, no gated MLP):"
    )


def text(result):
    """The answer as the command line prints it: a sentence, the table
    in aligned columns, the launch command and the mesh #1 needs."""
    table = [[heading for _, heading in result["columns"]], *cells(result)]
    widths = [
        max(len(line[i]) for line in table) for i in range(len(table[0]))
    ]
    lines = [
        "  ".join(
            cell.ljust(w) if i == 1 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(line, widths, strict=True))
        ).rstrip()
        for line in table
    ]
    parts = [result["answer"], "\n".join(lines)]
    if result["launch"] is not None:
        parts += [launch_text(result), result["launch"]["command"]]
        parts += result["launch"]["notes"]
    if result["mesh"] is not None:
        parts.append(result["mesh"]["outline"])
    return "\n\n".join(parts)


def html(result):
    """The answer as HTML: the page prints it, the form inserts it."""
    e = escape.escape
    head = "".join(f"<th>{e(h)}</th>" for _, h in result["columns"])
    body = "".join(
        "<tr>" + "".join(f"<td>{e(cell)}</td>" for cell in line) + "</tr>"
        for line in cells(result)
    )
    parts = [
        f"<p>{e(result['answer'])}</p>",
        '<div class="planner-table" style="overflow-x: auto" tabindex="0"'
        ' role="region" aria-label="The layouts, ranked"><table>'
        f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody>"
        "</table></div>",
    ]
    if result["launch"] is not None:
        parts.append(f"<p>{e(launch_text(result))}</p>")
        parts.append(
            f"<pre><code>{e(result['launch']['command'])}</code></pre>"
        )
        parts += [f"<p>{e(note)}</p>" for note in result["launch"]["notes"]]
    if result["mesh"] is not None:
        parts.append(f"<pre><code>{e(result['mesh']['outline'])}</code></pre>")
    return '<div class="planner-answer">' + "".join(parts) + "</div>"


# --8<-- [end:model]
