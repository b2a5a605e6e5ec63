"""The batch an optimizer step really sees under gradient accumulation."""

# --8<-- [start:model]
from snippets.checks import count


def effective_batch(micro_batch, accum_steps, world_size, seq_len=None):
    """Samples (and tokens, given seq_len) behind one optimizer step.

    Every data-parallel rank runs `accum_steps` micro-batches of
    `micro_batch` samples before the gradients are averaged and the
    optimizer steps once.
    """
    count("micro_batch", micro_batch)
    count("accum_steps", accum_steps)
    count("world_size", world_size)
    samples = micro_batch * accum_steps * world_size
    result = {
        "effective_batch": samples,
        "optimizer_steps_per_1M_samples": 1_000_000 / samples,
    }
    if seq_len is not None:
        result["tokens_per_step"] = samples * count("seq_len", seq_len)
    return result


# --8<-- [end:model]


if __name__ == "__main__":
    # --8<-- [start:demo]
    small = effective_batch(micro_batch=2, accum_steps=16, world_size=8)
    large = effective_batch(1, 32, 64, seq_len=4096)
    for name, r in (("8 GPUs", small), ("64 GPUs", large)):
        steps = r["optimizer_steps_per_1M_samples"]
        line = f"{name}: batch {r['effective_batch']}, {steps:.1f} steps/1M"
        if "tokens_per_step" in r:
            line += f", {r['tokens_per_step']:,} tokens/step"
        print(line)
    # --8<-- [end:demo]
