"""Exercise 4: accumulation steps for a target batch, never rounded
behind the caller's back."""

# --8<-- [start:model]
from snippets.accumulation.batch import effective_batch
from snippets.checks import choice, count

ROUNDING = ("exact", "up", "down")


def accum_steps_for(target, micro_batch, world_size, rounding="exact"):
    """Accumulation steps K with micro_batch * K * world_size == target.

    When the target is not a multiple of micro_batch * world_size,
    rounding="exact" raises and names the two nearest batches that are
    reachable; "up" or "down" picks one of them, on the caller's word.
    """
    count("target", target)
    count("micro_batch", micro_batch)
    count("world_size", world_size)
    choice("rounding", rounding, ROUNDING)
    per_pass = micro_batch * world_size
    k, rest = divmod(target, per_pass)
    if rest and rounding == "exact":
        options = [f"{(k + 1) * per_pass} (rounding='up')"]
        if k:
            options.insert(0, f"{k * per_pass} (rounding='down')")
        raise ValueError(
            f"target={target} is not a multiple of micro_batch * "
            f"world_size = {per_pass}; reachable: {' or '.join(options)}"
        )
    if rest and rounding == "up":
        k += 1
    if k == 0:
        raise ValueError(
            f"target={target} is below micro_batch * world_size = "
            f"{per_pass}: rounding down leaves no step at all"
        )
    return k, effective_batch(micro_batch, k, world_size)["effective_batch"]


# --8<-- [end:model]


if __name__ == "__main__":
    # --8<-- [start:demo]
    TARGET, MICRO, GPUS = 512, 16, 4
    k, achieved = accum_steps_for(TARGET, MICRO, GPUS)
    print(f"target {TARGET}: A = {k}, effective batch {achieved}")
    print(f"  {k} forward/backward passes per optimizer step")
    print(f"  samples in flight per GPU: {MICRO}, not {TARGET // GPUS}")
    try:
        accum_steps_for(600, micro_batch=16, world_size=4)
    except ValueError as error:
        print(f"target 600 -> ValueError:\n  {error}")
    for rounding in ("down", "up"):
        k, achieved = accum_steps_for(600, 16, 4, rounding=rounding)
        print(f"target 600, rounding={rounding!r}: A = {k}, batch {achieved}")
    # --8<-- [end:demo]
