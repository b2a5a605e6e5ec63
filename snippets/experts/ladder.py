"""Practice ladder: the smallest capacity factor a router can live with."""

# --8<-- [start:model]
from snippets.checks import count, number
from snippets.experts.routing import _check_probs, route


def smallest_capacity_factor(probs, top_k, max_dropped=0.01, step=0.25):
    """The smallest multiple of `step` whose capacity drops at most
    max_dropped of the top_k x tokens assignments. The experts' buffers
    (capacity x experts rows) are what a capacity-based layer computes,
    so each step up costs that much padding."""
    _check_probs(probs)
    count("top_k", top_k)
    limit = number("max_dropped", max_dropped, allow_minimum=True)
    if limit >= 1:
        raise ValueError(f"max_dropped must be < 1, got {limit!r}")
    number("step", step)
    assignments = top_k * len(probs)
    factor = step
    while True:
        r = route(probs, top_k, factor)
        if r["dropped"] <= limit * assignments:
            rows = r["capacity"] * len(probs[0])
            return {
                "capacity_factor": factor,
                "dropped": r["dropped"],
                "padding": 1 - (assignments - r["dropped"]) / rows,
            }
        factor += step


# --8<-- [end:model]


if __name__ == "__main__":
    # --8<-- [start:demo]
    from snippets.experts.routing import synthetic_router

    for skew in (0.0, 1.0, 2.0):
        probs = synthetic_router(4096, 16, seed=0, skew=skew)
        r = smallest_capacity_factor(probs, 2, max_dropped=0.01)
        print(
            f"skew {skew}, at most 1% dropped: capacity factor"
            f" {r['capacity_factor']:g} ({r['dropped']} dropped,"
            f" {r['padding']:.0%} of the expert rows padding)"
        )
    # --8<-- [end:demo]
