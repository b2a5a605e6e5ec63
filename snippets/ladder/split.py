"""Exercise 1: match a training bottleneck to the split that relieves it."""

# --8<-- [start:model]
from snippets.checks import choice

SPLITS = {
    "too slow, model fits": (
        "data parallel (DDP)",
        "the batch; every GPU keeps a full copy of the model",
    ),
    "model too big, each layer fits": (
        "sharded data parallel (ZeRO / FSDP)",
        "the training state; each GPU keeps 1/N of it",
    ),
    "sharded, but its gathers outrun the network": (
        "pipeline parallel",
        "the stack of layers; only activations cross the network",
    ),
    "more GPUs than the batch has micro-batches": (
        "tensor or pipeline parallel",
        "each replica over several GPUs; the batch feeds fewer replicas",
    ),
    "one layer too big": (
        "tensor parallel",
        "the matrices inside a layer; each GPU keeps a slice",
    ),
}


def which_split(bottleneck):
    """The split for a named bottleneck; anything else is an error."""
    choice("bottleneck", bottleneck, list(SPLITS))
    return SPLITS[bottleneck]


# --8<-- [end:model]


if __name__ == "__main__":
    # --8<-- [start:demo]
    for name in SPLITS:
        split, what = which_split(name)
        print(f"{name}\n  -> {split}: splits {what}")
    try:
        which_split("loss is NaN")
    except ValueError as error:
        print(f"ValueError: {error}")
    # --8<-- [end:demo]
