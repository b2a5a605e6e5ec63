"""Activation memory of the decoder in model.py: measured and predicted.

Measured: one forward pass runs under `saved_tensors_hooks`, which sees
every tensor autograd keeps for backward. Parameters (and views or
autocast copies of them) are left out, and each storage counts once: q,
k and v are three views of one qkv output, one allocation.

Predicted: `block_terms` lists, term by term, what each operation in
`Block.forward` saves. On CPU, torch 2.13 runs
`scaled_dot_product_attention(q, k, v, is_causal=True)` with its flash
kernel: the backward node is ScaledDotProductFlashAttentionForCpuBackward0,
which saves query, key, value, output and logsumexp, never the s x s
scores. The logsumexp is fp32, batch x heads x s, in bf16 runs too.

Korthikanti et al. (2022, arXiv 2205.05198) count sbh(34 + 5as/h) bytes
per layer for 16-bit activations with dropout and d_ff = 4h. At 2 bytes
and d_ff = 4h, this block's sbh terms come to 32sbh: the same tensors,
less the two sbh dropout masks, as this decoder has no dropout. Their
5as^2b (the s x s softmax output, its dropout mask and the dropped-out
copy) becomes a logsumexp of 4abs bytes (fp32), because the flash
kernel recomputes the scores in backward. We add the LayerNorms' mean
and rstd (4bs values per block), which they neglect; GELU's input and
output are 2sbf values, not 16sbh, as d_ff is a free flag; biases add
nothing, as their gradient needs only the output's. On the CPU every
value is fp32, 4 bytes, so the CPU figures are about twice as large.

bf16: under autocast the matmuls' inputs and outputs are bf16 (2 bytes)
but the residual stream stays fp32 and LayerNorm runs in fp32, so the
LayerNorm inputs and statistics keep 4 bytes (`residual=4`). With bf16
parameters and inputs, as FSDP2's policy makes them, everything is bf16
except the logsumexp, and LayerNorm's mean and rstd: fp32 from the CUDA
kernel, bf16 from the CPU one (`stats=2`).
"""

import copy
from contextlib import nullcontext
from dataclasses import dataclass

import torch
from torch.overrides import TorchFunctionMode


@dataclass(frozen=True)
class Bytes:
    """Activation bytes, by the torch function that saved them."""

    by_function: dict[str, int]

    @property
    def total(self):
        return sum(self.by_function.values())

    @classmethod
    def add_up(cls, terms):
        """From (function, bytes) pairs."""
        by_function = {}
        for function, nbytes in terms:
            by_function[function] = by_function.get(function, 0) + nbytes
        return cls(dict(sorted(by_function.items())))


# --8<-- [start:measure]
def is_weight(t, module):
    """A parameter of `module`, or a view or autocast copy of one: the
    same size for any batch, so not an activation."""
    node = t.grad_fn  # e.g. TBackward0 -> ToCopyBackward0 -> AccumulateGrad
    while node is not None and len(node.next_functions) == 1:
        node = node.next_functions[0][0]
    source = getattr(node, "variable", t)  # AccumulateGrad holds the leaf
    weights = {p.untyped_storage().data_ptr() for p in module.parameters()}
    return source.untyped_storage().data_ptr() in weights


class SavedTensors(TorchFunctionMode):
    """Notes each storage autograd saves, and the function that saved it."""

    def __init__(self, module):
        super().__init__()
        self.module, self.calling, self.kept = module, "other", {}

    def __torch_function__(self, func, types, args=(), kwargs=None):
        outer, self.calling = self.calling, getattr(func, "__name__", "?")
        try:
            return func(*args, **(kwargs or {}))
        finally:
            self.calling = outer

    def pack(self, t):
        if not is_weight(t, self.module):
            storage = t.untyped_storage()  # q, k, v: one storage
            # Holding the storage keeps its address from being reused.
            self.kept.setdefault(storage.data_ptr(), (self.calling, storage))
        return t


def saved_bytes(module, *inputs):
    """Bytes autograd saves for backward in `module(*inputs)`."""
    saver = SavedTensors(module)
    hooks = torch.autograd.graph.saved_tensors_hooks(saver.pack, lambda t: t)
    with saver, hooks:
        module(*inputs)
    return Bytes.add_up((f, s.nbytes()) for f, s in saver.kept.values())


def saved_bytes_per_block(block, x):
    """One Block's activations for input x (batch, seq_len, d_model)."""
    return saved_bytes(block, x)


# --8<-- [end:measure]


