"""Activation memory of the decoder in model.py, predicted term by term:
what each operation of `Block.forward` saves for backward. Plain Python,
no torch: course/instruments/activations.py measures the same bytes with
torch, and tests/test_torchrun_activations.py holds them equal.

On CPU, torch 2.13 runs
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

from dataclasses import dataclass


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
    return [  # model.py, Block.forward and Attention.forward
        # self.attn(self.norm1(x)): self.qkv(x)
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
