"""The planner's inputs: a model, a cluster and a batch, checked and
counted; presets for a few published models and GPUs."""

# --8<-- [start:model]
import json
import re
from dataclasses import MISSING, asdict, dataclass, fields, is_dataclass

from snippets.checks import choice, count, flag, number

# precision: "bf16" (or "fp16", as fast); "fp8" runs the layers' matrix
# multiplies in FP8 (Hopper's tensor cores: twice the 16-bit peak on the
# datasheet; the planner's fitted fp8_speedup is what they reach). MFU
# is still counted against the 16-bit peak. "fp32": the weights FSDP2
# gathers stay in 4 bytes, as the script runs on a CPU (priced as bf16).
PRECISIONS = ("bf16", "fp16", "fp8", "fp32")
# fsdp_unit: what ZeRO-3 gathers in one collective: a whole layer
# (FSDP2's fully_shard on each block) or each module, as DeepSpeed's
# ZeRO-3 does (two norms, the attention's two matrices, the MLP's).
FSDP_UNITS = ("layer", "module")
# reduce_dtype: what the data-parallel reductions move per gradient:
# "fp32" (4 bytes, FSDP2's reduce_dtype under the course's policy and
# torchtitan's, and DDP under autocast) or "bf16" (2 bytes, the fp16
# runs of Megatron-LM and DeepSpeed).
REDUCE_DTYPES = ("fp32", "bf16")
# stack: the software that runs the layers: "native" PyTorch (FSDP2 and
# PyTorch's own kernels, compiled with torch.compile, as torchtitan
# runs them), "eager" PyTorch (the same, one kernel per operator: the
# course's script, torchtitan's eager rows) or a "fused" stack
# (Megatron-LM, NeMo, and DeepSpeed on Megatron's model code).
STACKS = ("native", "eager", "fused")
# cp_exchange: how context parallelism moves keys and values. "ring":
# each of the cp - 1 steps sends the next block while attention runs
# on the one held, and the backward pass sends the blocks again with
# their gradients (Megatron-Core's and Transformer Engine's p2p ring,
# the course's script). "allgather": PyTorch's context_parallel with
# its default all-gather rotater (torch/distributed/tensor/
# experimental/_attention.py, late 2024): the blocks are all-gathered
# once per pass behind the first block's attention only, and the
# backward pass passes the gradients of K and V around the ring in
# fp32, one step at a time, the last with nothing left to hide behind.
CP_EXCHANGES = ("ring", "allgather")


@dataclass(frozen=True, kw_only=True)
class Model:
    """A decoder's shape. A gated MLP (SwiGLU, as in Llama) has three
    matrices of hidden x ffn; GPT's MLP has two. Untied models keep
    separate input and output embeddings. GPT keeps dropout (1-byte
    masks among its activations); Llama has none. head_dim: each
    head's width, None for hidden / heads (Qwen3's heads are wider).
    A mixture of experts has `experts` MLPs of hidden x ffn in each
    layer and a router that sends each token to `top_k` of them; a
    dense model is one expert, top-1."""

    layers: int
    hidden: int
    heads: int
    kv_heads: int
    ffn: int
    vocab: int
    seq_len: int
    gated: bool = True
    tied_embeddings: bool = False
    dropout: bool = False
    head_dim: int | None = None
    experts: int = 1
    top_k: int = 1

    def __post_init__(self):
        for f in fields(self):
            if f.name == "head_dim" and self.head_dim is None:
                continue
            check = flag if f.type is bool else count
            check(f"model.{f.name}", getattr(self, f.name))
        if self.top_k > self.experts:
            raise ValueError(
                f"model.top_k must be <= model.experts ({self.experts}), "
                f"got {self.top_k}"
            )
        if self.head_dim is None and self.hidden % self.heads:
            raise ValueError(
                f"model.heads must divide model.hidden, "
                f"got heads={self.heads}, hidden={self.hidden}"
            )
        if self.heads % self.kv_heads:
            raise ValueError(
                f"model.kv_heads must divide model.heads, "
                f"got kv_heads={self.kv_heads}, heads={self.heads}"
            )

    @property
    def head_width(self):
        return self.head_dim or self.hidden // self.heads

    @property
    def q_width(self):
        """Width of the queries (and of attention's output), all heads."""
        return self.heads * self.head_width

    @property
    def kv_width(self):
        """Width of the keys (or the values) of all KV heads."""
        return self.kv_heads * self.head_width


