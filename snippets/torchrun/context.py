"""Context parallelism: attention over a sequence split across ranks.

Each rank of a cp group holds some tokens of every sequence. Everything
in a block but attention works token by token, so it runs on those
tokens alone; attention needs the keys and values of every earlier
token, and `Ring` brings them by passing K/V blocks round the group.

Why our own ring: torch's `context_parallel` (torch.distributed.tensor.
experimental) swaps in ring attention for the CUDA kernels of
scaled_dot_product_attention only (flash, memory-efficient, cuDNN). On
a CPU, SDPA runs `_scaled_dot_product_flash_attention_for_cpu`, which it
refuses ("does not have a sharding strategy registered"), so this file
writes the same ring with point-to-point sends, in plain tensor maths.
"""

import math

import torch
import torch.distributed as dist


# --8<-- [start:positions]
def positions(seq_len, cp, cp_rank, balance):
    """The token positions rank `cp_rank` of `cp` holds, in order.

    "none": one contiguous piece, s/cp tokens. "zigzag": of 2 x cp equal
    chunks, chunks r and 2cp - 1 - r. Under the causal mask a late token
    attends to many keys and an early one to few; pairing an early chunk
    with a late one gives every rank the same work at every ring step.
    """
    if balance == "none":
        size = seq_len // cp
        return torch.arange(cp_rank * size, (cp_rank + 1) * size)
    size = seq_len // (2 * cp)
    chunks = (cp_rank, 2 * cp - 1 - cp_rank)
    return torch.cat([torch.arange(c * size, (c + 1) * size) for c in chunks])


# --8<-- [end:positions]


def chunks(where):
    """`where` cut into its runs of consecutive positions: (start, end)
    index pairs into it. Attention runs per pair of runs, so that a pair
    wholly in the future is skipped, not computed and masked."""
    breaks = [0]
    breaks += [i for i in range(1, len(where)) if where[i] != where[i - 1] + 1]
    return list(zip(breaks, [*breaks[1:], len(where)], strict=True))


# --8<-- [start:ring]
class Ring:
    """Causal attention of this rank's queries against every rank's
    keys and values, passed round the cp group.

    At step t of cp steps, rank r holds the K/V block that started on
    rank (r - t) mod cp. It sends that block on to rank r + 1 while it
    computes with it, and folds the scores into a running log-sum-exp
    per query (online softmax), so that the result is exact. `exchange`
    (every send) and `attend` (every block of scores) are the two places
    a measuring tool may wrap.
    """

    PHASES = ("forward", "backward", "gradients")  # what a send carries

    def __init__(self, group, seq_len, balance, device):
        self.group, self.balance = group, balance
        self.cp, self.rank = group.size(), group.rank()
        where = [
            positions(seq_len, self.cp, r, balance) for r in range(self.cp)
        ]
        self.where = where[self.rank]
        self.next = dist.get_global_rank(group, (self.rank + 1) % self.cp)
        self.prev = dist.get_global_rank(group, (self.rank - 1) % self.cp)
        self.steps = [
            pairs(self.where, where[self.source(t)], device)
            for t in range(self.cp)
        ]

    def __call__(self, q, k, v):
        """q, k, v: (batch, heads, local tokens, head size)."""
        return RingAttention.apply(q, k, v, self)

    def source(self, step):
        """The rank whose K/V block this rank holds at ring `step`."""
        return (self.rank - step) % self.cp

    def exchange(self, tensor, phase):
        """Send `tensor` to the next rank and receive the previous rank's
        into a new one, both started now; returns a function that waits
        for them and gives what came. Each phase has its own tag, so K/V
        and their gradients, in flight at once, cannot cross."""
        received = torch.empty_like(tensor)
        tag = self.PHASES.index(phase)
        works = dist.batch_isend_irecv(
            [
                dist.P2POp(dist.isend, tensor, self.next, self.group, tag),
                dist.P2POp(dist.irecv, received, self.prev, self.group, tag),
            ]
        )

        def wait():
            for work in works:
                work.wait()
            return received

        return wait

    def attend(self, step, q, k, v, visible):
        """One block of scores, q against k (both (b, heads, n, d), fp32),
        `visible` its causal mask (None: every pair). Returns the block's
        own (output, log-sum-exp)."""
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        if visible is not None:
            scores = scores.masked_fill(~visible, -math.inf)
        lse = torch.logsumexp(scores, dim=-1)
        return torch.exp(scores - lse.unsqueeze(-1)) @ v, lse


def pairs(mine, theirs, device):
    """(query run, key run, causal mask or None) for each pair of runs
    of positions `mine` x `theirs` with a key at or before a query."""
    found = []
    for qa, qb in chunks(mine):
        for ka, kb in chunks(theirs):
            visible = theirs[ka:kb][None, :] <= mine[qa:qb][:, None]
            if not visible.any():
                continue  # the whole key run lies in the future
            mask = None if visible.all() else visible.to(device)
            found.append((slice(qa, qb), slice(ka, kb), mask))
    return found


