"""snippets/torchrun/train.py under torchrun, on CPU with gloo.

Every subprocess has a timeout, so a hang fails the test instead of
blocking CI. The model is tiny; start-up dominates each launch.
"""

import re
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
import torch.distributed as dist

from course.stress import ROOT, SMALL, environment, launch, torchrun
from snippets.ddp.allreduce import allreduce_bytes
from snippets.torchrun import config, report
from snippets.torchrun.report import LOSS_TOLERANCE

pytestmark = pytest.mark.slow  # torchrun launches

ENV = environment()


@pytest.fixture
def store():
    """A TCPStore that this test process hosts on a port the kernel
    picked (port 0): nothing can take the port between choosing it and
    binding it, as it could with a port found free and bound later."""
    hosted = dist.TCPStore(
        "127.0.0.1",
        0,
        is_master=True,
        wait_for_workers=False,
        timeout=timedelta(seconds=60),
    )
    yield hosted
    del hosted


def train_json(tmp_path, *args, launcher=None, env=None):
    """Train with the tiny model; the runs the script measured, and the
    finished process."""
    out = tmp_path / f"runs-{len(list(tmp_path.iterdir()))}.json"
    options = {"launcher": launcher} if launcher else {}
    if env:
        options["env"] = ENV | env
    done = torchrun(*SMALL, *args, f"--json={out}", **options)
    assert done.returncode == 0, done.stderr[-4000:]
    return report.load(out), done


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """DDP and FSDP from one `--compare` launch per accumulation."""
    made = {}

    def get(strategy, accum):
        if accum not in made:
            tmp = tmp_path_factory.mktemp(f"compare{accum}")
            ddp, fsdp = train_json(
                tmp,
                "--compare",
                f"--accum-steps={accum}",
                "--steps=3",
                "--check",
            )[0]
            made[accum] = {"ddp": ddp, "fsdp": fsdp}
        return made[accum][strategy]

    return get


@pytest.mark.parametrize("accum", [1, 2])
@pytest.mark.parametrize("strategy", ["ddp", "fsdp"])
def test_measured_figures_match_the_models(runs, strategy, accum):
    r = runs(strategy, accum)
    m = report.predict(r)
    assert r.world_size == 2 and r.accum_steps == accum
    assert r.strategy == strategy
    for state in r.state:
        assert state.total == m.state_bytes
    assert r.traffic == m.traffic
    assert r.traffic_per_micro == m.traffic_per_micro
    assert set(r.syncs_per_step) == {1} == {m.syncs_per_step}
    # N ranks x B rows x K micro-batches == one process, one big batch
    assert r.grad_check.ok, r.grad_check
    assert report.problems([r]) == []


@pytest.mark.parametrize("accum", [1, 2])
def test_fsdp_holds_half_and_moves_one_and_a_half_times(runs, accum):
    ddp, fsdp = runs("ddp", accum), runs("fsdp", accum)
    for state in fsdp.state:
        assert 2 * state.total == ddp.state[0].total
    grads = allreduce_bytes(ddp.params, bytes_per_grad=4, world_size=2)
    assert ddp.traffic["all_reduce"] == round(grads["grad_GB"] * 1e9)
    # ZeRO-3 on the micro-batch that reduces gradients: 3 psi vs 2 psi
    sent = [report.sent_by(r, r.traffic_per_micro[-1]) for r in (ddp, fsdp)]
    assert sent[1] / sent[0] == pytest.approx(1.5)


@pytest.mark.parametrize("accum", [1, 2])
def test_ddp_and_fsdp_give_the_same_losses(runs, accum):
    ddp, fsdp = runs("ddp", accum), runs("fsdp", accum)
    assert len(ddp.losses) == len(fsdp.losses) == 3
    assert report.max_loss_gap(ddp, fsdp) <= LOSS_TOLERANCE


