"""Bytes each rank sends in one ring all-reduce of the gradients."""

# --8<-- [start:model]
from snippets.checks import count, number
from snippets.units import GB


def allreduce_bytes(params, bytes_per_grad=2, world_size=8):
    """Per-rank traffic of a ring all-reduce over one gradient buffer.

    A ring all-reduce is a reduce-scatter followed by an all-gather.
    Each half moves (N - 1) / N of the buffer through every rank.
    """
    number("params", params)
    number("bytes_per_grad", bytes_per_grad)
    count("world_size", world_size)
    grad_bytes = params * bytes_per_grad
    factor = 2 * (world_size - 1) / world_size
    return {
        "grad_GB": grad_bytes / GB,
        "factor": factor,
        "sent_per_rank_GB": grad_bytes * factor / GB,
    }


# --8<-- [end:model]


if __name__ == "__main__":
    # --8<-- [start:demo]
    for n in (8, 64):
        r = allreduce_bytes(7_000_000_000, bytes_per_grad=2, world_size=n)
        print(
            f"N={n:>2}: gradient {r['grad_GB']:.1f} GB, "
            f"factor {r['factor']:.5f}, "
            f"each rank sends {r['sent_per_rank_GB']} GB"
        )
    # --8<-- [end:demo]
