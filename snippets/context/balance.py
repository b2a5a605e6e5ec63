"""Which tokens each rank of a context-parallel group holds, and the
attention work the causal mask leaves it."""

# --8<-- [start:model]
from snippets.checks import choice, count

LAYOUTS = ("contiguous", "zigzag")


def rank_chunks(rank, ranks, layout):
    """The two chunks, of 2N equal chunks of the sequence, that `rank`
    holds: chunks 2r and 2r + 1 (contiguous), or chunks r and
    2N - 1 - r (zig-zag), pairing an early chunk with a late one."""
    n = count("ranks", ranks)
    count("rank", rank, minimum=0)
    if rank >= n:
        raise ValueError(f"rank must be < ranks ({n}), got {rank!r}")
    choice("layout", layout, LAYOUTS)
    if layout == "contiguous":
        return (2 * rank, 2 * rank + 1)
    return (rank, 2 * n - 1 - rank)


def _positions(seq_len, ranks, rank, layout):
    size = seq_len // (2 * ranks)
    return [
        chunk * size + i
        for chunk in rank_chunks(rank, ranks, layout)
        for i in range(size)
    ]


def _check_split(seq_len, ranks):
    s, n = count("seq_len", seq_len), count("ranks", ranks)
    if s % (2 * n):
        raise ValueError(
            f"seq_len must be a multiple of 2 x ranks ({2 * n}): each rank "
            f"holds two equal chunks; got {s!r}"
        )


def ring_step_scores(seq_len, ranks, layout):
    """scores[t][r]: query-key pairs rank r computes at ring step t,
    when it holds the keys and values of rank (r - t) mod N; under the
    causal mask a query at position i sees keys at positions <= i."""
    _check_split(seq_len, ranks)
    choice("layout", layout, LAYOUTS)
    n = ranks
    where = [_positions(seq_len, n, r, layout) for r in range(n)]
    steps = []
    for t in range(n):
        row = []
        for r in range(n):
            keys = sorted(where[(r - t) % n])
            # pairs (i, j) with j <= i, counted by walking both in order
            seen = done = 0
            for i in sorted(where[r]):
                while seen < len(keys) and keys[seen] <= i:
                    seen += 1
                done += seen
            row.append(done)
        steps.append(row)
    return steps


def ring_efficiency(seq_len, ranks, layout):
    """Useful work over time when the ring moves in lockstep: every
    step lasts as long as its busiest rank, so the step time is the sum
    of the steps' maxima; a balanced ring would need total / N."""
    steps = ring_step_scores(seq_len, ranks, layout)
    total = sum(map(sum, steps))
    return total / (ranks * sum(max(row) for row in steps))


# --8<-- [end:model]


if __name__ == "__main__":
    # --8<-- [start:demo]
    S, N = 64, 4  # tokens, ranks: 8 chunks of 8 tokens
    for layout in LAYOUTS:
        steps = ring_step_scores(S, N, layout)
        per_rank = [sum(col) for col in zip(*steps, strict=True)]
        chunks = [rank_chunks(r, N, layout) for r in range(N)]
        print(f"{layout}: rank r holds chunks {chunks}")
        print(
            f"  scores per rank {per_rank}, max/mean "
            f"{max(per_rank) / (sum(per_rank) / N):.2f}"
        )
        print(
            f"  per ring step (busiest rank) {[max(r) for r in steps]}, "
            f"efficiency {ring_efficiency(S, N, layout):.1%}"
        )
    for n in (8, 16):
        s = 8192 * n  # 8K tokens per rank
        eff = {k: ring_efficiency(s, n, k) for k in LAYOUTS}
        print(
            f"{n} ranks, {s} tokens: contiguous {eff['contiguous']:.1%},"
            f" zig-zag {eff['zigzag']:.1%}"
        )
    # --8<-- [end:demo]
