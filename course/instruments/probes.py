"""What the course measures of the training script, from outside it.

`Probes` is the script's `Watch` (snippets/torchrun/train.py), filled
in: it attaches to what `parallelize` built and is asked for its
figures at the end. Each figure is switched on by a flag of
course/instruments/train.py:

- always: the bytes each rank holds, the data-parallel collectives'
  buffers (`Traffic`), the losses and the tokens per second;
- `--check`: the first step's gradients against one process that sees
  the whole batch, the activations one block saves against
  activation_terms.py, and a digest of the final weights;
- with `--cp`: what the ring of context parallelism sends and the
  attention work each of its steps does (`RingCount`);
- `--trace`: the collectives tensor parallelism issues, per block and
  in the first step (a TorchDispatchMode, as CommDebugMode counts
  them), the all-to-alls of expert parallelism in the first step, and
  with `--pp` every forward and backward of every
  micro-batch on every stage, with the micro-batches whose activations
  each stage holds (saved-tensor hooks).

With --experts, always: what each MoE layer's router sent to each
expert in the first step, and what the experts kept (their counts).
"""

import hashlib
import logging
import time
import weakref
from collections import defaultdict
from contextlib import nullcontext

import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.distributed.fsdp import FSDPModule
from torch.distributed.tensor import DTensor
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils._python_dispatch import TorchDispatchMode

from course.instruments import activations
from snippets.torchrun.experts import MoE
from snippets.torchrun.model import build_model, loss_fn, step_rows
from snippets.torchrun.parallel import tensor_parallel
from snippets.torchrun.train import Watch

KINDS = ("all_reduce", "all_gather", "reduce_scatter")
# --check gathers 2-D DTensors whole; torch warns that this takes two
# all-gathers, which is fine for a check.
logging.getLogger("torch.distributed.tensor._redistribute").setLevel(
    logging.ERROR
)


def gather(value):
    """Every rank's `value`, in rank order (collective)."""
    values = [None] * dist.get_world_size()
    dist.all_gather_object(values, value)
    return values


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


def count_traffic(built, cfg, traffic):
    """Put the counters on what data_parallel wrapped: DDP's comm hook,
    or FSDP2's collectives on each unit. FSDP2's replicate() (DDP with
    tp or pp) is not counted."""
    if isinstance(built.model, DDP):
        built.model.register_comm_hook(None, ddp_counting_hook(traffic))
        return
    if cfg.strategy == "ddp":
        return
    for unit in built.units:
        unit.set_custom_all_gather(CountingAllGather(traffic))
        unit.set_custom_reduce_scatter(CountingReduceScatter(traffic))
        if cfg.strategy == "hsdp":  # the replicas' all-reduce of each shard
            unit.set_all_reduce_hook(
                lambda reduced: traffic.add("all_reduce", reduced)
            )


# --8<-- [end:counters]


def grads_held(built):
    """Gradient bytes this rank holds now: its parameters' .grad (whole
    under DDP, this rank's shard under FSDP2) and the whole, unsharded
    gradients FSDP2 keeps while it defers its reduce-scatter. The second
    is FSDP2's own state, read from its parameter groups: no public API
    reports it."""
    held = sum(
        nbytes(p.grad) for p in built.model.parameters() if p.grad is not None
    )
    for unit in built.units:
        if not isinstance(unit, FSDPModule):
            continue
        group = unit._get_fsdp_state()._fsdp_param_group
        for param in group.fsdp_params if group else ():
            waiting = (
                param._unsharded_param.grad
                if hasattr(param, "_unsharded_param")
                else None,
                param.unsharded_accumulated_grad,
            )
            held += sum(nbytes(g) for g in waiting if g is not None)
    return held


def nbytes(tensor):
    tensor = local(tensor)
    return tensor.numel() * tensor.element_size()


def local(tensor):
    """This rank's part of a tensor: the shard of a DTensor."""
    return tensor.to_local() if hasattr(tensor, "to_local") else tensor


def full(tensor):
    """The whole tensor (collective for a DTensor: call on every rank)."""
    return tensor.full_tensor() if hasattr(tensor, "full_tensor") else tensor


def state_bytes(model, optimizer):
    """Bytes this rank holds in params, grads and optimizer state."""

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