def test_hsdp_shards_in_groups_and_all_reduces_across_them(tmp_path):
    """4 ranks as 2 replicas x 2 shards: half of DDP's state per rank,
    and the replicas all-reduce half the gradient (their shard)."""
    [r], _ = train_json(
        tmp_path,
        "--strategy=hsdp",
        "--shard-size=2",
        "--accum-steps=2",
        "--steps=2",
        "--check",
        launcher=("--standalone", "--nproc_per_node=4"),
    )
    assert (r.world_size, r.shard_size) == (4, 2)
    assert report.problems([r]) == []
    gradient = r.params * r.state[0].bytes_grad
    assert r.state[0].total == 16 * r.params // 2
    assert r.traffic["all_reduce"] == gradient // 2
    assert r.traffic["reduce_scatter"] == gradient
    assert r.grad_check.ok, r.grad_check


def test_the_compare_table_sets_measured_beside_predicted(runs):
    ddp, fsdp = runs("ddp", 2), runs("fsdp", 2)
    rows = report.table(ddp, fsdp).splitlines()
    assert "DDP measured | DDP predicted | FSDP measured" in rows[0]
    [state] = [r for r in rows if r.startswith("| state")]
    cells = [c.strip() for c in state.split("|")[2:-1]]
    assert cells[0] == cells[1] and cells[2] == cells[3], state
    assert float(cells[0]) == 2 * float(cells[2]) > 0


BAD = [
    (["--strategy=zero"], "--strategy", "'ddp', 'fsdp'"),
    (["--accum-steps=0"], "--accum-steps", ">= 1"),
    (["--micro-batch=-1"], "--micro-batch", ">= 1"),
    (["--global-batch=7", "--micro-batch=2"], "--global-batch", "multiple"),
    (["--d-model=30", "--n-heads=4"], "--d-model", "--n-heads"),
    (["--checkpoint-every=2"], "--checkpoint-every", "--checkpoint-dir"),
    (["--strategy=hsdp", "--shard-size=3"], "--shard-size", "divide"),
    (["--shard-size=2"], "--shard-size", "--strategy hsdp only"),
    (["--compare", "--strategy=ddp"], "--compare", "drop --strategy"),
]


@pytest.mark.parametrize(
    "args,name,allowed", BAD, ids=[b[1] + "-" + b[0][-1] for b in BAD]
)
def test_a_bad_flag_is_named_with_what_it_accepts(capsys, args, name, allowed):
    with pytest.raises(SystemExit) as stop:
        config.parse(args, env={"WORLD_SIZE": "2"})
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert name in err and allowed in err, err