@dataclass(frozen=True, kw_only=True)
class Cluster:
    """`nodes` nodes of `gpus_per_node` GPUs. gpu: the preset (GPUS
    below) whose fitted GEMM share applies."""

    gpu: str
    gpus_per_node: int
    nodes: int
    gpu_memory_GB: float
    peak_TFLOPs: float
    hbm_GBps: float
    nvlink_GBps: float
    nics_per_node: int
    nic_GBps: float

    def __post_init__(self):
        choice("cluster.gpu", self.gpu, list(GPUS))
        for f in fields(self)[1:]:
            check = count if f.type is int else number
            check(f"cluster.{f.name}", getattr(self, f.name))

    @property
    def gpus(self):
        return self.gpus_per_node * self.nodes


@dataclass(frozen=True, kw_only=True)
class Training:
    """The batch and how it is trained. reserve_GB: memory on each GPU
    that training cannot use: the CUDA context and kernels (about
    0.5 GB), NCCL's buffers (about 1 GB over several communicators)
    and the allocator's fragmentation. distribute_saved_activations:
    full recomputation keeps each layer's input split among the
    tensor-parallel ranks, and gathers it before running the layer
    again (Megatron-LM's --distribute-saved-activations, metaseq's
    --distribute-checkpointed-activations); sequence parallelism
    splits it anyway. scatter_gather_sends: without sequence
    parallelism, each tensor-parallel rank sends only its 1/t piece of
    the activations to the next stage, which gathers them over NVLink
    (Megatron-LM's scatter/gather optimization, Narayanan et al. 2021,
    section 4.1); sequence parallelism sends pieces anyway.
    tp_overlap: the tensor-parallel collectives run beside the matrix
    multiplies they feed, in pieces (Megatron-Core's tp_comm_overlap,
    PyTorch's async TP), and hide as much as other overlapped
    communication does. cp_exchange: see CP_EXCHANGES. kv_repeated:
    the keys and values are copied to one head per query head before
    attention (torchtitan's repeat_kv), so context parallelism moves
    them at the queries' width, not the KV heads'. pooled_nics: a
    data-parallel ring with several GPUs in each node crosses from node
    to node on all their NICs at once, as NCCL's rings side by side do
    (the comms lesson); False gives it one NIC, all that DeepSpeed's
    ZeRO-3 of 2021 sustained (Narayanan et al. 2021, Table 2)."""

    global_batch_tokens: int
    micro_batch: int
    flash_attention: bool = True
    reserve_GB: float = 4.0
    precision: str = "bf16"
    fsdp_unit: str = "layer"
    reduce_dtype: str = "fp32"
    stack: str = "native"
    distribute_saved_activations: bool = False
    scatter_gather_sends: bool = False
    tp_overlap: bool = False
    cp_exchange: str = "ring"
    kv_repeated: bool = False
    pooled_nics: bool = True

    def __post_init__(self):
        count("training.global_batch_tokens", self.global_batch_tokens)
        count("training.micro_batch", self.micro_batch)
        flag("training.flash_attention", self.flash_attention)
        number("training.reserve_GB", self.reserve_GB, allow_minimum=True)
        choice("training.precision", self.precision, PRECISIONS)
        choice("training.fsdp_unit", self.fsdp_unit, FSDP_UNITS)
        choice("training.reduce_dtype", self.reduce_dtype, REDUCE_DTYPES)
        choice("training.stack", self.stack, STACKS)
        flag(
            "training.distribute_saved_activations",
            self.distribute_saved_activations,
        )
        flag("training.scatter_gather_sends", self.scatter_gather_sends)
        flag("training.tp_overlap", self.tp_overlap)
        choice("training.cp_exchange", self.cp_exchange, CP_EXCHANGES)
        flag("training.kv_repeated", self.kv_repeated)
        flag("training.pooled_nics", self.pooled_nics)