# --8<-- [start:grad_check]
def check_gradients(model, cfg, layout, device, mixed):
    """Max difference between this step's gradients, gathered whole, and
    those of one process that sees every rank's rows of every
    micro-batch in a single batch. Collective: call on every rank."""
    reference = build_model(cfg.model, cfg.seed).to(device)
    x, y = step_rows(cfg, 1, layout.dp)
    loss_fn(reference(x.to(device)), y.to(device)).backward()
    expected = dict(reference.named_parameters())
    diff = scale = 0.0
    for name, p in model.named_parameters():
        g = full(p.grad).float()
        r = expected[name.replace("module.", "", 1)].grad
        diff = max(diff, (g - r).abs().max().item())
        scale = max(scale, r.abs().max().item())
    both = torch.tensor([diff, scale], dtype=torch.float64)
    dist.all_reduce(both, op=dist.ReduceOp.MAX)  # over every stage
    diff, scale = both.tolist()
    rule = 5e-2 if mixed else 1e-5
    return {
        "max_abs_diff": diff,
        "max_abs_grad": scale,
        "tolerance": rule * scale,
        "rule": f"max |g - g_ref| <= {rule:g} x max |g_ref|",
        "ok": diff <= rule * scale,
    }


# --8<-- [end:grad_check]


def weights_digest(model):
    """sha256 of the full weights, whichever ranks hold them (collective)."""
    mine = {
        name.replace("module.", "", 1): hashlib.sha256(
            full(p.detach()).float().contiguous().cpu().numpy().tobytes()
        ).hexdigest()
        for name, p in model.named_parameters()
    }
    merged = {}
    for part in gather(mine):
        merged.update(part)
    h = hashlib.sha256()
    for name in sorted(merged):
        h.update(f"{name}:{merged[name]}".encode())
    return h.hexdigest()


# --8<-- [start:comm_bytes]
class CommBytes(TorchDispatchMode):
    """Notes each collective that DTensor issues, with its buffer: the
    gathered output of an all-gather, the input of a reduce-scatter or
    an all-reduce. CommDebugMode, torch's own counter, works the same
    way: it lets DTensor turn an operation into the functional
    collectives first (NotImplemented), then sees those."""

    def __init__(self):
        super().__init__()
        self.calls = []  # (collective, shape of the buffer, bytes)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if any(issubclass(t, DTensor) for t in types):
            return NotImplemented
        out = func(*args, **(kwargs or {}))
        name = func.__name__.split(".")[0]
        if func.namespace == "_c10d_functional" and name in COLLECTIVES:
            big = max((args[0], out), key=torch.Tensor.numel)
            size = big.numel() * big.element_size()
            self.calls.append((COLLECTIVES[name], list(big.shape), size))
        return out


COLLECTIVES = {
    "all_gather_into_tensor": "all_gather",
    "reduce_scatter_tensor": "reduce_scatter",
    "all_reduce": "all_reduce",
    "all_to_all_single": "all_to_all",
}


