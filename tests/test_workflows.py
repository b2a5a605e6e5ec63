"""Lint the GitHub Actions workflows: zizmor, the workflow JSON schema,
and the project's own rules that zizmor (regular persona, offline) does
not make: no continue-on-error, write scopes only where a job needs
them, a version comment on each pinned action, a time limit per job,
what CI runs and publishes, and a GPU workflow that a fork's pull
request cannot start.

zizmor already refuses, so they are not repeated here: the
pull_request_target and workflow_run triggers (dangerous-triggers), an
action not pinned to a full commit SHA (unpinned-uses) and a checkout
that keeps its token (artipacked)."""

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from course import ROOT
from course.tools.chromium import EXECUTABLE

WORKFLOWS = ROOT / ".github" / "workflows"
BIN = Path(sys.executable).parent
FILES = sorted([*WORKFLOWS.glob("*.yml"), *WORKFLOWS.glob("*.yaml")])
EXPECTED = ("ci.yml", "pages.yml", "gpu.yml", "links.yml")
FORK_GUARD = re.compile(
    r"github\.event\.pull_request\.head\.repo\.full_name\s*==\s*"
    r"github\.repository"
    r"|github\.repository\s*==\s*"
    r"github\.event\.pull_request\.head\.repo\.full_name"
)
# Write scopes a job may hold, and where: only the Pages deployment.
DEPLOY_SCOPES = {"pages": "write", "id-token": "write"}
MAIN_PUSH = "github.event_name == 'push' && github.ref == 'refs/heads/main'"


def load(path):
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def triggers(workflow):
    # YAML 1.1 reads a bare `on` key as True.
    on = workflow.get("on", workflow.get(True))
    if isinstance(on, str):
        return {on: None}
    if isinstance(on, list):
        return dict.fromkeys(on)
    return on or {}


def ids(paths):
    return [p.name for p in paths]


