"""The processes of a launch: their device and backend, the process
group, and a clean exit. train.py, sweep.py and collectives.py start
and end through here.
"""

import os
import sys
import traceback
from datetime import timedelta

import torch
import torch.distributed as dist


# --8<-- [start:device]
def pick_device():
    """NCCL on the GPU named by LOCAL_RANK, else gloo on the CPU."""
    if torch.cuda.is_available():
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
        torch.cuda.set_device(device)
        return device, "nccl", torch.cuda.is_bf16_supported()
    return torch.device("cpu"), "gloo", False  # fp32 on CPU


# --8<-- [end:device]


# --8<-- [start:store]
def restart_store(timeout):
    """torchrun's store, with keys private to this restart, or None.

    torchrun's agents share one TCPStore for the whole job, and the
    workers' keys carry no restart count: after a restart, a rank that
    looks up a peer's address could read the one a dead process left
    there. Prefixing every key with the restart count rules that out.
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
def start_process_group(backend, device, timeout_s):
    """init_process_group, with a time limit for the peers to arrive.
    Without torchrun, one rank whose store lives in this process."""
    timeout = timedelta(seconds=timeout_s)
    solo = "RANK" not in os.environ
    if solo:
        os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1")
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