def rank(number, world, port, *args):
    """Rank `number` of `world`, started by hand as torchrun would."""
    env = dict(
        ENV,
        RANK=str(number),
        LOCAL_RANK=str(number),
        WORLD_SIZE=str(world),
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        TORCHELASTIC_USE_AGENT_STORE="True",
    )
    return subprocess.Popen(
        [sys.executable, "-m", "snippets.torchrun.train", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_a_bad_flag_fails_on_every_rank(store):
    """Both ranks reject the flag before any process group exists, so
    neither waits for the other. (Under torchrun the first rank to fail
    gets the other killed, so the ranks are started by hand here.)"""
    ranks = [rank(r, 2, store.port, "--strategy=zero") for r in (0, 1)]
    errors = [p.communicate(timeout=60)[1] for p in ranks]
    assert [p.returncode for p in ranks] == [2, 2], errors
    for err in errors:
        assert "invalid choice: 'zero'" in err, err


def test_a_missing_peer_is_an_error_not_a_hang(store):
    """Rank 0 of 2 starts alone, on the store an agent would host."""
    alone = rank(0, 2, store.port, "--timeout=2")
    err = alone.communicate(timeout=60)[1]
    assert alone.returncode == 1, err
    assert "did not start within 2 s" in err, err
    assert "2 ranks running" in err


def test_latest_skips_half_written_checkpoints(tmp_path):
    from snippets.torchrun.checkpoint import latest

    def make(name, *files):
        folder = tmp_path / name
        folder.mkdir()
        for f in files:
            (folder / f).write_text("{}")

    assert latest(tmp_path) is None
    make("step_000002", ".metadata", "trainer.json")
    make("step_000004", ".metadata", "trainer.json")
    make("step_000006.tmp", ".metadata", "trainer.json")  # not renamed
    make("step_000008")  # empty: not a checkpoint
    make("step_000010.tmp")
    assert latest(tmp_path).name == "step_000004"
    assert latest(tmp_path / "absent") is None


FAULTS = {
    # DDP: the last rank is killed at the start of step 3; the restart
    # resumes from the checkpoint of step 2.
    "ddp": ({"TRAIN_KILL_AT_STEP": "3"}, 2),
    # FSDP: rank 0 is killed while saving step 2, after DCP wrote the
    # files but before the rename; the restart skips the half-written
    # step 2 and resumes from step 1.
    "fsdp": ({"TRAIN_KILL_IN_SAVE": "2"}, 1),
}


@pytest.mark.parametrize("strategy", ["ddp", "fsdp"])
def test_a_killed_job_restarts_and_ends_as_if_never_killed(
    runs, tmp_path, strategy
):
    fault, resumed = FAULTS[strategy]
    clean = runs(strategy, 1)  # the same flags, never interrupted
    [faulty], done = train_json(
        tmp_path,
        f"--strategy={strategy}",
        "--accum-steps=1",
        "--steps=3",
        "--checkpoint-every=1",
        f"--checkpoint-dir={tmp_path / 'checkpoints'}",
        "--check",
        launcher=("--standalone", "--nproc_per_node=2", "--max-restarts=1"),
        env=fault,
    )
    log = done.stdout + done.stderr
    assert clean.resumed_from_step == 0
    assert faulty.resumed_from_step == resumed, log
    assert f"resumed from the checkpoint of step {resumed}" in log
    assert faulty.losses == clean.losses
    assert faulty.weights_sha256 == clean.weights_sha256
    names = sorted(p.name for p in (tmp_path / "checkpoints").iterdir())
    assert names == ["step_000001", "step_000002", "step_000003"]


def test_the_fault_switch_names_itself_when_misused(monkeypatch):
    from snippets.torchrun.train import injected_fault

    monkeypatch.setenv("TRAIN_KILL_AT_STEP", "three")
    with pytest.raises(SystemExit, match="TRAIN_KILL_AT_STEP must be"):
        injected_fault("TRAIN_KILL_AT_STEP")
    monkeypatch.setenv("TRAIN_KILL_AT_STEP", "3")
    assert injected_fault("TRAIN_KILL_AT_STEP") == 3
    monkeypatch.setenv("TORCHELASTIC_RESTART_COUNT", "1")  # a restart
    assert injected_fault("TRAIN_KILL_AT_STEP") == 0


def page_commands():
    """The shell commands of docs/torchrun.md (`\\` joins lines)."""
    page = (ROOT / "docs" / "torchrun.md").read_text(encoding="utf-8")
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", page, re.DOTALL):
        joined = re.sub(r"\\\n\s*", "", block)
        for line in joined.splitlines():
            line = line.split("  #")[0].strip()
            if line and not line.startswith(("#", "export ")):
                commands.append(line)
    return commands


def shell(command, cwd, nproc):
    """Start `command` as a reader would, with the venv's torchrun first
    on PATH, `nproc` processes, a tiny model and one step."""
    command = re.sub(
        r"--nproc_per_node=\S+", f"--nproc_per_node={nproc}", command
    )
    return subprocess.Popen(
        f"{command} {' '.join(SMALL)} --steps=1",
        shell=True,
        cwd=cwd,
        env=dict(ENV, PATH=f"{Path(sys.executable).parent}:{ENV['PATH']}"),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def finish(processes):
    try:
        logs = [p.communicate(timeout=150)[0] for p in processes]
    finally:
        for p in processes:
            if p.poll() is None:
                p.kill()
                p.wait(timeout=30)
    return [p.returncode for p in processes], "\n".join(logs)


def test_the_page_commands_run(tmp_path):
    """The page's one-node commands as pasted, with two processes (for
    `gpu`) and one step of a tiny model."""
    commands = [c for c in page_commands() if "--standalone" in c]
    assert commands, "no single-node torchrun command on the page"
    shrunk = {
        re.sub(r"--nproc_per_node=\S+", "--nproc_per_node=2", c)
        for c in commands
    }
    for i, command in enumerate(sorted(shrunk)):
        assert command.startswith("torchrun "), command
        cwd = tmp_path / str(i)
        cwd.mkdir()
        codes, log = finish([shell(command, cwd, nproc=2)])
        assert codes == [0], f"{command}\n{log[-3000:]}"


def test_two_nodes_meet_at_a_c10d_rendezvous(tmp_path, store):
    """The page's multi-node command, as two agents (`--nnodes=2`, one
    process each) meeting at a c10d rendezvous on 127.0.0.1.

    On one machine both agents match the endpoint's host name, so each
    would try to host the rendezvous store and the later one would
    race the earlier; here the test hosts it and both agents join it
    as clients (`is_host=false`)."""
    [command] = [c for c in page_commands() if "--rdzv-endpoint" in c]
    assert "--nnodes=2" in command and "--rdzv-backend=c10d" in command
    command = command.replace(
        "--rdzv-endpoint=$HEAD_NODE:29500",
        f"--rdzv-endpoint=127.0.0.1:{store.port} --rdzv-conf=is_host=false",
    )
    assert f":{store.port} " in command, command
    out = tmp_path / "two-nodes.json"
    agents = [
        shell(f"{command} --json {out}", tmp_path, nproc=1) for _ in range(2)
    ]
    codes, log = finish(agents)
    assert codes == [0, 0], log[-3000:]
    [result] = report.load(out)
    assert result.world_size == 2 and len(result.losses) == 1


@pytest.mark.parametrize("strategy", ["ddp", "fsdp"])
def test_launches_exit_cleanly_every_time(strategy):
    """The short form of `make stress`: three launches with --check and
    checkpoints, each exiting 0 with a clean exit on both ranks."""
    problems = [launch(strategy) for _ in range(3)]
    assert problems == [None] * 3, "\n".join(filter(None, problems))


@pytest.fixture
def fake_launches(tmp_path, monkeypatch):
    """course.measure with a launch that only counts: the list of the
    args it was called with; the cache in tmp_path, CI unset."""
    from course import cache, measure

    calls = []

    def fake_launch(args):
        calls.append(args)
        return [report.Run.from_dict(dict(FAKE_RUN, steps=len(calls)))]

    monkeypatch.setattr(cache, "STORE", tmp_path)
    monkeypatch.setattr(measure, "launch", fake_launch)
    monkeypatch.delenv("CI", raising=False)
    return calls


def test_the_page_measurement_is_cached_except_in_ci(
    fake_launches, monkeypatch
):
    from course import measure

    calls = fake_launches
    first = measure.measure(("--steps=1",))
    assert measure.measure(("--steps=1",)) == first and len(calls) == 1
    assert measure.measure(("--steps=2",)) != first and len(calls) == 2
    monkeypatch.setenv("CI", "true")
    measure.measure(("--steps=1",))
    assert len(calls) == 3


def test_a_started_launch_is_the_one_the_page_measures(
    fake_launches, monkeypatch
):
    """course/hooks.py starts the launch when the build starts; the
    page's measure() takes that launch's runs instead of launching
    again, and nothing starts when the cache holds the result."""
    from course import measure

    calls = fake_launches
    measure.start(("--steps=1",))
    measure.start(("--steps=1",))  # begun already: not again
    assert measure.measure(("--steps=1",))[0].steps == 1
    measure.start(("--steps=1",))  # cached now
    assert measure.measure(("--steps=1",))[0].steps == 1
    assert len(calls) == 1
    monkeypatch.setenv("CI", "true")  # no cache: start, then take it
    measure.start(("--steps=1",))
    assert measure.measure(("--steps=1",))[0].steps == 2
    assert len(calls) == 2


FAKE_RUN = dict(
    strategy="ddp",
    world_size=1,
    shard_size=1,
    device="cpu",
    compute_dtype="fp32",
    torch="0",
    micro_batch=1,
    accum_steps=1,
    seq_len=2,
    steps=1,
    resumed_from_step=0,
    params=1,
    state=[
        dict(
            params=4,
            grads=4,
            optim=8,
            bytes_param=4,
            bytes_grad=4,
            bytes_optim=8,
        )
    ],
    traffic={},
    traffic_per_micro=[],
    syncs_per_step=[0],
    losses=[1.0],
    tokens_per_s=1.0,
)
