"""Train a small decoder-only LM with DDP or FSDP2 under torchrun.

    torchrun --standalone --nproc_per_node=2 -m snippets.torchrun.train

The tokens are synthetic and seeded, so nothing is downloaded and two
runs with the same flags print the same losses. On CUDA the backend is
NCCL and the maths runs in bf16; on a CPU it is gloo and fp32.
"""

import hashlib
import os
import signal
import statistics
import sys
import time
import traceback
from contextlib import nullcontext
from dataclasses import asdict, replace
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.distributed.checkpoint.state_dict import (
    StateDictOptions,
    get_model_state_dict,
)

from snippets.torchrun import activations, checkpoint, config, report
from snippets.torchrun.model import batch, build_model, loss_fn
from snippets.torchrun.parallel import (
    Traffic,
    full,
    grad_sync,
    parallelize,
    state_bytes,
)


def log(*parts):
    if dist.get_rank() == 0:
        print(*parts, flush=True)


# --8<-- [start:device]
def pick_device():
    """NCCL on the GPU named by LOCAL_RANK, else gloo on the CPU."""
    if torch.cuda.is_available():
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
        torch.cuda.set_device(device)
        return device, "nccl", torch.cuda.is_bf16_supported()
    return torch.device("cpu"), "gloo", False  # fp32 on CPU


# --8<-- [end:device]


def single_process_defaults():
    """Let `python -m snippets.torchrun.train` run without torchrun: one
    rank, whose store lives in this process, so no port is needed."""
    if "RANK" in os.environ:
        return False
    os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1")
    return True


# --8<-- [start:step]
def train_step(model, cfg, step, device, mixed, traffic):
    """One optimizer step's forward and backward passes; mean loss."""
    rank, world = dist.get_rank(), dist.get_world_size()
    rows = slice(rank * cfg.micro_batch, (rank + 1) * cfg.micro_batch)
    total = torch.zeros((), device=device)
    for micro in range(cfg.accum_steps):
        traffic.where = (step, micro)
        x, y = batch(
            cfg.model, cfg.seed, step, micro, world * cfg.micro_batch, rows
        )
        x, y = x.to(device), y.to(device)
        last = micro == cfg.accum_steps - 1
        amp = (
            torch.autocast(device.type, dtype=torch.bfloat16)
            if mixed and cfg.strategy == "ddp"  # FSDP2: its own policy
            else nullcontext()
        )
        with grad_sync(model, cfg.strategy, last), amp:
            loss = loss_fn(model(x), y) / cfg.accum_steps
            loss.backward()
        total += loss.detach()
    dist.all_reduce(total)  # for the log only: the mean over all ranks
    return total.item() / world


# --8<-- [end:step]


def check_gradients(model, reference, cfg, step, device, mixed):
    """Max difference between the distributed gradients and those of
    one process that sees the whole step (all ranks, all micro-batches)
    in a single batch. Collective: call on every rank."""
    grads = [full(p.grad).float() for p in model.parameters()]
    if dist.get_rank() != 0:
        return None
    rows = dist.get_world_size() * cfg.micro_batch
    parts = [
        batch(cfg.model, cfg.seed, step, m, rows, slice(0, rows))
        for m in range(cfg.accum_steps)
    ]
    x = torch.cat([p[0] for p in parts]).to(device)
    y = torch.cat([p[1] for p in parts]).to(device)
    reference.to(device)
    loss_fn(reference(x), y).backward()
    diff = scale = 0.0
    for g, r in zip(grads, reference.parameters(), strict=True):
        diff = max(diff, (g - r.grad).abs().max().item())
        scale = max(scale, r.grad.abs().max().item())
    tolerance = (5e-2 if mixed else 1e-5) * scale
    return {
        "max_abs_diff": diff,
        "max_abs_grad": scale,
        "tolerance": tolerance,
        "rule": "max |g - g_ref| <= %g x max |g_ref|"
        % (5e-2 if mixed else 1e-5),
        "ok": diff <= tolerance,
    }


def weights_digest(model):
    """sha256 of the full weights (collective: call on every rank)."""
    options = StateDictOptions(full_state_dict=True, cpu_offload=True)
    state = get_model_state_dict(model, options=options)
    if dist.get_rank() != 0:
        return None
    h = hashlib.sha256()
    for name in sorted(state):
        h.update(name.encode())
        h.update(state[name].detach().float().contiguous().numpy().tobytes())
    return h.hexdigest()


