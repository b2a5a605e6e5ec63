"""How many tokens per GPU keep data parallelism compute-bound."""

# --8<-- [start:model]
from snippets.checks import count, number
from snippets.units import GB


def crossover_tokens_per_gpu(
    tflops_per_gpu,
    interconnect_GBps,
    world_size,
    bytes_per_grad=2,
    flops_per_token_per_param=6,
):
    """Tokens per GPU per gradient sync at which compute and the ring
    all-reduce take equally long; more tokens make the step
    compute-bound.

    Compute is 6 P T / F seconds; the all-reduce sends
    2 (N - 1) / N x bytes_per_grad x P bytes at W bytes/s. P cancels:
    T = (bytes_per_grad / 6) x 2 (N - 1) / N x F / W.
    """
    flops = number("tflops_per_gpu", tflops_per_gpu) * 1e12
    bandwidth = number("interconnect_GBps", interconnect_GBps) * GB
    n = count("world_size", world_size)
    number("bytes_per_grad", bytes_per_grad)
    number("flops_per_token_per_param", flops_per_token_per_param)
    ring = 2 * (n - 1) / n
    return (
        bytes_per_grad / flops_per_token_per_param * ring * flops / bandwidth
    )


# --8<-- [end:model]


if __name__ == "__main__":
    # --8<-- [start:demo]
    from snippets.comms.cost import REACHED

    TFLOPS = 989 * 0.40  # an H100 at 40% of its dense bf16 peak
    print(f"F = {TFLOPS:.1f} TFLOP/s, bf16 gradients.")
    print("Network rows: 8 nodes of 8 GPUs, one NIC per node.")
    print()
    print("| link | GPUs (N) | compute-bound above, tokens per GPU |")
    print("| --- | ---: | ---: |")
    for link, bw in REACHED.items():  # at what NCCL reaches
        n = 8 if link.startswith("NVLink") else 64  # NVLink: one node
        tokens = crossover_tokens_per_gpu(TFLOPS, bw, n)
        print(f"| {link} | {n} | {tokens:,.0f} |")
    # --8<-- [end:demo]

    # --8<-- [start:no_params]
    from snippets.comms.cost import comms_cost

    for billions in (1, 7, 70):
        r = comms_cost(billions * 10**9, 64, TFLOPS, 46, tokens_per_gpu=8192)
        print(
            f"{billions:>2}B: compute / all-reduce = "
            f"{r['compute_s'] / r['comms_s']:.4f}"
        )
    # --8<-- [end:no_params]