def checked(cls, name, value):
    """`value` as a `cls`: itself, or built from a dict (or another
    dataclass) that has every field without a default and no other."""
    if isinstance(value, cls):
        return value
    if is_dataclass(value) and not isinstance(value, type):
        value = asdict(value)
    if not isinstance(value, dict):
        raise TypeError(
            f"{name} must be a dict or a dataclass, got {type(value).__name__}"
        )
    keys = [f.name for f in fields(cls)]
    required = [f.name for f in fields(cls) if f.default is MISSING]
    missing = [k for k in required if k not in value]
    if missing:
        raise ValueError(f"{name} is missing {', '.join(missing)}")
    unknown = sorted(set(value) - set(keys))
    if unknown:
        raise ValueError(
            f"{name} has unknown keys {', '.join(unknown)}; "
            f"it accepts {', '.join(sorted(keys))}"
        )
    return cls(**value)


def check_model(model):
    return checked(Model, "model", model)


def check_cluster(cluster):
    return checked(Cluster, "cluster", cluster)


def check_training(training):
    return checked(Training, "training", training)


def parameter_count(model):
    """Weights of a decoder: embeddings, then per layer the attention
    (queries and output h x h; keys and values h x kv_heads x head
    size each, which grouped-query attention makes small) and the MLP
    (3 matrices if gated, else 2), and two norms. Biases are left out.
    """
    m = check_model(model)
    h = m.hidden
    attention = 2 * h * m.q_width + 2 * h * m.kv_width
    mlp = (3 if m.gated else 2) * h * m.ffn * m.experts
    router = h * m.experts if m.experts > 1 else 0
    layer = attention + mlp + router + 2 * h
    embeddings = m.vocab * h * (1 if m.tied_embeddings else 2)
    return m.layers * layer + embeddings + h


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
        checked_model = check_model(model)
    except (TypeError, ValueError) as error:
        raise type(error)(in_config_terms(str(error), seq_len)) from None
    width = checked_model.hidden // checked_model.heads
    if config.get("head_dim", width) != width:
        raise ValueError(
            f"config.json has head_dim {config['head_dim']}, not "
            f"hidden_size / num_attention_heads = {width}: the planner "
            "counts heads of that size only"
        )
    return asdict(checked_model)


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
    # Mixtral 8x7B (Mistral AI, 2024): 8 experts of Mistral 7B's MLP in
    # each layer, top-2 (its published config.json).
    "mixtral-8x7b": dict(
        layers=32,
        hidden=4096,
        heads=32,
        kv_heads=8,
        ffn=14336,
        vocab=32000,
        seq_len=4096,
        experts=8,
        top_k=2,
    ),
    # Qwen3 235B-A22B (Qwen, 2025): 128 experts of width 1,536, top-8,
    # and heads of 128 (its published config.json).
    "qwen3-235b-a22b": dict(
        layers=94,
        hidden=4096,
        heads=64,
        kv_heads=4,
        head_dim=128,
        ffn=1536,
        vocab=151936,
        seq_len=4096,
        experts=128,
        top_k=8,
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
    """A cluster, as a dict: `nodes` nodes of the preset `gpu`, with any of
    its values (gpus_per_node, gpu_memory_GB, ...) that `values` gives
    other than None in place of the preset's."""
    choice("gpu", gpu, list(GPUS))
    count("nodes", nodes)
    given = {k: v for k, v in values.items() if v is not None}
    values = {"gpu": gpu, **GPUS[gpu], "nodes": nodes, **given}
    return asdict(check_cluster(values))


# --8<-- [end:presets]
