"""Ring attention on toy numbers: exact attention, block by block, as
the keys and values travel around a ring of ranks."""

# --8<-- [start:model]
import math

from snippets.checks import choice, count, flag, number
from snippets.context.balance import LAYOUTS, _check_split, _positions


def _matrix(name, rows):
    """A non-empty list of equally long, non-empty rows of numbers."""
    if not isinstance(rows, list) or not rows:
        raise TypeError(
            f"{name} must be a non-empty list of rows, got "
            f"{type(rows).__name__} {rows!r:.40}"
        )
    for i, row in enumerate(rows):
        if not isinstance(row, list) or len(row) != len(rows[0]) or not row:
            raise TypeError(
                f"{name} must hold lists of one length, row {i} is {row!r:.40}"
            )
        for j, x in enumerate(row):
            number(f"{name}[{i}][{j}]", x, minimum=-math.inf)
    return rows


def _check_qkv(q, k, v):
    for name, rows in (("q", q), ("k", k), ("v", v)):
        _matrix(name, rows)
    if len(k) != len(q) or len(v) != len(q) or len(k[0]) != len(q[0]):
        raise ValueError(
            f"k must have the shape of q ({len(q)} x {len(q[0])}) and v "
            f"as many rows; got k {len(k)} x {len(k[0])}, v {len(v)} rows"
        )


def _dot(a, b):
    return sum(x * y for x, y in zip(a, b, strict=True))


def attention(q, k, v, causal=False):
    """softmax(q k^T / sqrt(d)) v for one head, all of it at once; with
    `causal`, query i sees keys 0..i only."""
    _check_qkv(q, k, v)
    flag("causal", causal)
    scale = 1 / math.sqrt(len(q[0]))
    out = []
    for i, qi in enumerate(q):
        keys = range(i + 1) if causal else range(len(k))
        scores = [_dot(qi, k[j]) * scale for j in keys]
        top = max(scores)
        weights = [math.exp(s - top) for s in scores]
        total = sum(weights)
        out.append(
            [
                sum(w * v[j][c] for w, j in zip(weights, keys, strict=True))
                / total
                for c in range(len(v[0]))
            ]
        )
    return out


def ring_attention(q, k, v, ranks, causal=False, layout="contiguous"):
    """The same attention as `attention`, computed by `ranks` ranks.

    Each rank keeps the queries of its two chunks (`rank_chunks`) and
    a running state per query: the largest score seen, the sum of the
    exponentials and the weighted sum of values. At each of N steps it
    scores its queries against the key/value block it holds, folds
    them into the state (online softmax), then passes the block on to
    the next rank. Returns the output rows in sequence order.
    """
    _check_qkv(q, k, v)
    n = count("ranks", ranks)
    flag("causal", causal)
    choice("layout", layout, LAYOUTS)
    _check_split(len(q), n)
    scale = 1 / math.sqrt(len(q[0]))
    mine = [_positions(len(q), n, r, layout) for r in range(n)]
    # state[i] = [running max, sum of exp, weighted sum of values]
    state = {i: [-math.inf, 0.0, [0.0] * len(v[0])] for i in range(len(q))}
    for step in range(n):
        for r in range(n):
            block = mine[(r - step) % n]  # the K/V block rank r holds now
            for i in mine[r]:
                seen = [j for j in block if not causal or j <= i]
                if not seen:
                    continue  # the whole block lies in i's future
                scores = [_dot(q[i], k[j]) * scale for j in seen]
                top, total, acc = state[i]
                new_top = max(top, *scores)
                shrink = math.exp(top - new_top)  # rescale what came before
                weights = [math.exp(s - new_top) for s in scores]
                acc = [
                    a * shrink
                    + sum(
                        w * v[j][c] for w, j in zip(weights, seen, strict=True)
                    )
                    for c, a in enumerate(acc)
                ]
                state[i] = [new_top, total * shrink + sum(weights), acc]
    return [[a / state[i][1] for a in state[i][2]] for i in range(len(q))]


# --8<-- [end:model]


if __name__ == "__main__":
    # --8<-- [start:demo]
    import random

    rng = random.Random(0)
    S, D, N = 16, 4, 4  # tokens, head size, ranks

    def rows():
        return [[rng.uniform(-2, 2) for _ in range(D)] for _ in range(S)]

    q, k, v = rows(), rows(), rows()
    for causal in (False, True):
        whole = attention(q, k, v, causal)
        print(
            f"causal={causal}: token 5's output, all at once: "
            f"{[round(x, 6) for x in whole[5]]}"
        )
        for layout in LAYOUTS:
            ring = ring_attention(q, k, v, N, causal, layout)
            gap = max(
                abs(a - b)
                for r, w in zip(ring, whole, strict=True)
                for a, b in zip(r, w, strict=True)
            )
            print(f"  ring of {N}, {layout:>10}: same to 1e-12: {gap < 1e-12}")
    # --8<-- [end:demo]
