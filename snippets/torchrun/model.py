"""A small decoder-only transformer and the synthetic tokens it learns."""

import hashlib

import torch
import torch.nn.functional as F
from torch import nn

from snippets.torchrun.experts import MoE, feed_forward


# --8<-- [start:model]
class Embed(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.tokens = nn.Embedding(cfg.vocab, cfg.d_model)
        self.positions = nn.Embedding(cfg.seq_len, cfg.d_model)
        self.where = None  # with --cp: the positions of this rank's tokens

    def forward(self, idx):
        where = self.where
        if where is None:
            where = torch.arange(idx.shape[1], device=idx.device)
        return self.tokens(idx) + self.positions(where)


def causal(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


class Attention(nn.Module):
    """Causal self-attention. One matrix computes q, k and v, its rows
    in Megatron's order, head after head (q, k, v of head 0, then of
    head 1, ...), so that a split by rows under tensor parallelism
    gives each rank whole heads; nothing here counts the heads."""

    def __init__(self, cfg):
        super().__init__()
        self.head_dim = cfg.d_model // cfg.n_heads
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)
        self.core = causal  # with --cp: a ring over the cp ranks

    def forward(self, x):
        b, t, _ = x.shape
        qkv = self.qkv(x).view(b, t, -1, 3, self.head_dim).transpose(1, 2)
        q, k, v = qkv.unbind(dim=3)  # each (b, heads, t, head_dim)
        y = self.core(q, k, v)
        return self.proj(y.transpose(1, 2).reshape(b, t, -1))


class Block(nn.Module):
    """Pre-norm block: causal self-attention, then an MLP, or with
    --experts a mixture of experts (experts.py)."""

    def __init__(self, cfg):
        super().__init__()
        self.norm1 = nn.LayerNorm(cfg.d_model)
        self.attn = Attention(cfg)
        self.norm2 = nn.LayerNorm(cfg.d_model)
        self.mlp = MoE(cfg) if cfg.experts else feed_forward(cfg)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class Head(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.norm = nn.LayerNorm(cfg.d_model)
        self.out = nn.Linear(cfg.d_model, cfg.vocab, bias=False)

    def forward(self, x):
        return self.out(self.norm(x))


class TinyLM(nn.Module):
    """Blocks are kept by their number, so a pipeline stage that holds
    blocks 2 and 3 names their weights as the whole model does."""

    def __init__(self, cfg):
        super().__init__()
        self.embed = Embed(cfg)
        self.blocks = nn.ModuleDict(
            {str(i): Block(cfg) for i in range(cfg.n_layers)}
        )
        self.head = Head(cfg)

    def forward(self, x):
        if self.embed is not None:  # the first pipeline stage
            x = self.embed(x)
        for block in self.blocks.values():
            x = block(x)
        if self.head is not None:  # the last one
            x = self.head(x)
        return x


# --8<-- [end:model]


def build_model(cfg, seed):
    """The same initial weights on every rank, for a given seed."""
    torch.manual_seed(seed)
    return TinyLM(cfg)


# --8<-- [start:part]
def part(model, blocks, first, last):
    """A TinyLM with only `blocks` (numbers), and the embedding or head if
    it is the `first` or `last` part: the same modules, not copies."""
    piece = TinyLM.__new__(TinyLM)
    nn.Module.__init__(piece)
    piece.embed = model.embed if first else None
    piece.blocks = nn.ModuleDict(
        {str(i): model.blocks[str(i)] for i in blocks}
    )
    piece.head = model.head if last else None
    return piece


# --8<-- [end:part]


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


def step_rows(cfg, step, dp, dp_rank=None):
    """The rows of every micro-batch of `step` that data-parallel rank
    `dp_rank` of `dp` takes (all of them if None), as one batch:
    micro-batch after micro-batch."""
    b, micro = cfg.micro_batch, max(cfg.accum_steps, cfg.pp_microbatches)
    rows = (
        slice(None)
        if dp_rank is None
        else slice(dp_rank * b, (dp_rank + 1) * b)
    )
    parts = [
        batch(cfg.model, cfg.seed, step, m, dp * b, rows) for m in range(micro)
    ]
    return torch.cat([x for x, _ in parts]), torch.cat([y for _, y in parts])


# --8<-- [end:data]


def loss_fn(logits, targets):
    return F.cross_entropy(
        logits.reshape(-1, logits.shape[-1]).float(), targets.reshape(-1)
    )
