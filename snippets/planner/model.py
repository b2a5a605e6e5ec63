"""The planner's inputs: a model, a cluster and a batch, checked and
counted; presets for a few published models and GPUs."""

# --8<-- [start:model]
import json
import re
from dataclasses import asdict, is_dataclass

from snippets.checks import choice, count, flag, number

MODEL_KEYS = ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab")
MODEL_KEYS += ("seq_len",)
# A gated MLP (SwiGLU, as in Llama) has three matrices of hidden x ffn;
# GPT's MLP has two. Untied models keep separate input and output
# embeddings. GPT keeps dropout (1-byte masks among its activations);
# Llama has none.
MODEL_DEFAULTS = {"gated": True, "tied_embeddings": False, "dropout": False}
# gpu: the preset (GPUS below) whose fitted GEMM share applies.
CLUSTER_KEYS = ("gpu", "gpus_per_node", "nodes", "gpu_memory_GB")
CLUSTER_KEYS += ("peak_TFLOPs",)
CLUSTER_KEYS += ("hbm_GBps", "nvlink_GBps", "nics_per_node", "nic_GBps")
TRAINING_KEYS = ("global_batch_tokens", "micro_batch")
# reserve_GB: memory on each GPU that training cannot use: the CUDA
# context and kernels (about 0.5 GB), NCCL's buffers (about 1 GB over
# several communicators) and the allocator's fragmentation.
# precision: "bf16" (or "fp16", as fast); "fp8" runs the layers' matrix
# multiplies in FP8 (Hopper's tensor cores: twice the 16-bit rate).
PRECISIONS = ("bf16", "fp16", "fp8")
# fsdp_unit: what ZeRO-3 gathers in one collective: a whole layer
# (FSDP2's fully_shard on each block) or each module, as DeepSpeed's
# ZeRO-3 does (two norms, the attention's two matrices, the MLP's).
FSDP_UNITS = ("layer", "module")
TRAINING_DEFAULTS = {
    "flash_attention": True,
    "reserve_GB": 4.0,
    "precision": "bf16",
    "fsdp_unit": "layer",
}


def as_dict(name, value, keys, defaults=()):
    """A dict (or dataclass) with every key in `keys`; no other keys."""
    if is_dataclass(value) and not isinstance(value, type):
        value = asdict(value)
    if not isinstance(value, dict):
        raise TypeError(
            f"{name} must be a dict or a dataclass, got {type(value).__name__}"
        )
    missing = [k for k in keys if k not in value]
    if missing:
        raise ValueError(f"{name} is missing {', '.join(missing)}")
    known = set(keys) | set(dict(defaults))
    unknown = sorted(set(value) - known)
    if unknown:
        raise ValueError(
            f"{name} has unknown keys {', '.join(unknown)}; "
            f"it accepts {', '.join(sorted(known))}"
        )
    return {**dict(defaults), **value}


def check_model(model):
    m = as_dict("model", model, MODEL_KEYS, MODEL_DEFAULTS)
    for key in MODEL_KEYS:
        count(f"model.{key}", m[key])
    flag("model.gated", m["gated"])
    flag("model.tied_embeddings", m["tied_embeddings"])
    flag("model.dropout", m["dropout"])
    if m["hidden"] % m["heads"]:
        raise ValueError(
            f"model.heads must divide model.hidden, "
            f"got heads={m['heads']}, hidden={m['hidden']}"
        )
    if m["heads"] % m["kv_heads"]:
        raise ValueError(
            f"model.kv_heads must divide model.heads, "
            f"got kv_heads={m['kv_heads']}, heads={m['heads']}"
        )
    return m


def check_cluster(cluster):
    c = as_dict("cluster", cluster, CLUSTER_KEYS)
    choice("cluster.gpu", c["gpu"], list(GPUS))
    for key in CLUSTER_KEYS[1:]:
        if key in ("gpus_per_node", "nodes", "nics_per_node"):
            count(f"cluster.{key}", c[key])
        else:
            number(f"cluster.{key}", c[key])
    return c


def check_training(training):
    t = as_dict("training", training, TRAINING_KEYS, TRAINING_DEFAULTS)
    count("training.global_batch_tokens", t["global_batch_tokens"])
    count("training.micro_batch", t["micro_batch"])
    flag("training.flash_attention", t["flash_attention"])
    number("training.reserve_GB", t["reserve_GB"], allow_minimum=True)
    choice("training.precision", t["precision"], PRECISIONS)
    choice("training.fsdp_unit", t["fsdp_unit"], FSDP_UNITS)
    return t


def parameter_count(model):
    """Weights of a decoder: embeddings, then per layer the attention
    (queries and output h x h; keys and values h x kv_heads x head
    size each, which grouped-query attention makes small) and the MLP
    (3 matrices if gated, else 2), and two norms. Biases are left out.
    """
    m = check_model(model)
    h, head = m["hidden"], m["hidden"] // m["heads"]
    attention = 2 * h * h + 2 * h * m["kv_heads"] * head
    mlp = (3 if m["gated"] else 2) * h * m["ffn"]
    layer = attention + mlp + 2 * h
    embeddings = m["vocab"] * h * (1 if m["tied_embeddings"] else 2)
    return m["layers"] * layer + embeddings + h


