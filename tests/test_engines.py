"""The planned layouts in the engines themselves (`make test-engines`,
which installs the engines group first): torchtitan's ConfigManager
parses the settings, DeepSpeed's DeepSpeedConfig loads the JSON,
Kubeflow's training SDK reads the PyTorchJob, and Ray Train trains the
course's script on 2 CPU workers and prints what the page shows.
Megatron-LM's flags are parsed by megatron/training/arguments.py,
which megatron-core ships from 0.17 on, for Python 3.12 and later only
(0.16.1, the newest for this project's 3.11, lacks it): not checked."""

import json
import subprocess
import sys

import pytest
import yaml

from course import ROOT
from snippets.beyond import engines

pytestmark = [pytest.mark.slow, pytest.mark.engines]
# what docs/beyond.md shows of the Ray run (ray_train.py's RECORD)
RECORD = ROOT / "snippets" / "beyond" / "ray_train.txt"
PRESETS = [("llama3-70b", 8), ("llama3-8b", 1), ("llama3-405b", 32)]


@pytest.mark.parametrize("preset, nodes", PRESETS)
def test_torchtitan_parses_the_settings(preset, nodes):
    """On the 8B config function: the larger ones turn on FP8, which
    needs torchao; the sections written do not depend on it."""
    from torchtitan.config.manager import ConfigManager

    _, settings = engines.planned(engines.torchtitan, preset, nodes)
    args = ["--module", "llama3", "--config", "llama3_8b"]
    parsed = ConfigManager().parse_args([*args, *engines.flags(settings)])
    mode = settings.pop("activation_checkpoint")["mode"]
    for section, values in settings.items():
        for key, value in values.items():
            assert getattr(getattr(parsed, section), key) == value, key
    kind = type(parsed.activation_checkpoint).__qualname__
    want = {"full": "FullAC", "selective": "SelectiveAC", "none": "NoneType"}
    assert kind.startswith(want[mode]), (mode, kind)


def test_torchtitan_refuses_an_unknown_key():
    from torchtitan.config.manager import ConfigManager

    args = ["--module", "llama3", "--config", "llama3_8b"]
    with pytest.raises(SystemExit):
        ConfigManager().parse_args([*args, "--parallelism.tp_degree=2"])


class DataParallel:
    """What DeepSpeed asks a model-parallel unit for the batch check."""

    def __init__(self, dp):
        self.dp = dp

    def get_data_parallel_world_size(self):
        return self.dp


@pytest.fixture
def deepspeed_config(monkeypatch):
    """DeepSpeedConfig as on rank 0 of the job, without a process group."""
    import deepspeed.runtime.config as ds

    monkeypatch.setattr(ds.dist, "get_rank", lambda: 0)
    return lambda config, dp: ds.DeepSpeedConfig(config, DataParallel(dp))


@pytest.mark.parametrize("preset, nodes", PRESETS)
def test_deepspeed_loads_the_json(deepspeed_config, preset, nodes):
    job, config = engines.planned(engines.deepspeed, preset, nodes)
    loaded = deepspeed_config(config, job.layout.dp)
    assert loaded.train_batch_size == config["train_batch_size"]
    assert loaded.gradient_accumulation_steps == job.microbatches
    assert (
        loaded.zero_optimization_stage == config["zero_optimization"]["stage"]
    )
    assert loaded.bfloat16_config.enabled == (job.training.precision == "bf16")
    tp = config.get("tensor_parallel", {}).get("autotp_size", 0)
    assert loaded.tensor_parallel_config.autotp_size == tp


def test_deepspeed_refuses_an_unknown_key(deepspeed_config):
    job, config = engines.planned(engines.deepspeed, "llama3-8b", 1)
    config["zero_optimization"]["stages"] = 2
    with pytest.raises(ValueError, match="stages"):
        deepspeed_config(config, job.layout.dp)


