"""Train a small decoder-only LM under torchrun, with data parallelism
(DDP, FSDP2 or HSDP), tensor parallelism and pipeline parallelism.

    torchrun --standalone --nproc_per_node=2 -m snippets.torchrun.train

The tokens are synthetic and seeded, so nothing is downloaded and two
runs with the same flags print the same losses. On CUDA the backend is
NCCL and the maths runs in bf16; on a CPU it is gloo and fp32.
"""

import statistics
import time
from dataclasses import asdict, replace

import torch
import torch.distributed as dist

from snippets.torchrun import checkpoint, config, report
from snippets.torchrun.model import build_model, loss_fn
from snippets.torchrun.parallel import (
    autocast,
    device_mesh,
    grad_sync,
    parallelize,
)
from snippets.torchrun.probes import Probes, step_rows
from snippets.torchrun.processes import (
    pick_device,
    run_and_exit,
    start_process_group,
)


def log(*parts):
    if dist.get_rank() == 0:
        print(*parts, flush=True)


# --8<-- [start:step]
def train_step(layout, cfg, step, device, mixed, probes):
    """One optimizer step's forward and backward passes; the mean loss."""
    x, y = (
        t.to(device) for t in step_rows(cfg, step, layout.dp, layout.dp_rank)
    )
    total = torch.zeros((), device=device)
    if layout.schedule:  # the pipeline runs every micro-batch itself
        probes.begin(step)
        losses = []
        inputs = (x,) if layout.first else ()
        labels = {"target": y, "losses": losses} if layout.last else {}
        layout.schedule.step(*inputs, **labels)
        total += sum(loss.detach() for loss in losses) / cfg.pp_microbatches
    else:  # accumulate --accum-steps micro-batches
        pieces = zip(
            x.split(cfg.micro_batch), y.split(cfg.micro_batch), strict=True
        )
        for micro, (xm, ym) in enumerate(pieces):
            probes.begin(step, micro)
            last = micro == cfg.accum_steps - 1
            with grad_sync(layout.model, last), autocast(layout, mixed):
                loss = loss_fn(layout.model(xm), ym) / cfg.accum_steps
                loss.backward()
            total += loss.detach()
    # for the log: the last stage's loss, the mean over dp; the tp ranks
    # of a stage hold the same one
    dist.all_reduce(total if layout.last else total.zero_())
    return total.item() / (layout.dp * layout.tp)


# --8<-- [end:step]


# --8<-- [start:train]
def train(cfg, device, mixed):
    layout = device_mesh(cfg, device)
    model = build_model(cfg.model, cfg.seed)
    probes = Probes(cfg, model, layout, device, mixed)
    parallelize(model, cfg, layout, device, probes, mixed)
    optimizer = torch.optim.Adam(layout.model.parameters(), lr=cfg.lr)
    start, losses = 0, []
    if cfg.checkpoint_dir:
        start, losses = checkpoint.resume(
            cfg.checkpoint_dir, layout.model, optimizer
        )
        if start:
            log(f"resumed from the checkpoint of step {start}")
        if start >= cfg.steps:
            log(f"step {start} was the last one (--steps): nothing to do")
            return None
    micro = max(cfg.accum_steps, cfg.pp_microbatches)
    tokens = layout.dp * cfg.micro_batch * micro * cfg.model.seq_len
    log(
        f"{layout.describe()} on {dist.get_world_size()} rank(s), "
        f"{device.type}, {'bf16' if mixed else 'fp32'}; "
        f"{probes.params:,} parameters; {tokens} tokens per step"
    )
    rates, steps = [], range(start + 1, cfg.steps + 1)
    for step in steps:
        began = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        with probes.watching(step):
            loss = train_step(layout, cfg, step, device, mixed, probes)
        probes.after_backward(step, layout.model)
        optimizer.step()
        rates.append(tokens / (time.perf_counter() - began))
        losses.append(loss)
        if step % cfg.log_every == 0 or step == cfg.steps:
            log(f"step {step:4d}  loss {loss:.4f}  tokens/s {rates[-1]:,.0f}")
        if cfg.checkpoint_every and step % cfg.checkpoint_every == 0:
            checkpoint.save(
                cfg.checkpoint_dir, step, layout.model, optimizer, losses
            )
    return report.Run(
        config=asdict(cfg),
        world_size=dist.get_world_size(),
        device=device.type,
        compute_dtype="bf16" if mixed else "fp32",
        torch=torch.__version__,
        params=probes.params,
        resumed_from_step=start,
        losses=losses,
        tokens_per_s=statistics.median(rates[1:] or rates),
        measured=probes.results(layout.model, optimizer, list(steps)),
    )


# --8<-- [end:train]


# --8<-- [start:main]
def main(argv=None):
    cfg = config.parse(argv)  # a bad flag exits here, on every rank
    runs = [replace(cfg, strategy=s) for s in config.COMPARED]
    train_in_turn(runs if cfg.compare else [cfg], cfg.json)


def train_in_turn(configs, json_path=None):
    """Train each configuration, on every rank, in one process group."""
    device, backend, mixed = pick_device()
    start_process_group(backend, device, configs[0].timeout)
    try:
        runs = [train(cfg, device, mixed) for cfg in configs]
        if all(runs) and dist.get_rank() == 0:
            report.write(runs, json_path)
    finally:
        dist.destroy_process_group()  # on success and on error


# --8<-- [end:main]


if __name__ == "__main__":
    run_and_exit(main)
