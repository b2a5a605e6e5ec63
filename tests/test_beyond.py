"""snippets/beyond/engines.py's writers, without the engines: what each
refuses, the Slurm script's rendezvous (checked by bash -n, too) and
the PyTorchJob. tests/test_engines.py loads the configurations with the
engines' own parsers and runs Ray Train (`make test-engines`)."""

import re
import subprocess
from dataclasses import asdict, replace

import pytest
import yaml

from snippets.beyond import engines
from snippets.planner.layouts import name
from snippets.planner.report import plan


@pytest.fixture(scope="module")
def job():
    return engines.planned(engines.torchtitan, "llama3-70b", nodes=8)[0]


def test_megatron_runs_the_planners_first_choice_with_its_schedules():
    """Megatron-LM has 1F1B and the interleaved schedule, not ZB-H1:
    it runs the planner's fastest layout under one of them."""
    job, _ = engines.planned(engines.megatron, "llama3-70b", nodes=8)
    rows = plan(preset="llama3-70b", nodes=8, top=4)["rows"]
    first = next(r for r in rows if "ZB-H1" not in r["layout"])
    assert name(asdict(job.layout)) == first["layout"]


@pytest.mark.parametrize(
    "writer, change, setting",
    [
        (engines.torchtitan, {"zero": 1}, "layout.zero (torchtitan)"),
        (engines.deepspeed, {"cp": 2}, "layout.cp (DeepSpeed)"),
        (
            engines.deepspeed,
            {"cp": 1, "zero": 1, "schedule": "1f1b"},
            "layout.tp with pp (DeepSpeed)",
        ),
        (engines.megatron, {"zero": "hsdp"}, "layout.zero (Megatron-LM)"),
    ],
)
def test_a_setting_the_engine_lacks_is_refused_by_name(
    job, writer, change, setting
):
    changed = replace(job, layout=replace(job.layout, **change))
    with pytest.raises(ValueError, match=re.escape(setting)):
        writer(changed)


def test_the_batch_is_the_same_in_every_engine(job):
    tokens = job.training.global_batch_tokens // job.model.seq_len
    titan = engines.torchtitan(job)["training"]
    assert titan["global_batch_size"] == tokens
    ds_job, ds = engines.planned(engines.deepspeed, "llama3-70b", nodes=8)
    assert ds["train_batch_size"] == tokens
    mega_job, args = engines.planned(engines.megatron, "llama3-70b", nodes=8)
    assert f"--global-batch-size {tokens}" in args


def test_megatron_shards_by_zero_stage(job):
    def flags(zero):
        lay = replace(job.layout, zero=zero, cp=1, pp=1, schedule="1f1b")
        return " ".join(engines.megatron(replace(job, layout=lay)))

    assert "--use-distributed-optimizer" not in flags(0)
    assert "optim_grads " not in flags(1) + " "
    assert "--data-parallel-sharding-strategy optim_grads" in flags(2)
    assert "--data-parallel-sharding-strategy optim_grads_params" in flags(3)


def test_slurm_script_sets_what_torchrun_needs(job):
    script = engines.slurm(job, flags=["--strategy", "fsdp"])
    assert f"#SBATCH --nodes={job.cluster.nodes}\n" in script
    assert "#SBATCH --ntasks-per-node=1\n" in script  # one agent a node
    assert re.search(
        r"^export MASTER_ADDR=\$\(scontrol show hostnames", script, re.M
    )
    assert "export MASTER_PORT=29500" in script
    assert "--rdzv-backend=c10d" in script
    assert "--rdzv-endpoint=$MASTER_ADDR:$MASTER_PORT" in script
    assert "--rdzv-id=$SLURM_JOB_ID" in script
    assert "--nnodes=$SLURM_JOB_NUM_NODES" in script
    assert f"--nproc-per-node={job.cluster.gpus_per_node}" in script
    assert script.rstrip().endswith(
        "-m snippets.torchrun.train --strategy fsdp"
    )
    check = subprocess.run(["bash", "-n"], input=script, text=True)
    assert check.returncode == 0


def test_pytorchjob_has_a_pod_per_node(job):
    spec = yaml.safe_load(engines.pytorchjob(job, "img:1"))["spec"]
    worker = spec["pytorchReplicaSpecs"]["Worker"]
    assert worker["replicas"] == job.cluster.nodes
    assert spec["elasticPolicy"]["rdzvBackend"] == "c10d"
    assert spec["nprocPerNode"] == str(job.cluster.gpus_per_node)
    (container,) = worker["template"]["spec"]["containers"]
    assert container["command"][:3] == [
        "torchrun",
        "-m",
        "snippets.torchrun.train",
    ]
    limits = container["resources"]["limits"]
    assert limits["nvidia.com/gpu"] == str(job.cluster.gpus_per_node)


def test_flags_and_toml_say_the_same(job):
    import tomllib

    settings = engines.torchtitan(job)
    assert tomllib.loads(engines.toml(settings)) == settings
    flags = engines.flags(settings)
    assert "--parallelism.enable-sequence-parallel" in flags
    assert flags[-1] == f"activation-checkpoint:{job.layout.recompute}"
    assert len(flags) == sum(map(len, settings.values()))
