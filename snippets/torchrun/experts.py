"""A mixture-of-experts MLP, and expert parallelism over ep ranks.

The router sends each token to its top k of E experts. Every expert has
a buffer of C seats per sequence, C = ceil(capacity factor x k x s / E)
as in the experts lab (snippets/experts/routing.py), filled as GShard
fills it: first choices before second choices, each in token order. An
assignment that finds its expert full is dropped and counted; the token
keeps its residual there. Capacity is counted per sequence, so which
tokens a sequence keeps does not depend on the rank or micro-batch that
holds it, and one process that sees the whole batch drops the same ones
(--check compares their gradients).

With --ep N the experts are spread over N ranks of the data-parallel
group, E / N each. The buffers travel, the weights stay: one all-to-all
sends each expert its seats (dispatch), a second brings the outputs back
(combine), and autograd runs both again, reversed, in the backward pass.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn
from torch.distributed._functional_collectives import (
    all_to_all_single_autograd,
)

ALPHA = 0.01  # the balancing loss's weight, as in the Switch Transformer


def feed_forward(cfg):
    """The dense block's MLP; each expert is one of the same size."""
    return nn.Sequential(
        nn.Linear(cfg.d_model, cfg.d_ff),
        nn.GELU(),
        nn.Linear(cfg.d_ff, cfg.d_model),
    )


# --8<-- [start:experts]
class Experts(nn.ModuleDict):
    """The experts a rank holds, kept by their number: under expert
    parallelism each rank keeps its own and names their weights as the
    whole model does, so checkpoints and checks find them."""

    def forward(self, seats):  # (experts held, rows, h)
        return torch.stack(
            [
                expert(rows)
                for expert, rows in zip(self.values(), seats, strict=True)
            ]
        )


class BalancingLoss(torch.autograd.Function):
    """Returns x unchanged; in the backward pass, adds `weight` as the
    gradient of `aux`. The balancing loss joins the training loss
    where it is computed, in any pipeline stage, without travelling to
    the last stage's loss function (Megatron-Core does the same)."""

    @staticmethod
    def forward(ctx, x, aux, weight):
        ctx.save_for_backward(aux)
        ctx.weight = weight
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        (aux,) = ctx.saved_tensors
        return grad, torch.full_like(aux, ctx.weight), None


