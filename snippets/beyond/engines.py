"""A planned layout in the settings of torchtitan, DeepSpeed and
Megatron-LM, and the Slurm script that starts it on many nodes."""

import json

from snippets.planner.layouts import check_layout, plan_layouts
from snippets.planner.model import MODELS, cluster

# --8<-- [start:engines]
TITAN_SCHEDULES = {
    "gpipe": "GPipe",
    "1f1b": "1F1B",
    "interleaved": "Interleaved1F1B",
}
TITAN_RESHARD = {None: "default", True: "always", False: "never"}
PRECISIONS = ("bf16", "fp16")  # fp8 is a model converter or a TE recipe


def choice(setting, value, allowed):
    """value, if the engine has a setting for it."""
    if value not in allowed:
        names = ", ".join(map(repr, allowed))
        raise ValueError(f"{setting} must be one of {names}; got {value!r}")
    return value


def torchtitan(job):
    """torchtitan's settings, {section: {key: value}}. torchtitan shards
    with FSDP2 (ZeRO-3), HSDP, or replicates (DDP): ZeRO-1 and ZeRO-2
    are DeepSpeed's and Megatron's."""
    lay, t = job.layout, job.training
    choice("layout.zero (torchtitan)", lay.zero, (0, 3, "hsdp"))
    choice("training.precision (torchtitan)", t.precision, PRECISIONS)
    replicate = {0: lay.dp, 3: 1, "hsdp": lay.dp // job.shard}[lay.zero]
    batch = t.micro_batch * (job.microbatches if lay.pp > 1 else 1)
    choice(
        "layout.embedding_slots (torchtitan)", lay.embedding_slots, (False,)
    )
    per_stage = job.model.layers // (lay.pp * lay.chunks)
    return {
        "training": {
            "local_batch_size": batch,
            "global_batch_size": t.micro_batch * job.microbatches * lay.dp,
            "seq_len": job.model.seq_len,
            "mixed_precision_param": {"bf16": "bfloat16"}.get(
                t.precision, "float32"
            ),
            # (torchtitan's CUDA graphs do not run a pipeline yet)
            "disable_cuda_graphs": lay.pp > 1,
        },
        "parallelism": {
            "data_parallel_replicate_degree": replicate,
            "data_parallel_shard_degree": lay.dp // replicate,
            "fsdp_reshard_after_forward": TITAN_RESHARD[
                lay.reshard_after_forward
            ],
            "tensor_parallel_degree": lay.tp,
            "enable_sequence_parallel": bool(lay.sequence_parallel),
            "pipeline_parallel_degree": lay.pp,
            "pipeline_parallel_schedule": TITAN_SCHEDULES[
                choice(
                    "layout.schedule (torchtitan)",
                    lay.schedule,
                    TITAN_SCHEDULES,
                )
            ],
            "pipeline_parallel_microbatch_size": t.micro_batch,
            "pipeline_parallel_layers_per_stage": per_stage,
            # (the embedding and the output layer take no layer's place)
            "pipeline_parallel_first_stage_less_layers": 0,
            "pipeline_parallel_last_stage_less_layers": 0,
            "context_parallel_degree": lay.cp,
        },
        "activation_checkpoint": {"mode": lay.recompute},
    }


def deepspeed(job):
    """DeepSpeed's JSON config. Its pipeline engine runs 1F1B with ZeRO
    0 or 1 only; tensor parallelism is AutoTP's, outside the pipeline
    engine; its sequence parallelism (Ulysses) is not ring context
    parallelism."""
    lay, t = job.layout, job.training
    choice("layout.zero (DeepSpeed)", lay.zero, (0, 1, 2, 3, "hsdp"))
    choice("training.precision (DeepSpeed)", t.precision, PRECISIONS)
    choice("layout.cp (DeepSpeed)", lay.cp, (1,))
    if lay.pp > 1:  # its pipeline engine: 1F1B, ZeRO 0 or 1, no AutoTP
        choice("layout.schedule (DeepSpeed)", lay.schedule, ("1f1b",))
        choice("layout.zero with pp (DeepSpeed)", lay.zero, (0, 1))
        choice("layout.tp with pp (DeepSpeed)", lay.tp, (1,))
    stage = 3 if lay.zero == "hsdp" else lay.zero
    config = {
        "train_micro_batch_size_per_gpu": t.micro_batch,
        "gradient_accumulation_steps": job.microbatches,
        "train_batch_size": t.micro_batch * job.microbatches * lay.dp,
        "bf16": {"enabled": t.precision == "bf16"},
        "fp16": {"enabled": t.precision == "fp16"},
        "zero_optimization": {"stage": stage},
    }
    if lay.zero == "hsdp":  # ZeRO++'s hpZ: a second copy inside the node
        config["zero_optimization"]["zero_hpz_partition_size"] = job.shard
    if lay.tp > 1:
        config["tensor_parallel"] = {"autotp_size": lay.tp}
    if lay.recompute == "full":
        config["activation_checkpointing"] = {
            "partition_activations": lay.tp > 1
        }
    return config


def megatron(job):
    """Megatron-LM's pretrain_gpt.py flags: ZeRO-1 is its distributed
    optimizer, ZeRO-2 and ZeRO-3 are Megatron-FSDP's sharding."""
    lay, t = job.layout, job.training
    choice("layout.zero (Megatron-LM)", lay.zero, (0, 1, 2, 3))
    flags = [
        f"--tensor-model-parallel-size {lay.tp}",
        f"--pipeline-model-parallel-size {lay.pp}",
        f"--context-parallel-size {lay.cp}",
        f"--micro-batch-size {t.micro_batch}",
        f"--global-batch-size {t.micro_batch * job.microbatches * lay.dp}",
        f"--seq-length {job.model.seq_len}",
        f"--{t.precision}",
    ]
    choice(
        "layout.schedule (Megatron-LM)", lay.schedule, ("1f1b", "interleaved")
    )
    if lay.schedule == "interleaved":
        per_chunk = job.model.layers // (lay.pp * lay.chunks)
        flags.append(f"--num-layers-per-virtual-pipeline-stage {per_chunk}")
    if lay.sequence_parallel:
        flags.append("--sequence-parallel")
    if lay.zero:
        flags.append("--use-distributed-optimizer")
    if lay.zero in (2, 3):
        sharded = {2: "optim_grads", 3: "optim_grads_params"}[lay.zero]
        flags += [
            "--use-megatron-fsdp",
            f"--data-parallel-sharding-strategy {sharded}",
        ]
    if lay.recompute == "full":
        flags.append(
            "--recompute-granularity full --recompute-method uniform "
            "--recompute-num-layers 1"
        )
    elif lay.recompute == "selective":
        flags.append("--recompute-granularity selective")
    return flags


# --8<-- [end:engines]
# --8<-- [start:slurm]
def slurm(job, module="snippets.torchrun.train", flags=(), port=29500):
    """An sbatch script: one srun task per node, each a torchrun agent
    that meets the others at the first node (c10d rendezvous)."""
    c = job.cluster
    return f"""#!/bin/bash
#SBATCH --job-name=train
#SBATCH --nodes={c.nodes}
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node={c.gpus_per_node}
#SBATCH --exclusive
set -euo pipefail
# the first node of the allocation hosts the rendezvous
export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
export MASTER_PORT={port}
srun torchrun \\
  --nnodes=$SLURM_JOB_NUM_NODES --nproc-per-node={c.gpus_per_node} \\
  --rdzv-backend=c10d --rdzv-endpoint=$MASTER_ADDR:$MASTER_PORT \\
  --rdzv-id=$SLURM_JOB_ID \\
  -m {module} {" ".join(flags)}
"""


# --8<-- [end:slurm]
# --8<-- [start:pytorchjob]
def pytorchjob(job, image, module="snippets.torchrun.train", flags=()):
    """A Kubeflow PyTorchJob: one pod per node, each a torchrun agent;
    the operator sets the rendezvous (PET_*) variables. Kubernetes
    reads quantities as strings, so the GPU count is one."""
    c = job.cluster
    command = ["torchrun", "-m", module, *flags]
    return f"""apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: train
spec:
  elasticPolicy:
    rdzvBackend: c10d
    minReplicas: {c.nodes}
    maxReplicas: {c.nodes}
  nprocPerNode: "{c.gpus_per_node}"
  runPolicy:
    cleanPodPolicy: None  # the pods, and their logs, stay after the job
  pytorchReplicaSpecs:
    Worker:
      replicas: {c.nodes}
      template:
        spec:
          containers:
            - name: pytorch
              image: {image}
              command: {json.dumps(command)}
              resources:
                limits:
                  nvidia.com/gpu: "{c.gpus_per_node}"
"""


# --8<-- [end:pytorchjob]
def toml(sections):
    """The settings as TOML, one [section] each."""
    lines = []
    for section, values in sections.items():
        lines.append(f"[{section}]")
        lines += [f"{k} = {json.dumps(v)}" for k, v in values.items()]
        lines.append("")
    return "\n".join(lines)


def flags(sections):
    """The same settings as torchtitan 0.3's flags: --section.key=value,
    --section.key or --section.no-key for a switch, and the recompute
    mode as its activation-checkpoint:MODE subcommand, last."""
    found, mode = [], None
    for section, values in sections.items():
        for key, v in values.items():
            if section == "activation_checkpoint":
                mode = f"activation-checkpoint:{v}"
            elif isinstance(v, bool):
                no = "" if v else "no-"
                found.append(f"--{section}.{no}{key.replace('_', '-')}")
            else:
                found.append(f"--{section}.{key}={v}")
    return found + ([mode] if mode else [])


# --8<-- [start:plan]
def planned(writer, preset="llama3-70b", nodes=8, micro_batch=1):
    """The planner's fastest layout that fits and that `writer`'s engine
    runs: (the Job, its settings)."""
    model, gpus = MODELS[preset], cluster("h100-80gb", nodes)
    training = {
        "global_batch_tokens": 4 * 1024 * 1024,
        "micro_batch": micro_batch,
    }
    for ranked in plan_layouts(model, gpus, training)["ranked"]:
        if not ranked["fits"]:
            break
        job = check_layout(ranked["layout"], model, gpus, training)
        try:
            return job, writer(job)
        except ValueError:
            continue  # the engine has no such setting
    raise ValueError(f"no layout of {preset} fits that {writer.__name__} runs")


# --8<-- [end:plan]
