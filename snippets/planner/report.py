"""The planner's answer as text: a ranked table and a launch command."""

# --8<-- [start:model]
from snippets.planner.command import launch_command
from snippets.planner.layouts import name, plan_layouts


def table(ranked, top=5):
    """A Markdown table of the first `top` layouts."""
    lines = [
        "| # | layout | states, GB | activations, GB | total GB | fits"
        " | step, s | exposed comms, s | bubble, s | tokens/s | MFU |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for i, r in enumerate(ranked[:top], start=1):
        gb, s = r["memory_per_gpu_GB"], r["step_s"]
        states = gb["parameters"] + gb["gradients"] + gb["optimizer"]
        lines.append(
            f"| {i} | {name(r['layout'])} | {states:.1f} | "
            f"{gb['activations']:.1f} | {gb['total']:.1f} | "
            f"{'yes' if r['fits'] else 'no'} | {s['total']:.2f} | "
            f"{s['exposed_communication']:.2f} | {s['bubble']:.2f} | "
            f"{r['tokens_per_s']:,.0f} | {r['mfu']:.1%} |"
        )
    return "\n".join(lines)


def report(model, cluster, training, top=5):
    """The answer, the table, and how to launch the best layout that
    this course's script can run (or the mesh the best layout needs)."""
    plan = plan_layouts(model, cluster, training)
    parts = [plan["answer"], "", table(plan["ranked"], top)]
    fitting = [r for r in plan["ranked"] if r["fits"]]
    runnable = [
        r
        for r in fitting
        if launch_command(model, cluster, training, r["layout"])[0]
    ]
    if runnable:
        best = runnable[0]
        rank = plan["ranked"].index(best) + 1
        parts += [
            "",
            f"Launch #{rank}, the best layout this course's script "
            "runs (it trains the course's GPT-style decoder at this "
            "size: no grouped-query attention, no gated MLP):",
            "",
            launch_command(model, cluster, training, best["layout"])[1],
        ]
    best_runnable = runnable[0] if runnable else None
    if fitting and fitting[0] is not best_runnable:
        mesh = launch_command(model, cluster, training, fitting[0]["layout"])
        parts += ["", "#1 needs tensor or pipeline parallelism, or ZeRO-1/2:"]
        parts.append(mesh[1])
    return "\n".join(parts)


# --8<-- [end:model]
