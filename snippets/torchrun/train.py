"""Train a small decoder-only LM under torchrun, with data parallelism
(DDP, FSDP2 or HSDP), tensor, pipeline and context parallelism.

    torchrun --standalone --nproc_per_node=2 -m snippets.torchrun.train

The tokens are synthetic and seeded, so nothing is downloaded and two
runs with the same flags print the same losses. On CUDA the backend is
NCCL and the maths runs in bf16; on a CPU it is gloo and fp32.
"""

import statistics
import time
from contextlib import nullcontext
from dataclasses import dataclass

import torch
import torch.distributed as dist

from snippets.torchrun import checkpoint, config
from snippets.torchrun.model import build_model, loss_fn, step_rows
from snippets.torchrun.parallel import (
    autocast,
    device_mesh,
    grad_sync,
    parallelize,
)
from snippets.torchrun.processes import (
    pick_device,
    run_and_exit,
    start_process_group,
)


def log(*parts):
    if dist.get_rank() == 0:
        print(*parts, flush=True)


# --8<-- [start:watch]
class Watch:
    """Where a measuring tool may look in: the loop calls these at a few
    points and this one does nothing. The course's instruments
    (course/instruments/) fill them in; this script never imports them."""

    def loss(self, fn):  # the loss the pipeline schedule will call
        return fn

    def attach(self, built, optimizer):  # once parallelize has built
        pass

    def step(self, step):  # around one step's forward and backward
        return nullcontext()

    def micro(self, step, micro):  # as a micro-batch begins
        pass

    def after_backward(self, step):  # before the optimizer moves
        pass


# --8<-- [end:watch]


# --8<-- [start:step]
def train_step(built, cfg, step, device, mixed, watch):
    """One optimizer step's forward and backward passes; the mean loss."""
    layout = built.layout
    x, y = step_rows(cfg, step, layout.dp, layout.dp_rank)
    if built.ring:  # this cp rank's tokens of the same sequences
        x, y = x[:, built.ring.where], y[:, built.ring.where]
    x, y = x.to(device), y.to(device)
    total = torch.zeros((), device=device)
    if built.schedule:  # the pipeline runs every micro-batch itself
        watch.micro(step, 0)
        losses = []
        inputs = (x,) if layout.first else ()
        labels = {"target": y, "losses": losses} if layout.last else {}
        built.schedule.step(*inputs, **labels)
        total += sum(loss.detach() for loss in losses) / cfg.pp_microbatches
    else:  # accumulate --accum-steps micro-batches
        pieces = zip(
            x.split(cfg.micro_batch), y.split(cfg.micro_batch), strict=True
        )
        for micro, (xm, ym) in enumerate(pieces):
            watch.micro(step, micro)
            last = micro == cfg.accum_steps - 1
            sync = grad_sync(built.model, last, cfg)
            with sync, autocast(built.model, mixed):
                loss = loss_fn(built.model(xm), ym) / cfg.accum_steps
                loss.backward()
            total += loss.detach()
    # for the log: the last stage's loss, the mean over dp and cp (the
    # cp ranks' tokens are as many); the tp ranks of a stage hold the
    # same one
    dist.all_reduce(total if layout.last else total.zero_())
    return total.item() / (layout.dp * layout.cp * layout.tp)


# --8<-- [end:step]


@dataclass(frozen=True)
class Trained:
    """What one training run did: where it began and the losses."""

    resumed_from_step: int  # 0: a fresh start
    losses: list  # every step's, those before a resume included
    tokens_per_s: float | None  # the median step; None if none ran


# --8<-- [start:train]
def train(cfg, device, mixed, watch=None):
    watch = watch or Watch()
    layout = device_mesh(cfg, device)
    model = build_model(cfg.model, cfg.seed)
    params = sum(p.numel() for p in model.parameters())  # all of them
    built = parallelize(model, cfg, layout, device, mixed, watch.loss(loss_fn))
    optimizer = torch.optim.Adam(built.model.parameters(), lr=cfg.lr)
    watch.attach(built, optimizer)
    start, losses = 0, []
    if cfg.checkpoint_dir:
        start, losses = checkpoint.resume(
            cfg.checkpoint_dir, built.model, optimizer
        )
        if start:
            log(f"resumed from the checkpoint of step {start}")
        if start >= cfg.steps:
            log(f"step {start} was the last one (--steps): nothing to do")
    micro = max(cfg.accum_steps, cfg.pp_microbatches)
    tokens = layout.dp * cfg.micro_batch * micro * cfg.model.seq_len
    log(
        f"{layout.describe()} on {dist.get_world_size()} rank(s), "
        f"{device.type}, {'bf16' if mixed else 'fp32'}; "
        f"{params:,} parameters; {tokens} tokens per step"
    )
    rates = []
    for step in range(start + 1, cfg.steps + 1):
        began = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        with watch.step(step):
            loss = train_step(built, cfg, step, device, mixed, watch)
        watch.after_backward(step)
        optimizer.step()
        rates.append(tokens / (time.perf_counter() - began))
        losses.append(loss)
        if step % cfg.log_every == 0 or step == cfg.steps:
            log(f"step {step:4d}  loss {loss:.4f}  tokens/s {rates[-1]:,.0f}")
        if cfg.checkpoint_every and step % cfg.checkpoint_every == 0:
            checkpoint.save(
                cfg.checkpoint_dir, step, built.model, optimizer, losses
            )
    rate = statistics.median(rates[1:] or rates) if rates else None
    return Trained(start, losses, rate)


# --8<-- [end:train]


# --8<-- [start:main]
def main(argv=None):
    cfg = config.parse(argv)  # a bad flag exits here, on every rank
    device, backend, mixed = pick_device()
    start_process_group(backend, device, cfg.timeout)
    try:
        train(cfg, device, mixed)
    finally:
        dist.destroy_process_group()  # on success and on error


# --8<-- [end:main]


if __name__ == "__main__":
    run_and_exit(main)
