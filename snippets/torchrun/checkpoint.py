"""Distributed checkpoints (DCP) that are complete or invisible.

A checkpoint is written into `step_NNNNNN.tmp/` and renamed to
`step_NNNNNN/` only after every rank has finished writing, so a job
killed while saving leaves a `.tmp` folder that `latest` never picks.
"""

import json
import re
import shutil
from pathlib import Path

import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import (
    StateDictOptions,
    get_state_dict,
    set_state_dict,
)

COMPLETE = re.compile(r"step_(\d{6})")
# One key per parameter, for its Adam state and its hyperparameters
# alike: with pipeline stages, ranks hold different parameters, and
# DCP keeps one copy of a key that several ranks write.
FLAT = StateDictOptions(flatten_optimizer_state_dict=True)


def latest(folder):
    """The newest complete checkpoint in `folder`, or None."""
    folder = Path(folder)
    if not folder.is_dir():
        return None
    found = [
        (int(m[1]), path)
        for path in folder.iterdir()
        if (m := COMPLETE.fullmatch(path.name))
        and (path / ".metadata").is_file()
        and (path / "trainer.json").is_file()
    ]
    return max(found)[1] if found else None


# --8<-- [start:save]
def save(folder, step, model, optimizer, losses):
    final = Path(folder) / f"step_{step:06d}"
    partial = final.with_name(final.name + ".tmp")
    if dist.get_rank() == 0:
        shutil.rmtree(partial, ignore_errors=True)  # left by a crash
        partial.mkdir(parents=True)
    dist.barrier()
    model_sd, optim_sd = get_state_dict(model, optimizer, options=FLAT)
    dcp.save({"model": model_sd, "optim": optim_sd}, checkpoint_id=partial)
    if dist.get_rank() == 0:
        trainer = {"step": step, "losses": losses}
        (partial / "trainer.json").write_text(json.dumps(trainer))
        partial.rename(final)  # the checkpoint exists from here on
    dist.barrier()


# --8<-- [end:save]


# --8<-- [start:resume]
def resume(folder, model, optimizer):
    """Load the latest complete checkpoint; (step, losses) or (0, [])."""
    found = [latest(folder) if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(found, src=0)  # every rank loads the same
    if found[0] is None:
        return 0, []
    model_sd, optim_sd = get_state_dict(model, optimizer, options=FLAT)
    state = {"model": model_sd, "optim": optim_sd}
    dcp.load(state, checkpoint_id=found[0])
    set_state_dict(
        model,
        optimizer,
        model_state_dict=state["model"],
        optim_state_dict=state["optim"],
        options=FLAT,
    )
    trainer = json.loads((Path(found[0]) / "trainer.json").read_text())
    return trainer["step"], trainer["losses"]


# --8<-- [end:resume]
