"""Everything that makes the model distributed, in one place.

The ranks form a DeviceMesh of (dp, pp, tp), outermost first; HSDP
splits dp into (dp_replicate, dp_shard), and context parallelism makes
it (dp, cp, tp). `parallelize` composes them as torchtitan does: tensor
parallelism inside each block, then activation recomputation, then the
ring attention of context parallelism, then data parallelism (DDP,
FSDP2 or HSDP) over dp (and cp), and last the pipeline stages over pp.
It returns what it built as one frozen value, `Parallel`, which the
training loop reads and a measuring tool may attach to
(course/instruments/).
"""

from contextlib import nullcontext
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch.distributed._composable import checkpoint
from torch.distributed._composable.replicate_with_fsdp import replicate
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
from torch.distributed.pipelining import (
    PipelineStage,
    Schedule1F1B,
    ScheduleGPipe,
    ScheduleInterleaved1F1B,
    ScheduleInterleavedZeroBubble,
    ScheduleZBVZeroBubble,
)
from torch.distributed.tensor import Replicate, Shard
from torch.distributed.tensor.parallel import (
    ColwiseParallel,
    PrepareModuleInput,
    RowwiseParallel,
    SequenceParallel,
    parallelize_module,
)
from torch.nn.parallel import DistributedDataParallel as DDP

from snippets.torchrun import context
from snippets.torchrun.experts import expert_parallel
from snippets.torchrun.model import loss_fn, part


@dataclass(frozen=True)
class Layout:
    """This rank's place in the mesh."""

    mesh: object  # DeviceMesh
    dp: int
    dp_rank: int
    pp: int
    pp_rank: int
    tp: int
    loss_rank: int  # the pp rank that holds the last stage
    cp: int = 1
    cp_rank: int = 0
    ep: int = 1
    # (dp / ep, ep, pp, tp), for the experts' groups: with --ep > 1 only
    expert_mesh: object = None

    @property
    def first(self):
        return self.pp_rank == 0

    @property
    def last(self):  # computes the loss
        return self.pp_rank == self.loss_rank

    def describe(self):
        dims = dict(
            zip(self.mesh.mesh_dim_names, self.mesh.shape, strict=True)
        )
        shape = " x ".join(f"{name} {n}" for name, n in dims.items())
        return shape + (f" (ep {self.ep} of dp)" if self.ep > 1 else "")


# --8<-- [start:mesh]
def device_mesh(cfg, device):
    """The ranks as a mesh, outermost dimension first: (dp, pp, tp), or
    (dp_replicate, dp_shard, pp, tp) for HSDP. Neighbouring ranks share
    tp, the chattiest dimension, so that it stays inside a node."""
    world = dist.get_world_size()
    dp = world // (cfg.pp * cfg.cp * cfg.tp)
    if cfg.strategy == "hsdp":
        shape = (dp // cfg.shard_size, cfg.shard_size, cfg.pp, cfg.tp)
        names = ("dp_replicate", "dp_shard", "pp", "tp")
    elif cfg.cp > 1:  # config refuses cp with pp
        shape, names = (dp, cfg.cp, cfg.tp), ("dp", "cp", "tp")
    else:
        shape, names = (dp, cfg.pp, cfg.tp), ("dp", "pp", "tp")
    mesh = init_device_mesh(device.type, shape, mesh_dim_names=names)
    experts = None
    if cfg.ep > 1:  # dp split as (dp / ep, ep): ep neighbours, then copies
        experts = init_device_mesh(
            device.type,
            (dp // cfg.ep, cfg.ep, cfg.pp, cfg.tp),
            mesh_dim_names=("edp", "ep", "pp", "tp"),
        )
    rank = dist.get_rank()  # mesh ranks are numbered row-major
    return Layout(
        mesh=mesh,
        dp=dp,
        dp_rank=rank // (cfg.pp * cfg.cp * cfg.tp),
        pp=cfg.pp,
        pp_rank=rank // cfg.tp % cfg.pp,
        tp=cfg.tp,
        loss_rank=0 if cfg.pp_schedule == "zbv" else cfg.pp - 1,
        cp=cfg.cp,
        cp_rank=rank // cfg.tp % cfg.cp,
        ep=cfg.ep,
        expert_mesh=experts,
    )


# --8<-- [end:mesh]


@dataclass(frozen=True)
class Parallel:
    """What `parallelize` built on this rank."""

    layout: Layout
    model: torch.nn.Module  # all this rank holds: optimizer, DCP
    units: tuple  # the modules data parallelism wrapped one by one
    stages: tuple = ()  # PipelineStage, pp > 1
    schedule: object = None  # the pipeline schedule, pp > 1
    ring: object = None  # context.Ring, cp > 1


# --8<-- [start:tp]
def tensor_parallel(block, tp_mesh):
    """Megatron's split with sequence parallelism. Between the blocks
    each rank keeps 1 / tp of the sequence (Shard(1)). Before attention
    and before the MLP the sequence is all-gathered; the qkv matrix and
    the MLP's first are split by columns (whole heads to each rank), the
    output projections by rows, and their partial sums reduce-scattered
    back to the sequence shards. The LayerNorms run on the shards."""
    gather = PrepareModuleInput(
        input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),)
    )
    scatter = RowwiseParallel(output_layouts=Shard(1))
    plan = {
        "norm1": SequenceParallel(),
        "attn": gather,
        "attn.qkv": ColwiseParallel(),
        "attn.proj": scatter,
        "norm2": SequenceParallel(),
        "mlp": gather,
        "mlp.0": ColwiseParallel(),
        "mlp.2": scatter,
    }
    parallelize_module(block, tp_mesh, plan)


