"""A ring collective's time: a latency per step plus seconds per byte."""

# --8<-- [start:model]
from snippets.checks import choice, count, number

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter")


def ring_terms(kind, ranks):
    """(steps, share): a ring does `steps` sends one after the other, and
    each rank sends `share` x S bytes of an S-byte buffer in all. An
    all-reduce is a reduce-scatter, then an all-gather: twice both."""
    choice("kind", kind, COLLECTIVES)
    n = count("ranks", ranks, minimum=2)
    steps, share = n - 1, (n - 1) / n
    if kind == "all_reduce":
        return 2 * steps, 2 * share
    return steps, share


def ring_seconds(kind, ranks, size, alpha, beta):
    """steps x alpha + share x S x beta, for an S-byte buffer (`size`):
    alpha is the latency of one step, beta the seconds per byte."""
    steps, share = ring_terms(kind, ranks)
    number("size", size)
    number("alpha", alpha, allow_minimum=True)
    number("beta", beta, allow_minimum=True)
    return steps * alpha + share * size * beta


def busbw_GBps(kind, ranks, size, seconds):
    """nccl-tests' bus bandwidth, GB/s (1e9 bytes): S / t x share."""
    _, share = ring_terms(kind, ranks)
    number("size", size)
    number("seconds", seconds)
    return size / seconds * share / 1e9


def fit(points):
    """(alpha, beta) that make ring_seconds fit measured points, each
    (kind, ranks, size, seconds), by least squares on the relative
    error: a 1 KB time counts as much as a 64 MB one."""
    if not isinstance(points, list | tuple) or len(points) < 2:
        raise ValueError(
            "points must be a list of at least 2 (kind, ranks, size, "
            f"seconds) tuples, got {points!r:.60}"
        )
    # minimise sum((steps a + bytes b - t) / t)^2: two linear equations
    saa = sab = sbb = sa = sb = 0.0
    for i, point in enumerate(points):
        if not isinstance(point, list | tuple) or len(point) != 4:
            raise ValueError(
                "points must hold (kind, ranks, size, seconds) tuples, "
                f"got {point!r:.60}"
            )
        kind, ranks, size, seconds = point
        try:
            steps, share = ring_terms(kind, ranks)
            a = steps / number("seconds", seconds)
            b = share * number("size", size) / seconds
        except (TypeError, ValueError) as error:
            raise ValueError(f"points[{i}]: {error}") from error
        saa, sab, sbb = saa + a * a, sab + a * b, sbb + b * b
        sa, sb = sa + a, sb + b
    det = saa * sbb - sab * sab
    if det <= 1e-12 * saa * sbb:
        raise ValueError(
            "points must span several sizes to separate alpha from beta, "
            f"got {len(points)} points that do not"
        )
    return (sa * sbb - sb * sab) / det, (sb * saa - sa * sab) / det


def latency_bound_below(ranks, alpha, beta):
    """The buffer size, bytes, below which the steps' latency costs more
    than the bytes: steps x alpha = share x S x beta, the same for all
    three collectives: S = ranks x alpha / beta."""
    n = count("ranks", ranks, minimum=2)
    number("alpha", alpha)
    number("beta", beta)
    return n * alpha / beta


# --8<-- [end:model]


if __name__ == "__main__":
    # --8<-- [start:demo]
    # An example ring of 8 ranks: 100 us a step, 1 GB/s one way.
    ALPHA, BETA = 100e-6, 1 / 1e9
    sizes = [2**k for k in range(10, 31, 4)]  # 1 KiB to 1 GiB
    print("| all-reduce, 8 ranks | time | busbw, GB/s |")
    print("| --- | ---: | ---: |")
    points = []
    for size in sizes:
        t = ring_seconds("all_reduce", 8, size, ALPHA, BETA)
        points.append(("all_reduce", 8, size, t))
        bw = busbw_GBps("all_reduce", 8, size, t)
        print(f"| {size:,} B | {t * 1e6:,.1f} us | {bw:.1f} |")
    a, b = fit(points)
    print()
    print(
        f"fitted back: alpha {a * 1e6:.2f} us, 1/beta {1 / b / 1e9:.0f} GB/s"
    )
    S = latency_bound_below(8, a, b)
    print(f"latency-bound below {S / 2**20:.2f} MiB")
    # --8<-- [end:demo]