def first_try():
    return os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") == "0"


def injected_fault(name):
    """Tests only: the step named by environment variable `name`, on a
    job's first try; else 0. tests/test_train.py kills a rank at a step
    (TRAIN_KILL_AT_STEP) or rank 0 half-way through a save
    (TRAIN_KILL_IN_SAVE), to check that a restarted job resumes."""
    text = os.environ.get(name, "0")
    if not text.isdigit():
        raise SystemExit(f"{name} must be a step number >= 0, got {text!r}")
    return int(text) if first_try() else 0


def maybe_fail(step):
    """Tests only: the last rank dies at the start of a step, once."""
    last_rank = dist.get_rank() == dist.get_world_size() - 1
    if last_rank and step == injected_fault("TRAIN_KILL_AT_STEP"):
        print(f"rank {dist.get_rank()}: killed at step {step} (test)")
        sys.stdout.flush()
        os.kill(os.getpid(), signal.SIGKILL)


def train(cfg, device, mixed):
    world = dist.get_world_size()
    model = build_model(cfg.model, cfg.seed)
    n_params = sum(p.numel() for p in model.parameters())
    reference = None
    if cfg.check and dist.get_rank() == 0:
        reference = build_model(cfg.model, cfg.seed)
    acts = None
    if dist.get_rank() == 0:  # one micro-batch, before any wrapping
        acts = activations.record(model, cfg, device, mixed)
    traffic = Traffic()
    shard = {"ddp": 1, "fsdp": world}.get(cfg.strategy, cfg.shard_size)
    model = parallelize(model, cfg.strategy, device, traffic, mixed, shard)
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    start, losses = 0, []
    if cfg.checkpoint_dir:
        start, losses = checkpoint.resume(cfg.checkpoint_dir, model, optimizer)
        if start:
            log(f"resumed from the checkpoint of step {start}")
        if start >= cfg.steps:
            log(f"step {start} was the last one (--steps): nothing to do")
            return None
    tokens = world * cfg.micro_batch * cfg.accum_steps * cfg.model.seq_len
    log(
        f"{cfg.strategy} on {world} rank(s), {device.type}, "
        f"{'bf16' if mixed else 'fp32'}; {n_params:,} parameters; "
        f"{tokens} tokens per step"
    )
    rates, grad_check, syncs = [], None, {}
    for step in range(start + 1, cfg.steps + 1):
        maybe_fail(step)
        began = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        loss = train_step(model, cfg, step, device, mixed, traffic)
        if cfg.check and step == 1:
            grad_check = check_gradients(
                model, reference, cfg, step, device, mixed
            )
        optimizer.step()
        rate = tokens / (time.perf_counter() - began)
        rates.append(rate)
        losses.append(loss)
        syncs[step] = traffic.syncs(step)
        if step % cfg.log_every == 0 or step == cfg.steps:
            log(f"step {step:4d}  loss {loss:.4f}  tokens/s {rate:,.0f}")
        if cfg.checkpoint_every and step % cfg.checkpoint_every == 0:
            checkpoint.save(
                cfg.checkpoint_dir,
                step,
                model,
                optimizer,
                losses,
                die_before_rename=step == injected_fault("TRAIN_KILL_IN_SAVE"),
            )
    per_rank = [None] * world
    dist.all_gather_object(per_rank, state_bytes(model, optimizer))
    digest = weights_digest(model)
    last = cfg.steps

    def moved(micro=None):
        return {
            kind: traffic.step_bytes(last, kind)
            if micro is None
            else traffic.micro_bytes(last, micro, kind)
            for kind in report.KINDS
        }

    return report.Run(
        strategy=cfg.strategy,
        world_size=world,
        shard_size=shard,
        device=device.type,
        compute_dtype="bf16" if mixed else "fp32",
        torch=torch.__version__,
        micro_batch=cfg.micro_batch,
        accum_steps=cfg.accum_steps,
        seq_len=cfg.model.seq_len,
        steps=cfg.steps,
        resumed_from_step=start,
        params=n_params,
        state=[report.StateBytes(**b) for b in per_rank],
        traffic=moved(),
        traffic_per_micro=[moved(m) for m in range(cfg.accum_steps)],
        syncs_per_step=[syncs[s] for s in sorted(syncs)],
        losses=losses,
        tokens_per_s=statistics.median(rates[1:] or rates or [0.0]),
        grad_check=report.GradCheck(**grad_check) if grad_check else None,
        weights_sha256=digest,
        activations=acts,
        model=asdict(cfg.model),
    )