def split_the_ends(model, tp_mesh):
    """The embeddings are split by rows (vocabulary, positions) and
    their partial sums reduce-scattered to the sequence shards, as
    Megatron splits its embedding; the head gathers the sequence and
    runs whole on every tp rank, which is cheap at this vocabulary."""
    if model.embed is not None:
        parallelize_module(
            model.embed,
            tp_mesh,
            {
                "tokens": RowwiseParallel(
                    input_layouts=Replicate(), output_layouts=Shard(1)
                ),
                "positions": RowwiseParallel(
                    input_layouts=Replicate(), output_layouts=Shard(0)
                ),
            },
        )
    if model.head is not None:
        parallelize_module(
            model.head,
            tp_mesh,
            PrepareModuleInput(
                input_layouts=(Shard(1),),
                desired_input_layouts=(Replicate(),),
                use_local_output=True,
            ),
        )


# --8<-- [end:tp]


# --8<-- [start:wrap]
def data_parallel(roots, units, cfg, layout, device, mixed, experts=()):
    """DDP: one replica per rank. FSDP2: shard each unit, then the roots
    (the model, or each pipeline stage's part of it). HSDP: shard within
    groups of `shard_size` ranks, replicate across. With tp or pp, DDP
    is FSDP2's replicate(): DistributedDataParallel cannot hold the
    DTensor weights of tensor parallelism. With --ep, each layer's
    `experts` are wrapped first, over their copies only (edp); their
    gradients, which the combine all-to-all already summed over the ep
    ranks, are divided by the whole dp size."""
    if cfg.strategy == "ddp" and cfg.tp == cfg.pp == cfg.ep == 1:
        ids = [device.index] if device.type == "cuda" else None
        return [DDP(roots[0], device_ids=ids)]
    policy = MixedPrecisionPolicy(
        param_dtype=torch.bfloat16 if mixed else None,
        reduce_dtype=torch.float32 if mixed else None,
    )
    wrap = replicate if cfg.strategy == "ddp" else fully_shard
    for held in experts if cfg.ep > 1 else ():
        edp = layout.expert_mesh["edp"]
        wrap(held, mesh=edp, mp_policy=policy)
        held.set_gradient_divide_factor(layout.dp)
        if cfg.strategy == "fsdp" and edp.size() > 1:
            # sum, then divide: gloo has no pre-multiplied sum. (On one
            # rank, and for replicate(), FSDP2 divides without a sum;
            # forcing the sum there would divide twice.)
            held.set_force_sum_reduction_for_comms(True)
    if cfg.strategy == "hsdp":
        mesh = layout.mesh["dp_replicate", "dp_shard"]
    elif cfg.cp > 1:  # other tokens of the same sequences: to the
        mesh = context.fold(layout)  # weights, more data parallelism
    else:
        mesh = layout.mesh["dp"]
    if cfg.strategy == "ddp":
        for module in [*units, *roots]:
            replicate(module, mesh=mesh, mp_policy=policy)
        return roots
    options = dict(mesh=mesh, mp_policy=policy)
    for unit in units:
        # With pp the weights stay gathered from forward to backward, or
        # every micro-batch would gather them again (as in torchtitan).
        fully_shard(unit, reshard_after_forward=cfg.pp == 1, **options)
    for root in roots:
        fully_shard(root, **options)
    return roots


