"""A small decoder-only transformer and the synthetic tokens it learns."""

import hashlib

import torch
import torch.nn.functional as F
from torch import nn


# --8<-- [start:model]
class Embed(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.tokens = nn.Embedding(cfg.vocab, cfg.d_model)
        self.positions = nn.Embedding(cfg.seq_len, cfg.d_model)

    def forward(self, idx):
        where = torch.arange(idx.shape[1], device=idx.device)
        return self.tokens(idx) + self.positions(where)


class Block(nn.Module):
    """Pre-norm block: causal self-attention, then an MLP."""

    def __init__(self, cfg):
        super().__init__()
        self.n_heads = cfg.n_heads
        self.norm1 = nn.LayerNorm(cfg.d_model)
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)
        self.norm2 = nn.LayerNorm(cfg.d_model)
        self.mlp = nn.Sequential(
            nn.Linear(cfg.d_model, cfg.d_ff),
            nn.GELU(),
            nn.Linear(cfg.d_ff, cfg.d_model),
        )

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(d, dim=2)
        q, k, v = (
            z.view(b, t, self.n_heads, d // self.n_heads).transpose(1, 2)
            for z in (q, k, v)
        )
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.norm2(x))


class Head(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.norm = nn.LayerNorm(cfg.d_model)
        self.out = nn.Linear(cfg.d_model, cfg.vocab, bias=False)

    def forward(self, x):
        return self.out(self.norm(x))


class TinyLM(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed = Embed(cfg)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.head = Head(cfg)

    def forward(self, idx):
        x = self.embed(idx)
        for block in self.blocks:
            x = block(x)
        return self.head(x)


# --8<-- [end:model]


def build_model(cfg, seed):
    """The same initial weights on every rank, for a given seed."""
    torch.manual_seed(seed)
    return TinyLM(cfg)


# --8<-- [start:data]
def batch(cfg, seed, step, micro, global_rows, rows):
    """Rows `rows` (a slice) of micro-batch `micro` of step `step`.

    Each sequence counts up from a random start by a random stride,
    modulo the vocabulary, so the next token is learnable from the two
    before it. The whole micro-batch of `global_rows` sequences depends
    only on (seed, step, micro): N ranks taking B rows each see the
    same sequences as one process taking all N x B.
    """
    key = hashlib.sha256(f"{seed}:{step}:{micro}".encode()).digest()
    g = torch.Generator().manual_seed(int.from_bytes(key[:8], "little"))
    start = torch.randint(0, cfg.vocab, (global_rows, 1), generator=g)
    stride = torch.randint(1, 8, (global_rows, 1), generator=g)
    seq = (start + stride * torch.arange(cfg.seq_len + 1)) % cfg.vocab
    seq = seq[rows]
    return seq[:, :-1], seq[:, 1:]


# --8<-- [end:data]


def loss_fn(logits, targets):
    return F.cross_entropy(
        logits.reshape(-1, logits.shape[-1]).float(), targets.reshape(-1)
    )
