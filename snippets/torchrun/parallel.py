"""Everything that makes the model distributed, in one place.

The ranks form a DeviceMesh of (dp, pp, tp), outermost first; HSDP
splits dp into (dp_replicate, dp_shard). `parallelize` composes the
three as torchtitan does: tensor parallelism inside each block, then
activation recomputation, then data parallelism (DDP, FSDP2 or HSDP)
over dp, and last the pipeline stages over pp. Counters on the
data-parallel collectives let the script measure the bytes it sends
instead of assuming them.
"""

from collections import defaultdict
from contextlib import nullcontext
from dataclasses import dataclass, field

import torch
import torch.distributed as dist
from torch.distributed._composable import checkpoint
from torch.distributed._composable.replicate_with_fsdp import replicate
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
from torch.distributed.pipelining import (
    PipelineStage,
    Schedule1F1B,
    ScheduleGPipe,
    ScheduleInterleaved1F1B,
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

from snippets.torchrun.model import loss_fn, part


class Traffic:
    """Bytes per data-parallel collective kind, per (step, micro-batch)."""

    def __init__(self):
        self.where = (0, 0)
        self.bytes = defaultdict(lambda: defaultdict(int))

    def add(self, kind, tensor):
        self.bytes[self.where][kind] += tensor.numel() * tensor.element_size()

    def step_bytes(self, step, kind):
        return sum(b[kind] for (s, _), b in self.bytes.items() if s == step)

    def micro_bytes(self, step, micro, kind):
        return self.bytes[(step, micro)][kind]

    def syncs(self, step, kinds=("all_reduce", "reduce_scatter")):
        """Micro-batches of `step` that reduced gradients across ranks."""
        return sum(
            1
            for (s, _), b in self.bytes.items()
            if s == step and any(b[k] for k in kinds)
        )


# --8<-- [start:counters]
def ddp_counting_hook(traffic):
    """A DDP comm hook: note each bucket, then all-reduce it as usual."""

    def hook(state, bucket):
        traffic.add("all_reduce", bucket.buffer())
        return default_hooks.allreduce_hook(state, bucket)

    return hook


class CountingAllGather:
    """FSDP2's all-gather (set_custom_all_gather), with a byte count."""

    def __init__(self, traffic):
        self.traffic = traffic

    def allocate(self, size, *, dtype, device):
        return torch.empty(*size, dtype=dtype, device=device)

    def __call__(self, output_tensor, input_tensor, group, async_op=False):
        self.traffic.add("all_gather", output_tensor)
        return dist.all_gather_single(
            output_tensor, input_tensor, group=group, async_op=async_op
        )


class CountingReduceScatter(CountingAllGather):
    """FSDP2's reduce-scatter (set_custom_reduce_scatter), counted."""

    def __call__(self, output_tensor, input_tensor, group, op, async_op=False):
        self.traffic.add("reduce_scatter", input_tensor)
        return dist.reduce_scatter_single(
            output_tensor, input_tensor, op=op, group=group, async_op=async_op
        )


# --8<-- [end:counters]


@dataclass
class Layout:
    """This rank's place in the mesh, and what it holds and runs."""

    mesh: object  # DeviceMesh
    dp: int
    dp_rank: int
    pp: int
    pp_rank: int
    tp: int
    model: torch.nn.Module = None  # all this rank holds: optimizer, DCP
    stages: list = field(default_factory=list)  # PipelineStage, pp > 1
    schedule: object = None  # the pipeline schedule, pp > 1

    @property
    def first(self):
        return self.pp_rank == 0

    @property
    def last(self):  # computes the loss
        return self.pp_rank == self.pp - 1

    def describe(self):
        dims = dict(
            zip(self.mesh.mesh_dim_names, self.mesh.shape, strict=True)
        )
        return " x ".join(f"{name} {n}" for name, n in dims.items())


# --8<-- [start:mesh]
def device_mesh(cfg, device):
    """The ranks as a mesh, outermost dimension first: (dp, pp, tp), or
    (dp_replicate, dp_shard, pp, tp) for HSDP. Neighbouring ranks share
    tp, the chattiest dimension, so that it stays inside a node."""
    world = dist.get_world_size()
    dp = world // (cfg.pp * cfg.tp)
    if cfg.strategy == "hsdp":
        shape = (dp // cfg.shard_size, cfg.shard_size, cfg.pp, cfg.tp)
        names = ("dp_replicate", "dp_shard", "pp", "tp")
    else:
        shape, names = (dp, cfg.pp, cfg.tp), ("dp", "pp", "tp")
    mesh = init_device_mesh(device.type, shape, mesh_dim_names=names)
    rank = dist.get_rank()  # mesh ranks are numbered row-major
    return Layout(
        mesh=mesh,
        dp=dp,
        dp_rank=rank // (cfg.pp * cfg.tp),
        pp=cfg.pp,
        pp_rank=rank // cfg.tp % cfg.pp,
        tp=cfg.tp,
    )


# --8<-- [end:mesh]


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
def data_parallel(roots, units, cfg, layout, device, mixed, traffic):
    """DDP: one replica per rank. FSDP2: shard each unit, then the roots
    (the model, or each pipeline stage's part of it). HSDP: shard within
    groups of `shard_size` ranks, replicate across. With tp or pp, DDP
    is FSDP2's replicate(): DistributedDataParallel cannot hold the
    DTensor weights of tensor parallelism."""
    if cfg.strategy == "ddp" and cfg.tp == cfg.pp == 1:
        ids = [device.index] if device.type == "cuda" else None
        wrapped = DDP(roots[0], device_ids=ids)
        wrapped.register_comm_hook(None, ddp_counting_hook(traffic))
        return [wrapped]
    policy = MixedPrecisionPolicy(
        param_dtype=torch.bfloat16 if mixed else None,
        reduce_dtype=torch.float32 if mixed else None,
    )
    if cfg.strategy == "ddp":
        for module in [*units, *roots]:
            replicate(module, mesh=layout.mesh["dp"], mp_policy=policy)
        return roots
    dims = ("dp_replicate", "dp_shard") if cfg.strategy == "hsdp" else "dp"
    options = dict(mesh=layout.mesh[dims], mp_policy=policy)
    for unit in units:
        # With pp the weights stay gathered from forward to backward, or
        # every micro-batch would gather them again (as in torchtitan).
        fully_shard(unit, reshard_after_forward=cfg.pp == 1, **options)
        unit.set_custom_all_gather(CountingAllGather(traffic))
        unit.set_custom_reduce_scatter(CountingReduceScatter(traffic))
        if cfg.strategy == "hsdp":  # the replicas' all-reduce of each shard
            unit.set_all_reduce_hook(
                lambda reduced: traffic.add("all_reduce", reduced)
            )
    for root in roots:
        fully_shard(root, **options)
    return roots


# --8<-- [end:wrap]


# --8<-- [start:parallelize]
def parallelize(model, cfg, layout, device, probes, mixed):
    """Keep this rank's part of `model` and make it distributed; fills
    layout.model, and layout.stages and layout.schedule when pp > 1."""
    p, v = cfg.pp, cfg.pp_chunks
    per_stage = cfg.model.n_layers // (p * v)
    # Stage s of the p x v runs blocks [s * per_stage, (s + 1) * per_stage)
    # on pp rank s % p: rank r holds stages r, r + p, r + 2p, ...
    mine = [layout.pp_rank + k * p for k in range(v)]

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
    chunks = [
        part(held, blocks(s), first=s == 0, last=s == p * v - 1) for s in mine
    ]
    units = [held.embed, *held.blocks.values(), held.head]
    units = [unit for unit in units if unit is not None]
    traffic = probes.traffic
    if p == 1:
        [layout.model] = data_parallel(
            [held], units, cfg, layout, device, mixed, traffic
        )
        return layout
    # Each stage's part is a root: FSDP2 starts its work there.
    data_parallel(chunks, units, cfg, layout, device, mixed, traffic)
    layout.model = held  # for the optimizer and the checkpoints
    group = layout.mesh["pp"].get_group()
    layout.stages = [
        PipelineStage(chunk, s, p * v, device, group=group)
        for chunk, s in zip(chunks, mine, strict=True)
    ]
    schedule = {
        "gpipe": ScheduleGPipe,
        "1f1b": Schedule1F1B,
        "interleaved": ScheduleInterleaved1F1B,
    }[cfg.pp_schedule]
    stages = layout.stages if v > 1 else layout.stages[0]
    layout.schedule = schedule(
        stages, cfg.pp_microbatches, loss_fn=probes.loss(loss_fn)
    )
    return layout


# --8<-- [end:parallelize]


# --8<-- [start:sync]
def grad_sync(model, last_micro):
    """Reduce gradients on the last micro-batch of a step only."""
    if isinstance(model, DDP):
        return nullcontext() if last_micro else model.no_sync()
    model.set_requires_gradient_sync(last_micro)
    return nullcontext()


# --8<-- [end:sync]


def autocast(layout, mixed):
    """bf16 autocast for DDP: FSDP2 and replicate() cast by their policy."""
    if mixed and isinstance(layout.model, DDP):
        return torch.autocast(layout.mesh.device_type, dtype=torch.bfloat16)
    return nullcontext()


def local(tensor):
    """This rank's part of a tensor: the shard of a DTensor."""
    return tensor.to_local() if hasattr(tensor, "to_local") else tensor


def full(tensor):
    """The whole tensor (collective for a DTensor: call on every rank)."""
    return tensor.full_tensor() if hasattr(tensor, "full_tensor") else tensor


def state_bytes(model, optimizer):
    """Bytes this rank holds in params, grads and optimizer state."""

    def nbytes(t):
        t = local(t)
        return t.numel() * t.element_size()

    params = list(model.parameters())
    first = optimizer.state[params[0]]
    optim = sum(
        nbytes(v)
        for s in optimizer.state.values()
        for v in s.values()
        if torch.is_tensor(v) and v.dim() > 0  # Adam's `step` is 0-d
    )
    return {
        "params": sum(nbytes(p) for p in params),
        "grads": sum(nbytes(p.grad) for p in params if p.grad is not None),
        "optim": optim,
        "bytes_param": local(params[0]).element_size(),
        "bytes_grad": local(params[0].grad).element_size(),
        "bytes_optim": sum(
            v.element_size()
            for v in first.values()
            if torch.is_tensor(v) and v.dim() > 0
        ),
    }