# --8<-- [end:wrap]


# --8<-- [start:parallelize]
def stages_of(pp_rank, p, v, schedule):
    """The pipeline stages pp rank `pp_rank` holds, of p x v; stage s runs
    blocks [s * per_stage, (s + 1) * per_stage). Round robin: rank r
    holds stages r, r + p, r + 2p, ... ZBV's V: r on the way down the
    ranks and 2p - 1 - r on the way back up, so rank 0 holds the first
    stage and the last."""
    if schedule == "zbv":
        return [pp_rank, 2 * p - 1 - pp_rank]
    return [pp_rank + k * p for k in range(v)]


def parallelize(model, cfg, layout, device, mixed, loss=loss_fn):
    """Keep this rank's part of `model` and make it distributed. With
    pp > 1 the schedule computes `loss` on the last stage."""
    p, v = cfg.pp, cfg.pp_chunks
    per_stage = cfg.model.n_layers // (p * v)
    mine = stages_of(layout.pp_rank, p, v, cfg.pp_schedule)

    def blocks(stage):
        return range(stage * per_stage, (stage + 1) * per_stage)

    held = part(
        model,
        [i for s in mine for i in blocks(s)],
        first=0 in mine,
        last=p * v - 1 in mine,
    ).to(device)
    for block in held.blocks.values():
        if cfg.tp > 1:
            tensor_parallel(block, layout.mesh["tp"])
        if cfg.recompute == "full":  # keep each block's input only
            checkpoint(block)
    if cfg.tp > 1:
        split_the_ends(held, layout.mesh["tp"])
    ring = context.attach(held, cfg, layout, device) if cfg.cp > 1 else None
    experts = expert_parallel(held, cfg, layout)
    chunks = [
        part(held, blocks(s), first=s == 0, last=s == p * v - 1) for s in mine
    ]
    units = [held.embed, *held.blocks.values(), held.head]
    units = tuple(unit for unit in units if unit is not None)
    if p == 1:
        [wrapped] = data_parallel(
            [held], units, cfg, layout, device, mixed, experts
        )
        return Parallel(layout, wrapped, units, ring=ring)
    # Each stage's part is a root: FSDP2 starts its work there.
    data_parallel(chunks, units, cfg, layout, device, mixed, experts)
    group = layout.mesh["pp"].get_group()
    stages = tuple(
        PipelineStage(chunk, s, p * v, device, group=group)
        for chunk, s in zip(chunks, mine, strict=True)
    )
    schedule = {
        "gpipe": ScheduleGPipe,
        "1f1b": Schedule1F1B,
        "interleaved": ScheduleInterleaved1F1B,
        "interleaved-zb": ScheduleInterleavedZeroBubble,
        "zbv": ScheduleZBVZeroBubble,
    }[cfg.pp_schedule]
    runs = list(stages) if v > 1 else stages[0]
    return Parallel(
        layout,
        held,  # for the optimizer and the checkpoints
        units,
        stages,
        schedule(runs, cfg.pp_microbatches, loss_fn=loss),
    )


# --8<-- [end:parallelize]


# --8<-- [start:sync]
def grad_sync(model, last_micro, cfg):
    """Whether this micro-batch's backward reduces gradients across
    ranks (--accum-sync). "last": only the last of the step; DDP skips
    its all-reduce and adds up full gradients, FSDP2 skips its
    reduce-scatter and holds full, unsharded gradients until then.
    "every": FSDP2 reduce-scatters each micro-batch and adds up shards;
    HSDP still all-reduces the shards across replicas on the last."""
    sync = last_micro or cfg.accum_sync == "every"
    if isinstance(model, DDP):
        return nullcontext() if sync else model.no_sync()
    model.set_requires_gradient_sync(sync)
    if cfg.strategy == "hsdp":
        model.set_requires_all_reduce(last_micro)
    return nullcontext()


# --8<-- [end:sync]


def autocast(model, mixed):
    """bf16 autocast for DDP: FSDP2 and replicate() cast by their policy."""
    if mixed and isinstance(model, DDP):
        device = next(model.parameters()).device.type
        return torch.autocast(device, dtype=torch.bfloat16)
    return nullcontext()