# --8<-- [start:store]
def restart_store(timeout):
    """torchrun's store, with keys private to this restart, or None.

    torchrun's agents keep one TCPStore for the whole job. After a
    restart, a rank that looks up a peer's address could read the one a
    dead process left there; prefixing every key with the restart
    count rules that out.
    """
    if os.environ.get("TORCHELASTIC_USE_AGENT_STORE") != "True":
        return None
    store = dist.TCPStore(
        os.environ["MASTER_ADDR"],
        int(os.environ["MASTER_PORT"]),
        int(os.environ["WORLD_SIZE"]),
        is_master=False,
        timeout=timeout,
    )
    restart = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
    return dist.PrefixStore(f"restart-{restart}/", store)


# --8<-- [end:store]


# --8<-- [start:start]
def start_process_group(backend, device, timeout_s, solo=False):
    """init_process_group, with a time limit for the peers to arrive."""
    timeout = timedelta(seconds=timeout_s)
    try:
        store = dist.HashStore() if solo else restart_store(timeout)
        dist.init_process_group(
            backend,
            store=store,
            rank=int(os.environ["RANK"]) if store else -1,
            world_size=int(os.environ["WORLD_SIZE"]) if store else -1,
            timeout=timeout,
            device_id=device if backend == "nccl" else None,
        )
    except Exception as error:
        raise SystemExit(
            f"train.py: the process group did not start within "
            f"{timeout_s:g} s (--timeout); is every one of the "
            f"{os.environ['WORLD_SIZE']} ranks running? ({error})"
        ) from error


# --8<-- [end:start]


def write_report(runs, json_path):
    """Rank 0: each run against the models, then the side-by-side table."""
    for run in runs:
        print(report.summary(run), flush=True)
    if len(runs) > 1:
        print(report.table(*runs), flush=True)
        for problem in report.problems(runs):
            print("MISMATCH:", problem, flush=True)
    if json_path:
        report.dump(runs, json_path)


# --8<-- [start:main]
def main(argv=None):
    cfg = config.parse(argv)  # a bad flag exits here, on every rank
    solo = single_process_defaults()
    device, backend, mixed = pick_device()
    start_process_group(backend, device, cfg.timeout, solo)
    try:
        strategies = config.COMPARED if cfg.compare else [cfg.strategy]
        runs = [
            train(replace(cfg, strategy=s), device, mixed) for s in strategies
        ]
        if all(runs) and dist.get_rank() == 0:
            write_report(runs, cfg.json)
    finally:
        dist.destroy_process_group()  # on success and on error


# --8<-- [end:main]


# --8<-- [start:exit]
def run_and_exit(entry, argv=None):
    """Run `entry(argv)`, then end the process without finalizing Python.

    Destroying the process group does not stop gloo's worker threads:
    FSDP2's DTensors and DDP's reducer still hold the group, so its
    threads live until the interpreter itself shuts down. A worker that
    has just finished a collective releases the work's tensors, which
    needs the GIL. If the main thread is already finalizing, taking the
    GIL ends the worker thread, the unwind crosses a C++ destructor,
    and the rank dies with "terminate called without an active
    exception" (SIGABRT) after printing everything. Everything is
    flushed and the group destroyed by now, so the process ends here,
    with the right status, before finalization can start.
    """
    code = 0
    try:
        entry(argv)
    except SystemExit as stop:  # argparse errors, start-up timeouts
        if isinstance(stop.code, int) or stop.code is None:
            code = stop.code or 0
        else:
            print(stop.code, file=sys.stderr)
            code = 1
    except BaseException:
        traceback.print_exc()
        code = 1
    if code == 0:  # what course/stress.py counts; one write, so that
        # another rank's output cannot land inside the line
        sys.stdout.write(f"rank {os.environ.get('RANK', 0)}: clean exit\n")
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


# --8<-- [end:exit]


if __name__ == "__main__":
    run_and_exit(main)
