"""Exercise 2: bytes each GPU sends in DDP's ring all-reduce."""

# --8<-- [start:model]
from snippets.ddp.allreduce import allreduce_bytes
from snippets.units import GB, GiB


def volume_table(params, world_sizes, bytes_per_grad=2):
    """(N, factor, GB sent, GiB sent) per rank for each world size N."""
    rows = []
    for n in world_sizes:
        r = allreduce_bytes(params, bytes_per_grad, n)
        sent = r["sent_per_rank_GB"] * GB
        rows.append((n, r["factor"], sent / GB, sent / GiB))
    return rows


# --8<-- [end:model]


if __name__ == "__main__":
    # --8<-- [start:demo]
    P = 7_000_000_000  # 7B parameters, one bf16 gradient (2 bytes) each
    grad = allreduce_bytes(P, 2, 8)["grad_GB"]
    print(f"gradient buffer: {grad:.1f} GB = {grad * GB / GiB:.2f} GiB")
    print("   N  factor   sent per rank")
    for n, factor, gb, gib in volume_table(P, (2, 8, 64, 1024)):
        print(f"{n:>4}  {factor:.4f}  {gb:7.4f} GB = {gib:6.2f} GiB")
    # --8<-- [end:demo]
