"""Pick the simplest parallelism strategy that the memory walls allow."""

# --8<-- [start:model]
from snippets.checks import flag

RUNGS = {
    "ddp": "DDP: replicate the model, all-reduce the gradients",
    "fsdp": "FSDP / ZeRO-3: shard parameters, gradients and optimizer state",
    "tp": "Tensor parallel inside the node, with FSDP across nodes",
    "3d": "3D: tensor in the node, pipeline across nodes, data/FSDP on top",
}


def choose_strategy(
    model_fits_one_gpu, state_fits_one_gpu, layer_fits_one_gpu, multi_node
):
    """Climb the ladder only as far as a wall forces you to."""
    flag("model_fits_one_gpu", model_fits_one_gpu)
    flag("state_fits_one_gpu", state_fits_one_gpu)
    flag("layer_fits_one_gpu", layer_fits_one_gpu)
    flag("multi_node", multi_node)
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
    if state_fits_one_gpu:
        return RUNGS["ddp"]
    if layer_fits_one_gpu:
        return RUNGS["fsdp"]
    return RUNGS["3d"] if multi_node else RUNGS["tp"]


# --8<-- [end:model]


if __name__ == "__main__":
    # --8<-- [start:demo]
    print(choose_strategy(True, True, True, False))  # 1B on 8 GPUs
    print(choose_strategy(True, False, True, False))  # 7B, state too big
    print(choose_strategy(False, False, False, False))  # huge layers
    print(choose_strategy(False, False, False, True))  # frontier scale
    # --8<-- [end:demo]
