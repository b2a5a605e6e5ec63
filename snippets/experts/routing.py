"""Top-k routing with an expert capacity: who takes which tokens, who
drops them, and the load-balancing loss."""

# --8<-- [start:model]
import math
import random

from snippets.checks import count, number


def synthetic_router(tokens, experts, seed=0, skew=1.0):
    """Router probabilities for `tokens` tokens over `experts` experts:
    the softmax of Gaussian logits, plus a bias that rises by `skew`
    from the first expert to the last (some experts are popular, as an
    untrained or drifting router makes them). Seeded: the same rows on
    every machine."""
    t, e = count("tokens", tokens), count("experts", experts)
    number("skew", skew, allow_minimum=True)
    rng = random.Random(count("seed", seed, minimum=0))
    rows = []
    for _ in range(t):
        logits = [rng.gauss(0, 1) + skew * i / max(e - 1, 1) for i in range(e)]
        top = max(logits)
        weights = [math.exp(x - top) for x in logits]
        total = sum(weights)
        rows.append([w / total for w in weights])
    return rows


def _check_probs(probs):
    if not isinstance(probs, list) or not probs:
        raise TypeError(
            f"probs must be a non-empty list of rows, got "
            f"{type(probs).__name__} {probs!r:.40}"
        )
    width = len(probs[0]) if isinstance(probs[0], list) else 0
    for row in probs:
        if not isinstance(row, list) or len(row) != width or not row:
            raise TypeError(
                "probs must hold rows of one length, one "
                f"probability per expert; got {row!r:.40}"
            )
        # A row of floats, none negative, with a finite sum passes at
        # once (route checks every row at every call); any other row is
        # checked value by value, for the error that names the value.
        if {type(p) for p in row} != {float} or not (
            min(row) >= 0 and math.isfinite(sum(row))
        ):
            for p in row:
                number("probs", p, allow_minimum=True)
    return width


def route(probs, top_k, capacity_factor):
    """Send each token to its top_k experts, each expert taking at most
    C = ceil(capacity_factor x top_k x T / E) tokens.

    Seats go to first choices before second choices, and within a
    choice in token order (GShard; DeepSpeed's gate does the same);
    a token that finds its expert full is dropped for that expert: it
    skips the layer there, keeping only its residual. Returns the
    capacity, the tokens each expert was sent and took, the dropped
    assignments and the kept experts of each token.
    """
    e = _check_probs(probs)
    k = count("top_k", top_k)
    if k > e:
        raise ValueError(f"top_k must be <= the experts ({e}), got {k!r}")
    number("capacity_factor", capacity_factor)
    t = len(probs)
    capacity = math.ceil(capacity_factor * k * t / e)
    # each token's top_k experts, most probable first (ties: lower index)
    ranked = [
        sorted(range(e), key=row.__getitem__, reverse=True)[:k]
        for row in probs
    ]
    demand = [0] * e
    for experts in ranked:
        for expert in experts:
            demand[expert] += 1
    load, kept, dropped = [0] * e, [[] for _ in range(t)], 0
    for choice in range(k):
        for token, experts in enumerate(ranked):
            expert = experts[choice]
            if load[expert] < capacity:
                load[expert] += 1
                kept[token].append(expert)
            else:
                dropped += 1
    return {
        "capacity": capacity,
        "demand": demand,
        "load": load,
        "dropped": dropped,
        "kept": kept,
    }


def load_balancing_loss(probs, alpha=0.01):
    """Switch Transformer's auxiliary loss, alpha x E x sum_i f_i P_i:
    f_i is the share of tokens whose first choice is expert i, P_i the
    mean probability the router gives it. A uniform router scores
    alpha; routing everything to one expert, alpha x E. (GShard's loss
    multiplies the same two shares; DeepSpeed computes it as
    mean(f P) x E^2, the same number.)"""
    e = _check_probs(probs)
    number("alpha", alpha)
    t = len(probs)
    first = [max(range(e), key=row.__getitem__) for row in probs]
    f = [first.count(i) / t for i in range(e)]
    p = [sum(row[i] for row in probs) / t for i in range(e)]
    return alpha * e * sum(fi * pi for fi, pi in zip(f, p, strict=True))


# --8<-- [end:model]


if __name__ == "__main__":
    # --8<-- [start:demo]
    T, E, K = 4096, 16, 2  # tokens in the batch, experts, top-k
    print(f"{T} tokens, {E} experts, top-{K}: {T * K} assignments")
    for skew in (0.0, 1.0, 2.0):
        probs = synthetic_router(T, E, seed=0, skew=skew)
        demand = route(probs, K, 1.0)["demand"]
        print(
            f"skew {skew}: aux loss {load_balancing_loss(probs):.4f},"
            f" busiest expert sent {max(demand)} tokens"
            f" ({max(demand) / (T * K / E):.2f} x the mean)"
        )
        for cf in (1.0, 1.25, 2.0):
            r = route(probs, K, cf)
            print(
                f"  capacity factor {cf:<4}: {r['capacity']:4} seats each,"
                f" {r['dropped']:4} dropped ({r['dropped'] / (T * K):.1%})"
            )
    # --8<-- [end:demo]
