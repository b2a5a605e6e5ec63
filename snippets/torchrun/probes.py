"""What the training script measures, kept out of its training loop.

`Probes` is made before the model is wrapped and asked for its figures
at the end. Each figure is switched on by a flag:

- always: the bytes each rank holds, the data-parallel collectives'
  buffers (parallel.Traffic), the losses and the tokens per second;
- `--check`: the first step's gradients against one process that sees
  the whole batch, the activations one block saves against
  activation_terms.py, and a digest of the final weights;
- `--trace`: the collectives tensor parallelism issues, per block and
  in the first step (a TorchDispatchMode, as CommDebugMode counts
  them), and with `--pp` every forward and backward of every
  micro-batch on every stage, with the micro-batches whose activations
  each stage holds (saved-tensor hooks).
"""

import hashlib
import logging
import time
import weakref
from collections import defaultdict
from contextlib import nullcontext

import torch
import torch.distributed as dist
from torch.distributed.tensor import DTensor
from torch.utils._python_dispatch import TorchDispatchMode

from snippets.torchrun import activations
from snippets.torchrun.model import batch, build_model, loss_fn
from snippets.torchrun.parallel import (
    Traffic,
    full,
    state_bytes,
    tensor_parallel,
)

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
    """Each forward (F), loss (L, last stage) and backward (B) a pipeline
    stage runs: (step, stage, kind, micro, start, end, cpu). start and
    end are seconds on the clock every process of one machine shares
    (after a CUDA synchronize on GPUs); cpu is the seconds of CPU time
    the rank's own thread spent in it, which other processes sharing
    the cores do not inflate. And the
    most micro-batches whose saved tensors this rank holds at once (a
    (micro-batch, chunk) pair each, when a rank holds several chunks)."""

    def __init__(self, layout, loss, device):
        self.step, self.events, self.live = 0, [], defaultdict(int)
        self.device = device
        self.peak = defaultdict(int)  # step -> micro-batches held
        for stage in layout.stages:
            self.watch(stage)
        self.loss = self.timed(loss, layout.stages[-1].stage_index)

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

    def timed(self, loss, stage):
        calls = defaultdict(int)

        def timed_loss(output, target, **kwargs):
            micro = calls[self.step]
            calls[self.step] += 1
            return self.record(
                stage, "L", micro, lambda: loss(output, target, **kwargs)
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

    def watch(self, stage):
        forward, backward = stage.forward_one_chunk, stage.backward_one_chunk
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

        stage.forward_one_chunk = timed_forward
        stage.backward_one_chunk = timed_backward


class Box:
    __slots__ = ("tensor", "__weakref__")

    def __init__(self, tensor):
        self.tensor = tensor

    @staticmethod
    def unbox(box):
        return box.tensor


# --8<-- [end:timeline]


class Probes:
    """The measurements of one training run (see the module's docstring)."""

    def __init__(self, cfg, model, layout, device, mixed):
        self.cfg, self.layout = cfg, layout
        self.device, self.mixed = device, mixed
        self.traffic, self.timeline = Traffic(), None
        self.params = sum(p.numel() for p in model.parameters())
        self.found = {}
        if cfg.check and dist.get_rank() == 0:  # before any wrapping
            self.found["activations"] = activations.record(
                model, cfg, device, mixed
            )
        if cfg.trace and cfg.tp > 1:
            self.found["tp_block"] = tp_collectives(cfg, layout, device, mixed)

    def loss(self, loss):
        """The loss the pipeline schedule calls (timed with --trace)."""
        if not (self.cfg.trace and self.layout.stages):
            return loss
        self.timeline = Timeline(self.layout, loss, self.device)
        return self.timeline.loss

    def watching(self, step):
        """With --trace and tp > 1, the first step runs under CommBytes:
        every collective DTensor issues in it, in the blocks or not."""
        if not (
            self.cfg.trace and self.cfg.tp > 1 and "tp_step" not in self.found
        ):
            return nullcontext()
        comms = CommBytes()
        self.found["tp_step"] = comms.calls
        return comms

    def begin(self, step, micro=0):
        self.traffic.where = (step, micro)
        if self.timeline:
            self.timeline.step = step

    def after_backward(self, step, model):
        """--check, on the first step: before the optimizer changes it."""
        if self.cfg.check and step == 1:
            self.found["grad_check"] = check_gradients(
                model, self.cfg, self.layout, self.device, self.mixed
            )

    def results(self, model, optimizer, steps):
        """Rank 0: every figure, as plain data (collective)."""
        cfg, layout = self.cfg, self.layout
        held = state_bytes(model, optimizer)
        found = dict(self.found, state=gather(held))
        if cfg.check:
            found["weights_sha256"] = weights_digest(model)
        if self.timeline:
            mine = {
                "events": self.timeline.events,
                "peak": list(self.timeline.peak.items()),
            }
            found |= pipeline_figures(gather(mine), layout)
        last = steps[-1] if steps else 0
        found["traffic"] = {k: self.traffic.step_bytes(last, k) for k in KINDS}
        found["traffic_per_micro"] = [
            {k: self.traffic.micro_bytes(last, m, k) for k in KINDS}
            for m in range(cfg.accum_steps)
        ]
        found["syncs_per_step"] = [self.traffic.syncs(s) for s in steps]
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
