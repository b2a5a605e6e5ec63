"""Everything that makes the model distributed, in one place.

`parallelize` wraps the model for DDP, FSDP2 or HSDP and attaches counters to
its collectives, so the script measures the bytes it communicates
instead of assuming them.
"""

from collections import defaultdict
from contextlib import nullcontext

import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
from torch.nn.parallel import DistributedDataParallel as DDP


class Traffic:
    """Bytes per collective kind, per (step, micro-batch)."""

    def __init__(self):
        self.where = (0, 0)
        self.bytes = defaultdict(lambda: defaultdict(int))
        self.calls = defaultdict(lambda: defaultdict(int))

    def add(self, kind, tensor):
        self.bytes[self.where][kind] += tensor.numel() * tensor.element_size()
        self.calls[self.where][kind] += 1

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


# --8<-- [start:wrap]
def parallelize(model, strategy, device, traffic, mixed, shard_size):
    """DDP: one replica per rank. FSDP2: shard each unit, then the root.
    HSDP: shard over groups of `shard_size` ranks, replicate across."""
    if strategy == "ddp":
        ids = [device.index] if device.type == "cuda" else None
        wrapped = DDP(model.to(device), device_ids=ids)
        wrapped.register_comm_hook(None, ddp_counting_hook(traffic))
        return wrapped
    policy = MixedPrecisionPolicy(
        param_dtype=torch.bfloat16 if mixed else None,
        reduce_dtype=torch.float32 if mixed else None,
    )
    world = dist.get_world_size()
    mesh = None
    if strategy == "hsdp":  # a 2-D mesh: (replicas, shards)
        mesh = init_device_mesh(
            device.type,
            (world // shard_size, shard_size),
            mesh_dim_names=("replicate", "shard"),
        )
    model.to(device)
    # Embedding, blocks and head are units of their own (torchtitan
    # does the same), so the root holds no parameters and every unit
    # is gathered once in forward and once in backward.
    units = [model.embed, *model.blocks, model.head]
    for unit in units:
        fully_shard(unit, mesh=mesh, mp_policy=policy)
    fully_shard(model, mesh=mesh, mp_policy=policy)
    for unit in units:
        unit.set_custom_all_gather(CountingAllGather(traffic))
        unit.set_custom_reduce_scatter(CountingReduceScatter(traffic))
        if strategy == "hsdp":  # the replicas' all-reduce of each shard
            unit.set_all_reduce_hook(
                lambda reduced: traffic.add("all_reduce", reduced)
            )
    return model


# --8<-- [end:wrap]


# --8<-- [start:sync]
def grad_sync(model, strategy, last_micro):
    """Reduce gradients on the last micro-batch of a step only."""
    if strategy == "ddp":
        return nullcontext() if last_micro else model.no_sync()
    model.set_requires_gradient_sync(last_micro)
    return nullcontext()


# --8<-- [end:sync]


def local(tensor):
    """This rank's part of a tensor: the shard of an FSDP2 DTensor."""
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