def merge(out, lse, block_out, block_lse):
    """Fold a block's (output, log-sum-exp) into the running ones: both
    are re-weighted to the combined log-sum-exp, so the outputs add up
    to the softmax over all the keys seen so far."""
    both = torch.logaddexp(lse, block_lse)
    out = out * torch.exp(lse - both).unsqueeze(-1)
    out = out + block_out * torch.exp(block_lse - both).unsqueeze(-1)
    return out, both


# --8<-- [end:ring]


# --8<-- [start:autograd]
class RingAttention(torch.autograd.Function):
    """The ring forward and a ring backward. The maths runs in fp32;
    K and V travel in the model's dtype, their gradients in fp32, as
    they add up over the hops. Backward recomputes each block's
    probabilities from the saved log-sum-exp (as FlashAttention does)
    and passes K and V round again, and with them dK and dV: each rank
    adds what its queries owe a block's keys, and after cp hops every
    block's gradients are back on the rank that owns it."""

    @staticmethod
    def forward(ctx, q, k, v, ring):
        b, h, n, _ = q.shape
        qf = q.float()
        out = torch.zeros_like(qf)
        lse = torch.full((b, h, n), -math.inf, device=q.device)
        kv = torch.stack([k, v]).contiguous()
        for step in range(ring.cp):
            if step < ring.cp - 1:  # the next block travels meanwhile
                wait = ring.exchange(kv, "forward")
            for qs, ks, mask in ring.steps[step]:
                o, s = ring.attend(
                    step,
                    qf[:, :, qs],
                    kv[0][:, :, ks].float(),
                    kv[1][:, :, ks].float(),
                    mask,
                )
                out[:, :, qs], lse[:, :, qs] = merge(
                    out[:, :, qs], lse[:, :, qs], o, s
                )
            if step < ring.cp - 1:
                kv = wait()
        ctx.ring = ring
        ctx.save_for_backward(q, k, v, out, lse)
        return out.to(q.dtype)

    @staticmethod
    def backward(ctx, grad_out):
        ring = ctx.ring
        q, k, v, out, lse = ctx.saved_tensors
        dtypes = q.dtype, k.dtype
        q, dout = q.float(), grad_out.float()
        scale = 1 / math.sqrt(q.shape[-1])
        # softmax's backward needs sum_j p_ij dp_ij = rowsum(dO * O)
        delta = (dout * out).sum(-1, keepdim=True)
        dq = torch.zeros_like(q)
        kv = torch.stack([k, v]).contiguous()
        dkv = torch.zeros(kv.shape, device=q.device)
        for step in range(ring.cp):
            if step < ring.cp - 1:
                wait = ring.exchange(kv, "backward")
            for qs, ks, mask in ring.steps[step]:
                kb, vb = kv[0][:, :, ks].float(), kv[1][:, :, ks].float()
                scores = q[:, :, qs] @ kb.transpose(-2, -1) * scale
                p = torch.exp(scores - lse[:, :, qs].unsqueeze(-1))
                if mask is not None:
                    p = p.masked_fill(~mask, 0.0)
                dp = dout[:, :, qs] @ vb.transpose(-2, -1)
                ds = p * (dp - delta[:, :, qs]) * scale
                dq[:, :, qs] += ds @ kb
                dkv[0][:, :, ks] += ds.transpose(-2, -1) @ q[:, :, qs]
                dkv[1][:, :, ks] += p.transpose(-2, -1) @ dout[:, :, qs]
            # dK and dV follow their block: after cp hops they are home
            dkv = ring.exchange(dkv, "gradients")()
            if step < ring.cp - 1:
                kv = wait()
        dq, (dk, dv) = dq.to(dtypes[0]), dkv.to(dtypes[1])
        return dq, dk, dv, None


# --8<-- [end:autograd]


# --8<-- [start:attach]
def attach(model, cfg, layout, device):
    """Put one Ring in every block's attention, and tell the embedding
    which positions this rank's tokens sit at. Returns the ring."""
    group = layout.mesh["cp"].get_group()
    ring = Ring(group, cfg.model.seq_len, cfg.cp_balance, device)
    if model.embed is not None:
        model.embed.where = ring.where.to(device)
    for block in model.blocks.values():
        block.attn.core = ring
    return ring


def fold(layout):
    """dp x cp as one mesh dimension: the group over which data
    parallelism shards and reduces. The cp ranks hold the same weights
    and each computes gradients from its own tokens, so their
    gradients add up as those of data-parallel ranks do."""
    return layout.mesh["dp", "cp"]._flatten("dp_cp")


# --8<-- [end:attach]