HF_KEYS = {
    "layers": "num_hidden_layers",
    "hidden": "hidden_size",
    "heads": "num_attention_heads",
    "ffn": "intermediate_size",
    "vocab": "vocab_size",
    "seq_len": "max_position_embeddings",
}


HF_NAMES = {
    **HF_KEYS,
    "kv_heads": "num_key_value_heads",
    "tied_embeddings": "tie_word_embeddings",
}


def in_config_terms(message, seq_len=None):
    """A check's message about model.<key>, with the config.json key it
    came from beside each: model.heads (num_attention_heads)."""
    for ours, hf in HF_NAMES.items():
        if ours == "seq_len" and seq_len is not None:
            continue  # given apart from the config
        message = re.sub(
            rf"\bmodel\.{ours}\b", f"model.{ours} ({hf})", message
        )
    return message


def from_hf_config(text, seq_len=None):
    """A model dict from the text of a Hugging Face config.json.

    num_key_value_heads defaults to num_attention_heads (no grouped
    queries). The MLP counts as gated when hidden_act is "silu", as in
    Llama, Mistral and Qwen configs. `seq_len` overrides the context
    length, which config.json gives as the longest the model allows.
    """
    if not isinstance(text, str):
        raise TypeError(f"config must be JSON text, got {type(text).__name__}")
    try:
        config = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(
            f"config.json is not valid JSON: {error.msg} at line "
            f"{error.lineno}, column {error.colno}"
        ) from None
    if not isinstance(config, dict):
        raise ValueError("config.json must hold a JSON object {...}")
    missing = [hf for hf in HF_KEYS.values() if hf not in config]
    if missing:
        raise ValueError(f"config.json is missing {', '.join(missing)}")
    model = {ours: config[hf] for ours, hf in HF_KEYS.items()}
    model["kv_heads"] = config.get(
        "num_key_value_heads", config["num_attention_heads"]
    )
    act = config.get("hidden_act", "silu")
    model["gated"] = act in ("silu", "swiglu")
    model["tied_embeddings"] = config.get("tie_word_embeddings", False)
    if seq_len is not None:
        model["seq_len"] = seq_len
    try:
        model = check_model(model)
    except (TypeError, ValueError) as error:
        raise type(error)(in_config_terms(str(error), seq_len)) from None
    width = model["hidden"] // model["heads"]
    if config.get("head_dim", width) != width:
        raise ValueError(
            f"config.json has head_dim {config['head_dim']}, not "
            f"hidden_size / num_attention_heads = {width}: the planner "
            "counts heads of that size only"
        )
    return model


# --8<-- [end:model]

# --8<-- [start:presets]
MODELS = {
    # Llama 3 (Meta, 2024): the published config.json of each size.
    "llama3-8b": dict(
        layers=32,
        hidden=4096,
        heads=32,
        kv_heads=8,
        ffn=14336,
        vocab=128256,
        seq_len=8192,
    ),
    "llama3-70b": dict(
        layers=80,
        hidden=8192,
        heads=64,
        kv_heads=8,
        ffn=28672,
        vocab=128256,
        seq_len=8192,
    ),
    "llama3-405b": dict(
        layers=126,
        hidden=16384,
        heads=128,
        kv_heads=8,
        ffn=53248,
        vocab=128256,
        seq_len=8192,
    ),
    # GPT-3 175B as Megatron-LM trains it: a 4h GELU MLP, tied
    # embeddings, the vocabulary padded to 51,200 (arXiv 2104.04473).
    "gpt3-175b": dict(
        layers=96,
        hidden=12288,
        heads=96,
        kv_heads=96,
        ffn=4 * 12288,
        vocab=51200,
        seq_len=2048,
        gated=False,
        tied_embeddings=True,
        dropout=True,
    ),
}
# One node of each kind: memory in GB (10^9 bytes: what nvidia-smi
# reports, 81,920 MiB on an A100 80GB and 81,559 MiB on an H100, is
# more than the "80 GB" of the name), dense bf16 peak, HBM bandwidth,
# NVLink one way, NICs per node and GB/s each way per NIC.
GPUS = {
    "a100-80gb": dict(
        gpus_per_node=8,
        gpu_memory_GB=85.9,
        peak_TFLOPs=312,
        hbm_GBps=2039,
        nvlink_GBps=300,
        nics_per_node=8,
        nic_GBps=25,  # HDR
    ),
    "h100-80gb": dict(
        gpus_per_node=8,
        gpu_memory_GB=85.5,
        peak_TFLOPs=989,
        hbm_GBps=3350,
        nvlink_GBps=450,
        nics_per_node=8,
        nic_GBps=50,  # NDR
    ),
}


def cluster(gpu, nodes, **values):
    """A cluster dict: `nodes` nodes of the preset `gpu`, with any of
    its values (gpus_per_node, gpu_memory_GB, ...) that `values` gives
    other than None in place of the preset's."""
    choice("gpu", gpu, list(GPUS))
    count("nodes", nodes)
    given = {k: v for k, v in values.items() if v is not None}
    return check_cluster({"gpu": gpu, **GPUS[gpu], "nodes": nodes, **given})


# --8<-- [end:presets]