class MoE(nn.Module):
    """A router and E experts in place of the block's MLP."""

    def __init__(self, cfg):
        super().__init__()
        self.n_experts, self.top_k = cfg.experts, cfg.top_k
        self.capacity_factor = cfg.capacity_factor
        self.router = nn.Linear(cfg.d_model, cfg.experts, bias=False)
        self.experts = Experts(
            {str(e): feed_forward(cfg) for e in range(cfg.experts)}
        )
        self.group = None  # the expert-parallel group, if any
        # The balancing loss's weight per micro-batch, set to the scale
        # of the training loss's gradient by `expert_parallel`.
        self.aux_weight = ALPHA
        self.counts = None  # (routed, kept) assignments per expert

    # --8<-- [end:experts]

    # --8<-- [start:route]
    def route(self, x):
        """Each token's top k experts, and each assignment's seat.
        Returns the router's probabilities (b, s, E), the chosen experts
        and their probabilities (b, k, s: first choices, then second),
        the seats (b, k, s) and the capacity C."""
        b, s, _ = x.shape
        probs = self.router(x).float().softmax(dim=-1)
        gate, chosen = probs.topk(self.top_k, dim=-1)
        gate, chosen = gate.transpose(1, 2), chosen.transpose(1, 2)
        order = F.one_hot(chosen.reshape(b, -1), self.n_experts)
        # an assignment's seat: the assignments before it, in this
        # order, that went to the same expert
        seat = ((order.cumsum(dim=1) - 1) * order).sum(dim=-1)
        k, e = self.top_k, self.n_experts
        capacity = math.ceil(self.capacity_factor * k * s / e)
        return probs, chosen, gate, seat.view(b, k, s), capacity

    # --8<-- [end:route]

    # --8<-- [start:forward]
    def forward(self, x):
        b, s, h = x.shape
        probs, chosen, gate, seat, c = self.route(x)
        kept = (seat < c).flatten().nonzero().squeeze(1)
        row = torch.arange(b, device=x.device).view(b, 1, 1)
        pos = torch.arange(s, device=x.device).view(1, 1, s)
        # where each kept assignment sits in the (E, b, C, h) buffer,
        # and which token it carries
        to = ((chosen * b + row) * c + seat).flatten()[kept]
        token = (row * s + pos).expand(b, self.top_k, s).flatten()[kept]
        tokens = x.reshape(b * s, h)
        seats = tokens.new_zeros(self.n_experts * b * c, h)
        seats = seats.index_copy(0, to, tokens[token])
        out = self.exchange(seats.view(self.n_experts, b * c, h))
        weights = gate.flatten()[kept].unsqueeze(1).to(out.dtype)
        y = out.reshape(-1, h)[to] * weights
        y = tokens.new_zeros(b * s, h).index_add(0, token, y)
        self.count(chosen, kept)
        return BalancingLoss.apply(
            y.view(b, s, h), balancing_loss(probs, chosen), self.aux_weight
        )

    def exchange(self, seats):
        """The experts' outputs for these seats (E, rows, h). With
        expert parallelism, the dispatch all-to-all sends rank j the
        seats of its E / ep experts and receives theirs from every rank;
        the combine all-to-all returns the outputs the same way."""
        if self.group is None:
            return self.experts(seats)
        e, rows, h = seats.shape
        ep = self.group.size()
        dispatch = all_to_all_single_autograd(
            seats.reshape(e * rows, h), None, None, self.group
        )
        mine = dispatch.view(ep, e // ep, rows, h).transpose(0, 1)
        out = self.experts(mine.reshape(e // ep, ep * rows, h))
        back = out.view(e // ep, ep, rows, h).transpose(0, 1)
        combine = all_to_all_single_autograd(
            back.reshape(e * rows, h), None, None, self.group
        )
        return combine.view(e, rows, h)

    # --8<-- [end:forward]

    def count(self, chosen, kept):
        """Add this pass's assignments to `counts`: (routed, kept) per
        expert, before and after the capacity. A forward pass that
        --recompute full runs again in the backward counts again."""
        experts = chosen.flatten()
        found = torch.stack(
            [
                torch.bincount(experts, minlength=self.n_experts),
                torch.bincount(experts[kept], minlength=self.n_experts),
            ]
        )
        self.counts = found if self.counts is None else self.counts + found


# --8<-- [start:aux]
def balancing_loss(probs, chosen):
    """The Switch Transformer's loss, E x sum_i f_i P_i, per sequence
    and averaged: f_i is the share of the sequence's tokens whose first
    choice is expert i, P_i the mean probability the router gives it.
    Only P_i carries a gradient."""
    e = probs.shape[-1]
    f = F.one_hot(chosen[:, 0], e).float().mean(dim=1)  # (b, E)
    p = probs.mean(dim=1)
    return (e * (f * p).sum(dim=-1)).mean()


# --8<-- [end:aux]


# --8<-- [start:parallel]
def expert_parallel(model, cfg, layout):
    """Keep this rank's experts and give each MoE layer its group. The
    balancing loss's gradient takes the training loss's scale: divided
    by --accum-steps, which divides the loss; a pipeline divides every
    gradient by its micro-batches itself."""
    layers = [m for m in model.modules() if isinstance(m, MoE)]
    for moe in layers:
        moe.aux_weight = ALPHA / (cfg.accum_steps if cfg.pp == 1 else 1)
        if cfg.ep == 1:
            continue
        mesh = layout.expert_mesh["ep"]
        per = moe.n_experts // cfg.ep
        mine = range(
            mesh.get_local_rank() * per, (mesh.get_local_rank() + 1) * per
        )
        moe.experts = Experts({str(e): moe.experts[str(e)] for e in mine})
        moe.group = mesh.get_group()
    return [moe.experts for moe in layers]


# --8<-- [end:parallel]