# --8<-- [start:predict]
def block_terms(s, b, h, a, f, p=4, residual=None, stats=4):
    """(function, what, bytes) for each tensor one Block saves.

    p: bytes of a matmul's input or output; residual: bytes of the
    residual stream x (4 under autocast, which keeps it fp32); stats:
    bytes of LayerNorm's mean and rstd (fp32 unless LayerNorm itself
    runs in bf16 on the CPU).
    """
    r = p if residual is None else residual
    sdpa = "scaled_dot_product_attention"
    return [  # model.py, Block.forward
        # self.qkv(self.norm1(x))
        ("layer_norm", "norm1 input x", b * s * h * r),
        ("layer_norm", "norm1 mean, rstd", 2 * b * s * stats),
        ("linear", "qkv input, norm1(x)", b * s * h * p),
        # F.scaled_dot_product_attention(q, k, v, is_causal=True)
        (sdpa, "q, k, v: the qkv output", 3 * b * s * h * p),
        (sdpa, "output y", b * s * h * p),
        (sdpa, "logsumexp", b * a * s * 4),
        # self.proj(y.transpose(1, 2).reshape(b, t, d)) keeps y: no term
        # self.mlp(self.norm2(x)), x the residual sum
        ("layer_norm", "norm2 input x", b * s * h * r),
        ("layer_norm", "norm2 mean, rstd", 2 * b * s * stats),
        ("linear", "mlp[0] input, norm2(x)", b * s * h * p),
        ("gelu", "GELU input", b * s * f * p),
        ("linear", "mlp[2] input, GELU output", b * s * f * p),
    ]


def outside_terms(s, b, h, p=4, residual=None, stats=4):
    """Embed and Head. The loss, outside the model, is not counted: its
    log_softmax keeps b x s x vocab fp32 values, the targets b x s x 8.
    The token ids count b x s x 8 bytes when idx has a storage of its
    own; a slice of longer rows keeps those rows."""
    r = p if residual is None else residual
    return [
        # Embed: self.tokens(idx) + self.positions(where)
        ("embedding", "token ids, int64", b * s * 8),
        ("embedding", "positions, int64", s * 8),
        # Head: self.out(self.norm(x))
        ("layer_norm", "head norm input x", b * s * h * r),
        ("layer_norm", "head norm mean, rstd", 2 * b * s * stats),
        ("linear", "out input, norm(x)", b * s * h * p),
    ]


def predicted_bytes_per_block(
    seq_len, micro_batch, d_model, n_heads, d_ff, bytes_per_value=4, **kw
):
    """What `saved_bytes_per_block` should measure; kw: residual, stats."""
    terms = block_terms(
        seq_len, micro_batch, d_model, n_heads, d_ff, bytes_per_value, **kw
    )
    return Bytes.add_up((function, n) for function, _, n in terms)


def predicted_bytes_per_model(cfg, micro_batch, bytes_per_value=4, **kw):
    """cfg: a ModelConfig. n_layers blocks, plus Embed and Head."""
    s, b, h, p = cfg.seq_len, micro_batch, cfg.d_model, bytes_per_value
    block = block_terms(s, b, h, cfg.n_heads, cfg.d_ff, p, **kw)
    terms = block * cfg.n_layers + outside_terms(s, b, h, p, **kw)
    return Bytes.add_up((function, n) for function, _, n in terms)


# --8<-- [end:predict]


# --8<-- [start:record]
def record(model, cfg, device, mixed):
    """The figures train.py reports: one micro-batch, in the run's dtype.

    Call on rank 0 before the model is wrapped. A copy runs, so the
    model is untouched; the values of the input do not matter.
    """
    m, b = cfg.model, cfg.micro_batch
    model = copy.deepcopy(model).to(device)
    x = torch.zeros(b, m.seq_len, m.d_model, device=device)
    amp, kw = nullcontext(), {}
    if mixed and cfg.strategy == "ddp":  # autocast keeps x in fp32
        amp = torch.autocast(device.type, dtype=torch.bfloat16)
        kw = {"bytes_per_value": 2, "residual": 4}
    elif mixed:  # FSDP2 casts parameters and inputs to bf16
        model, x = model.to(torch.bfloat16), x.to(torch.bfloat16)
        kw = {"bytes_per_value": 2}  # fp32 mean and rstd, as on CUDA
    idx = torch.zeros(b, m.seq_len, dtype=torch.long, device=device)
    with amp:
        block = saved_bytes_per_block(model.blocks[0], x.requires_grad_())
        whole = saved_bytes(model, idx)
    shape = m.seq_len, b, m.d_model, m.n_heads, m.d_ff
    return {
        "block_by_function": block.by_function,
        "block": block.total,
        "block_predicted": predicted_bytes_per_block(*shape, **kw).total,
        "n_layers": m.n_layers,
        "model": whole.total,  # n_layers blocks, Embed and Head
        "model_predicted": predicted_bytes_per_model(m, b, **kw).total,
    }


# --8<-- [end:record]