class Body:
    """What the Kubeflow SDK's ApiClient.deserialize reads: a response
    whose data is the manifest as JSON."""

    def __init__(self, manifest):
        self.data = json.dumps(manifest)


def kubeflow_roundtrip(manifest):
    """The manifest read into the Kubeflow training SDK's PyTorchJob
    model, which refuses a missing required field or a wrong type, and
    written back: a key the model does not have is dropped, so it shows
    as a difference."""
    from kubeflow.training import ApiClient

    api = ApiClient()
    model = api.deserialize(Body(manifest), "KubeflowOrgV1PyTorchJob")
    return model, api.sanitize_for_serialization(model)


@pytest.mark.parametrize("preset, nodes", PRESETS)
def test_kubeflow_reads_the_pytorchjob(preset, nodes):
    job, _ = engines.planned(engines.torchtitan, preset, nodes)
    text = engines.pytorchjob(job, "img:1", flags=["--strategy=fsdp"])
    manifest = yaml.safe_load(text)
    model, back = kubeflow_roundtrip(manifest)
    assert back == manifest
    worker = model.spec.pytorch_replica_specs["Worker"]
    assert worker.replicas == model.spec.elastic_policy.max_replicas == nodes
    assert model.spec.nproc_per_node == str(job.cluster.gpus_per_node)


@pytest.fixture
def manifest():
    job, _ = engines.planned(engines.torchtitan, "llama3-8b", 1)
    return yaml.safe_load(engines.pytorchjob(job, "img:1"))


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda spec: spec.pop("runPolicy"), "`run_policy`, must not be"),
        (
            lambda spec: spec["elasticPolicy"].update(minReplicas="eight"),
            "invalid literal for int",
        ),
    ],
    ids=["missing", "wrong-type"],
)
def test_kubeflow_refuses_a_broken_pytorchjob(manifest, change, message):
    change(manifest["spec"])
    with pytest.raises(ValueError, match=message):
        kubeflow_roundtrip(manifest)


def test_kubeflow_drops_an_unknown_key(manifest):
    manifest["spec"]["nprocPerNodes"] = "8"
    _, back = kubeflow_roundtrip(manifest)
    assert "nprocPerNodes" not in back["spec"]
    assert back != manifest


# Ten Python processes start and import Ray, two import torch: on a
# 2-core machine at a load of 20 one run took 7 minutes.
@pytest.mark.timeout(960)
def test_ray_train_runs_the_script_and_prints_the_record():
    """The run trains again; its losses match the page's to the last
    printed digit (4 decimals), give or take one in that digit."""
    done = subprocess.run(
        [sys.executable, "-m", "snippets.beyond.ray_train"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    printed = done.stdout.strip().splitlines()
    recorded = RECORD.read_text().strip().splitlines()
    assert printed[0] == recorded[0] and len(printed) == len(recorded)
    for new, old in zip(printed[1:], recorded[1:], strict=True):
        new_loss, old_loss = (float(x.split()[-1]) for x in (new, old))
        assert new.split()[:3] == old.split()[:3]
        assert abs(new_loss - old_loss) <= 1.5e-4, (new, old)


@pytest.mark.parametrize("text", ["", "autogroup\n"])
def test_ray_start_leaves_an_autogroup_it_cannot_read_alone(tmp_path, text):
    """A container may show /proc/self/autogroup empty: Ray starts at
    the usual weight and the file is not written."""
    from snippets.beyond.ray_train import started_first

    group = tmp_path / "autogroup"
    group.write_text(text)
    with started_first(-10, group):
        assert group.read_text() == text
    assert group.read_text() == text


def test_ray_start_weighs_its_session_up_then_restores_it(tmp_path):
    from snippets.beyond.ray_train import started_first

    group = tmp_path / "autogroup"
    group.write_text("/autogroup-7 nice 3\n")
    with started_first(-10, group):
        assert group.read_text() == "-10"
    assert group.read_text() == "3"