def run(*command):
    return subprocess.run(
        [str(c) for c in command],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("name", EXPECTED)
def test_workflow_exists(name):
    assert (WORKFLOWS / name).is_file(), (
        f".github/workflows/{name} does not exist yet"
    )


def test_zizmor_finds_nothing():
    result = run(BIN / "zizmor", "--offline", WORKFLOWS)
    report = result.stdout + result.stderr
    assert result.returncode == 0, report
    assert "No findings to report" in report, report


@pytest.mark.parametrize("path", FILES, ids=ids(FILES))
def test_schema(path):
    result = run(
        BIN / "check-jsonschema",
        "--builtin-schema",
        "vendor.github-workflows",
        path,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("path", FILES, ids=ids(FILES))
def test_no_ignored_failures(path):
    text = path.read_text(encoding="utf-8")
    assert "continue-on-error" not in text, "a failure must fail the run"


@pytest.mark.parametrize("path", FILES, ids=ids(FILES))
def test_permissions_are_minimal(path):
    workflow = load(path)
    assert "permissions" in workflow, "set top-level permissions"
    top = workflow["permissions"] or {}
    assert top in ({}, {"contents": "read"}), top
    for name, job in workflow["jobs"].items():
        scopes = job.get("permissions", {}) or {}
        assert isinstance(scopes, dict), f"{name}: list scopes, not {scopes}"
        writes = {k: v for k, v in scopes.items() if v == "write"}
        if not writes:
            continue
        if (path.name, name) == ("ci.yml", "notebooks"):
            # Pushes the exported notebooks for Colab, after a push to main.
            assert writes == {"contents": "write"}, writes
            assert job["if"] == MAIN_PUSH, job.get("if")
            assert "notebooks\n" in job["steps"][-1]["run"]
            continue
        deploys = _deploys_pages(path, job)
        assert deploys, (
            f"{path.name}:{name} writes {writes} but does not deploy"
        )
        assert writes.items() <= DEPLOY_SCOPES.items(), writes


def _deploys_pages(path, job):
    uses = job.get("uses", "")
    if uses.endswith("/pages.yml"):
        return True
    return path.name == "pages.yml" and any(
        s.get("uses", "").startswith("actions/deploy-pages@")
        for s in job.get("steps", [])
    )


@pytest.mark.parametrize("path", FILES, ids=ids(FILES))
def test_pinned_actions_say_their_version(path):
    """zizmor checks the pin is a full SHA; a reader needs the version."""
    for number, line in enumerate(path.read_text("utf-8").splitlines(), 1):
        m = re.match(r"\s*(?:-\s+)?uses:\s*(\S+)(.*)$", line)
        if not m:
            continue
        ref, rest = m.groups()
        where = f"{path.name}:{number}"
        if ref.startswith(("./", "$/")):
            continue  # this repository, at the commit being run
        assert not ref.startswith("docker://"), f"{where}: {ref}"
        assert re.match(r"\s*#\s*v\d", rest), f"{where}: add '# vX.Y.Z'"


@pytest.mark.parametrize("path", FILES, ids=ids(FILES))
def test_jobs_have_timeouts(path):
    for name, job in load(path)["jobs"].items():
        if "uses" in job:
            continue  # a reusable-workflow call: its jobs set the limit
        assert "timeout-minutes" in job, f"{path.name}:{name}"


def test_ci_runs_make_test_and_uploads_the_site():
    ci = load(WORKFLOWS / "ci.yml")
    on = triggers(ci)
    assert set(on) == {"push", "pull_request"}
    assert on["push"] == {"branches": ["main"]}
    assert ci["concurrency"]["cancel-in-progress"] is True
    assert "${{ github.ref }}" in ci["concurrency"]["group"]
    test = ci["jobs"]["test"]
    assert test["runs-on"] == "ubuntu-latest"
    steps = test["steps"]
    runs = "\n".join(s.get("run", "") for s in steps)
    # the browser the tests drive (course/tools/chromium.py), by its package
    browser = re.escape(Path(EXECUTABLE).name)
    assert re.search(rf"apt-get install .*\b{browser}$", runs, re.M), runs
    assert re.search(r"^make test$", runs, re.MULTILINE)
    assert "3.11" in str(test.get("container", "")) + str(steps)
    upload = [
        s
        for s in steps
        if s.get("uses", "").startswith("actions/upload-pages-artifact@")
    ]
    assert len(upload) == 1 and upload[0]["with"]["path"].rstrip("/") == "site"
    assert steps[-1] is upload[0], "upload only what the tests passed"


def test_deploy_runs_only_after_tests_on_a_push_to_main():
    ci = load(WORKFLOWS / "ci.yml")
    deploy = ci["jobs"]["deploy"]
    assert deploy["needs"] in ("test", ["test"])
    condition = deploy["if"].replace(" ", "")
    assert "github.event_name=='push'" in condition
    assert "github.ref=='refs/heads/main'" in condition
    assert deploy["uses"].endswith(".github/workflows/pages.yml")
    assert deploy["permissions"] == DEPLOY_SCOPES
    pages = load(WORKFLOWS / "pages.yml")
    assert set(triggers(pages)) == {"workflow_call"}
    (job,) = pages["jobs"].values()
    assert job["permissions"] == DEPLOY_SCOPES
    assert job["environment"]["name"] == "github-pages"
    assert [s["uses"].split("@")[0] for s in job["steps"]] == [
        "actions/deploy-pages"
    ]


def test_gpu_workflow_cannot_be_started_by_a_fork_pull_request():
    gpu = load(WORKFLOWS / "gpu.yml")
    if "pull_request" not in triggers(gpu):
        return  # push / dispatch only: forks cannot trigger it
    # A job that needs a guarded job inherits its guard (it is skipped
    # when a job it needs was skipped) unless its condition overrides
    # that with always() or cancelled() or failure().
    for name, job in gpu["jobs"].items():
        condition = str(job.get("if", ""))
        inherits = job.get("needs") and not re.search(
            r"\b(always|cancelled|failure)\(", condition
        )
        assert FORK_GUARD.search(condition) or inherits, (
            f"gpu.yml:{name} runs on pull_request without checking "
            "github.event.pull_request.head.repo.full_name == "
            "github.repository"
        )


def test_gpu_workflow_runs_weekly_on_an_ephemeral_runner_in_a_container():
    gpu = load(WORKFLOWS / "gpu.yml")
    assert [c["cron"] for c in triggers(gpu)["schedule"]], "no schedule"
    for name, job in gpu["jobs"].items():
        assert {"self-hosted", "gpu", "ephemeral"} <= set(job["runs-on"]), name
        assert "--gpus all" in job["container"]["options"], name
        assert job["container"]["image"], name


def gpu_launches():
    """(step name, the training script's flags) for each torchrun launch
    of course.instruments.train in the GPU workflow."""
    for job in load(WORKFLOWS / "gpu.yml")["jobs"].values():
        for step in job["steps"]:
            command = step.get("run", "").replace("\\\n", " ")
            for line in command.splitlines():
                if "-m course.instruments.train" in line:
                    flags = line.split("-m course.instruments.train")[1]
                    flags = flags.split("|")[0].replace('"$OUT', '"out')
                    yield step["name"], shlex.split(flags)


def test_gpu_workflow_launches_the_modern_layouts():
    flags = [" ".join(f) for _, f in gpu_launches()]
    for needed in ("--cp 2", "--experts 8", "--pp-schedule zbv"):
        assert any(needed in f for f in flags), needed
    assert all("--check" in f for f in flags)


@pytest.mark.parametrize("gpus", [4, 8])
def test_gpu_workflow_flags_pass_the_scripts_checks(gpus):
    """What the runner would refuse before training, refused here: each
    launch's flags through the script's own parser, on 4 and 8 GPUs."""
    from course.instruments.train import parse

    for name, flags in gpu_launches():
        try:
            parse(flags, env={"WORLD_SIZE": str(gpus)})
        except SystemExit as refused:
            pytest.fail(f"gpu.yml: {name!r} on {gpus} GPUs: exit {refused}")


def test_ci_runs_the_engines_tests():
    steps = load(WORKFLOWS / "ci.yml")["jobs"]["test"]["steps"]
    runs = [s.get("run", "") for s in steps]
    assert "make test-engines" in runs
    assert "make test-engines" in (ROOT / ".ci" / "run").read_text()


def test_links_workflow_checks_external_links_on_github():
    """A scheduled strict build with mkdocs-htmlproofer-plugin switched
    on, which mkdocs.yml leaves off elsewhere (no network here)."""
    links = load(WORKFLOWS / "links.yml")
    assert set(triggers(links)) >= {"schedule", "workflow_dispatch"}
    (job,) = links["jobs"].values()
    assert job["runs-on"] == "ubuntu-latest"
    assert job["env"]["CHECK_LINKS"] == "true"
    assert any(s.get("run") == "make build" for s in job["steps"])
    text = (ROOT / "mkdocs.yml").read_text()
    proofer = re.search(r"- htmlproofer:\n((?:      .*\n)+)", text)
    assert proofer, "mkdocs.yml has no htmlproofer plugin"
    options = yaml.safe_load(proofer[1].replace("!ENV ", ""))
    assert options["enabled"] == ["CHECK_LINKS", False]
    assert options["validate_external_urls"] is True
    assert options["raise_error_after_finish"] is True
