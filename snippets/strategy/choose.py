"""Pick the simplest parallelism strategy that the memory walls allow."""

# --8<-- [start:model]
from snippets.checks import flag

RUNGS = {
    "ddp": "DDP: replicate the model, all-reduce the gradients",
    "fsdp": (
        "ZeRO / FSDP: shard the state, the lowest stage that fits"
        " (ZeRO-1, ZeRO-2, then ZeRO-3)"
    ),
    "tp": "Tensor parallel across the GPUs of the node",
    "3d": (
        "3D: tensor parallel in each node, pipeline across nodes,"
        " data parallel over the pipelines (ZeRO-1, or FSDP that"
        " reduces once per step)"
    ),
}
# The rules, in the order they are tried: the first question answered
# True gives the rung; None is the answer when every question was False.
RULES = (
    ("state_fits_one_gpu", "ddp"),
    ("layer_fits_one_gpu", "fsdp"),
    ("multi_node", "3d"),
    (None, "tp"),
)


def choose_strategy(
    model_fits_one_gpu, state_fits_one_gpu, layer_fits_one_gpu, multi_node
):
    """Climb the ladder only as far as a wall forces you to.

    "Fits" means with the activations of one micro-batch beside it.
    """
    answers = {
        "model_fits_one_gpu": flag("model_fits_one_gpu", model_fits_one_gpu),
        "state_fits_one_gpu": flag("state_fits_one_gpu", state_fits_one_gpu),
        "layer_fits_one_gpu": flag("layer_fits_one_gpu", layer_fits_one_gpu),
        "multi_node": flag("multi_node", multi_node),
    }
    if state_fits_one_gpu and not model_fits_one_gpu:
        raise ValueError(
            "state_fits_one_gpu=True needs model_fits_one_gpu=True: "
            "the training state includes the weights"
        )
    if model_fits_one_gpu and not layer_fits_one_gpu:
        raise ValueError(
            "model_fits_one_gpu=True needs layer_fits_one_gpu=True: "
            "a layer is part of the model"
        )
    for question, rung in RULES:
        if question is None or answers[question]:
            return RUNGS[rung]


# --8<-- [end:model]


if __name__ == "__main__":
    # --8<-- [start:demo]
    print(choose_strategy(True, True, True, False))  # 1B on 8 GPUs
    print(choose_strategy(True, False, True, False))  # 7B, state too big
    print(choose_strategy(False, False, False, False))  # huge layers
    print(choose_strategy(False, False, False, True))  # frontier scale
    # --8<-- [end:demo]