def tp_collectives(cfg, layout, device, mixed):
    """The collectives of one block's forward, then its backward, for one
    micro-batch, split as the run splits it, in the run's dtype."""
    tp_mesh, m = layout.mesh["tp"], cfg.model
    dtype = torch.bfloat16 if mixed else torch.float32
    block = build_model(m, cfg.seed).blocks["0"].to(device, dtype)
    tensor_parallel(block, tp_mesh)
    shard = (cfg.micro_batch, m.seq_len // cfg.tp, m.d_model)
    x = torch.randn(shard, device=device, dtype=dtype, requires_grad=True)
    with CommBytes() as forward:
        y = block(x)
    with CommBytes() as backward:
        y.sum().backward()
    return {"forward": forward.calls, "backward": backward.calls}


# --8<-- [end:comm_bytes]


# --8<-- [start:timeline]
class Timeline:
    """Each forward (F), loss (L, last stage), backward (B; the input's
    gradient alone when a zero-bubble schedule splits the backward) and
    weight gradient (W, split off) a pipeline stage runs: (step, stage,
    kind, micro, start, end, cpu). start and end are seconds on the
    clock every process of one machine shares (after a CUDA synchronize
    on GPUs); cpu is the seconds of CPU time the rank's own thread spent
    in it, which other processes sharing the cores do not inflate. And
    the most micro-batches whose saved tensors this rank holds at once (a
    (micro-batch, chunk) pair each, when a rank holds several chunks)."""

    def __init__(self, loss, device):
        self.step, self.events, self.live = 0, [], defaultdict(int)
        self.device = device
        self.peak = defaultdict(int)  # step -> micro-batches held
        self.loss = self.timed(loss)
        self.last_stage = None  # the stage that computes the loss

    def watch(self, stages):
        for stage in stages:
            self.watch_stage(stage)
        self.last_stage = stages[-1].stage_index

    def record(self, stage, kind, micro, run, hold=True):
        """Run `run()` as (stage, kind, micro) and note when it ran."""
        began, cpu = time.perf_counter(), time.thread_time()
        with self.holding(stage, micro) if hold else nullcontext():
            out = run()
        if self.device.type == "cuda":  # this stream's work, not NCCL's
            torch.cuda.current_stream(self.device).synchronize()
        self.events.append(
            (
                self.step,
                stage,
                kind,
                micro,
                began,
                time.perf_counter(),
                time.thread_time() - cpu,
            )
        )
        return out

    def timed(self, loss):
        calls = defaultdict(int)

        def timed_loss(output, target, **kwargs):
            micro = calls[self.step]
            calls[self.step] += 1
            return self.record(
                self.last_stage,
                "L",
                micro,
                lambda: loss(output, target, **kwargs),
            )

        return timed_loss

    def holding(self, stage, micro):
        """Saved-tensor hooks that count what (stage, micro) keeps: each
        saved tensor goes in a box; autograd drops the box once the
        backward pass has used it, and a finalizer counts it out."""
        key = (stage, micro)

        def pack(tensor):
            box = Box(tensor)
            self.live[key] += 1
            weakref.finalize(box, self.release, key)
            held = sum(1 for n in self.live.values() if n)
            self.peak[self.step] = max(self.peak[self.step], held)
            return box

        return torch.autograd.graph.saved_tensors_hooks(pack, Box.unbox)

    def release(self, key):
        self.live[key] -= 1

    def watch_stage(self, stage):
        forward, backward = stage.forward_one_chunk, stage.backward_one_chunk
        weight = stage.backward_weight_one_chunk
        index = stage.stage_index

        def timed_forward(micro, *args, **kwargs):
            return self.record(
                index, "F", micro, lambda: forward(micro, *args, **kwargs)
            )

        def timed_backward(micro, *args, **kwargs):
            return self.record(
                index,
                "B",
                micro,
                lambda: backward(micro, *args, **kwargs),
                hold=False,
            )

        def timed_weight(micro, *args, **kwargs):
            return self.record(
                index,
                "W",
                micro,
                lambda: weight(micro, *args, **kwargs),
                hold=False,
            )

        stage.forward_one_chunk = timed_forward
        stage.backward_one_chunk = timed_backward
        stage.backward_weight_one_chunk = timed_weight


# --8<-- [start:ring]
class RingCount:
    """What the ring of context parallelism (snippets/torchrun/
    context.py) did on this rank, counted by wrapping its two seams:
    the bytes of every send, by phase (K/V forward, K/V backward, their
    gradients); the attention calls; and at each ring step the
    query-key pairs its causal masks left visible, per sequence and
    head, with the CPU seconds the scoring took (forward)."""

    def __init__(self, ring, units):
        self.calls, self.where = 0, ring.where.tolist()
        self.sent = dict.fromkeys(ring.PHASES, 0)
        self.pairs, self.seconds = [0] * ring.cp, [0.0] * ring.cp
        exchange, attend = ring.exchange, ring.attend

        def counted_exchange(tensor, phase):
            self.sent[phase] += tensor.numel() * tensor.element_size()
            return exchange(tensor, phase)

        def counted_attend(step, q, k, v, visible):
            began = time.thread_time()
            out = attend(step, q, k, v, visible)
            self.seconds[step] += time.thread_time() - began
            whole = q.shape[-2] * k.shape[-2]
            self.pairs[step] += whole if visible is None else visible.sum()
            return out

        ring.exchange, ring.attend = counted_exchange, counted_attend
        for unit in units:
            if hasattr(unit, "attn"):
                unit.attn.core = self.counted(unit.attn.core)

    def counted(self, core):
        def call(q, k, v):
            self.calls += 1
            return core(q, k, v)

        return call

    def figures(self):
        return {
            "calls": self.calls,
            "sent": self.sent,
            "pairs": [int(n) for n in self.pairs],
            "seconds": self.seconds,
            "positions": self.where,
        }


# --8<-- [end:ring]


class Box:
    __slots__ = ("tensor", "__weakref__")

    def __init__(self, tensor):
        self.tensor = tensor

    @staticmethod
    def unbox(box):
        return box.tensor


# --8<-- [end:timeline]


class Probes(Watch):
    """The measurements of one training run (see the module's docstring).
    Made before the script builds anything, on a model of its own from
    the same seed: the one the script trains gets wrapped."""

    def __init__(self, cfg, device, mixed, check=False, trace=False):
        self.cfg, self.device, self.mixed = cfg, device, mixed
        self.check, self.trace = check, trace
        self.traffic, self.timeline, self.built = Traffic(), None, None
        self.ring = None
        self.steps, self.held = [], {}  # step -> gradient bytes, most
        model = build_model(cfg.model, cfg.seed)
        self.params = sum(p.numel() for p in model.parameters())
        self.found = {}
        # activation_terms.py predicts the dense MLP's activations only
        if check and dist.get_rank() == 0 and not cfg.model.experts:
            self.found["activations"] = activations.record(
                model, cfg, device, mixed
            )

    def loss(self, fn):
        """The loss the pipeline schedule calls, timed with --trace."""
        if not (self.trace and self.cfg.pp > 1):
            return fn
        self.timeline = Timeline(fn, self.device)
        return self.timeline.loss

    def attach(self, built, optimizer):
        self.built, self.optimizer = built, optimizer
        count_traffic(built, self.cfg, self.traffic)
        if built.ring:
            self.ring = RingCount(built.ring, built.units)
        if self.timeline:
            self.timeline.watch(built.stages)
        if self.trace and self.cfg.tp > 1:
            self.found["tp_block"] = tp_collectives(
                self.cfg, built.layout, self.device, self.mixed
            )

    def step(self, step):
        """With --trace and tp > 1, the first step runs under CommBytes:
        every collective DTensor issues in it, in the blocks or not;
        with --ep > 1, the all-to-alls of the MoE layers."""
        self.steps.append(step)
        if len(self.steps) == 1:
            for moe in self.layers().values():  # the first step only
                moe.counts = None
        key = "tp_step" if self.cfg.tp > 1 else "ep_step"
        if not self.trace or key in self.found:
            return nullcontext()
        if self.cfg.tp == 1 and self.cfg.ep == 1:
            return nullcontext()
        comms = CommBytes()
        self.found[key] = comms.calls
        return comms

    def layers(self):
        """This rank's MoE layers, by their name in the whole model."""
        return {
            name.replace("module.", "", 1): m
            for name, m in self.built.model.named_modules()
            if isinstance(m, MoE)
        }

    def micro(self, step, micro):
        if micro:  # what the micro-batches before this one left
            self.note_grads(step)
        self.traffic.where = (step, micro)
        if self.timeline:
            self.timeline.step = step

    def note_grads(self, step):
        if self.cfg.pp == 1:  # a pipeline runs its micro-batches inside
            held = grads_held(self.built)
            self.held[step] = max(self.held.get(step, 0), held)

    def after_backward(self, step):
        """The gradients the step ends with; and --check, on the first
        step: before the optimizer changes it."""
        self.note_grads(step)
        if self.cfg.model.experts and len(self.steps) == 1:
            found = {n: m.counts.tolist() for n, m in self.layers().items()}
            self.found["routing"] = gather(found)  # rank: layer: counts
        if self.check and step == 1:
            self.found["grad_check"] = check_gradients(
                self.built.model,
                self.cfg,
                self.built.layout,
                self.device,
                self.mixed,
            )

    def results(self):
        """Rank 0: every figure, as plain data (collective)."""
        cfg, layout, steps = self.cfg, self.built.layout, self.steps
        held = state_bytes(self.built.model, self.optimizer)
        found = dict(self.found, state=gather(held))
        if self.check:
            found["weights_sha256"] = weights_digest(self.built.model)
        if self.timeline:
            mine = {
                "events": self.timeline.events,
                "peak": list(self.timeline.peak.items()),
            }
            found |= pipeline_figures(gather(mine), layout)
        if self.ring:
            found["ring"] = gather(self.ring.figures())
        last = steps[-1] if steps else 0
        found["traffic"] = {k: self.traffic.step_bytes(last, k) for k in KINDS}
        found["traffic_per_micro"] = [
            {k: self.traffic.micro_bytes(last, m, k) for k in KINDS}
            for m in range(cfg.accum_steps)
        ]
        found["syncs_per_step"] = [self.traffic.syncs(s) for s in steps]
        if self.held:
            found["grads_held"] = gather(self.held[last])
        return found


def pipeline_figures(per_rank, layout):
    """The timelines and peaks of one pipeline: the ranks of dp rank 0
    and tp rank 0, one per pipeline rank."""
    ranks = [
        r
        for r in range(len(per_rank))
        if r // (layout.pp * layout.tp) == 0 and r % layout.tp == 0
    ]
    return {
        "timeline": sorted(e for r in ranks for e in per_rank[r]["events"]),
        "peak_in_flight": sorted(  # (step, pipeline rank, micro-batches)
            [step, layout_rank, n]
            for layout_rank, r in enumerate(ranks)
            for step, n in per_rank[r]["peak"]
        ),
    }
