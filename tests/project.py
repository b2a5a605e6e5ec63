"""The project copied for a test that builds it or runs its tests, and
the processes a run may have left in it (tests/test_build.py,
tests/test_hangs.py)."""

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from course import ROOT

# Modules of the train and test groups: the build must not need them.
NOT_DOCS = ("torch", "sybil", "pytest", "hypothesis", "playwright", "xdist")


def build(project, config="mkdocs.yml", timeout=300, env=None):
    """`mkdocs build --strict` of `project` as CI builds it (no cache),
    with the train and test groups unimportable in every process it
    starts; `env` adds variables."""
    hidden = project / ".not-docs"  # modules that shadow those groups'
    hidden.mkdir(exist_ok=True)
    for name in NOT_DOCS:
        (hidden / f"{name}.py").write_text(
            f"raise ImportError('{name} is not in the docs group')\n"
        )
    path = os.pathsep.join([str(hidden), str(project)])
    env = {**os.environ, "PYTHONPATH": path, "CI": "true", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict"]
        + ["-f", config, "-d", "site"],
        cwd=project,
        env=env | {"NO_MKDOCS_2_WARNING": "1", "SOURCE_DATE_EPOCH": epoch()},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def copy_project(dest, with_docs=True):
    """The working tree as git sees it (tracked and untracked files,
    without the ignored ones), into `dest`."""
    listed = subprocess.run(
        [
            "git",
            "-c",
            f"safe.directory={ROOT}",
            "ls-files",
            "-co",
            "--exclude-standard",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    for name in listed:
        if (ROOT / name).is_file() and (
            with_docs or not name.startswith("docs/")
        ):
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)
    return dest


def epoch():
    """The Makefile's SOURCE_DATE_EPOCH: the last commit's time."""
    if "SOURCE_DATE_EPOCH" in os.environ:
        return os.environ["SOURCE_DATE_EPOCH"]
    return subprocess.run(
        ["git", "-c", f"safe.directory={ROOT}", "log", "-1", "--format=%ct"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def processes_in(folder, grace_s=3.0):
    """'PID COMMAND' of each process but this one whose working
    directory is in `folder`, once `grace_s` seconds have not seen them
    all end."""
    folder = Path(folder).resolve()
    deadline = time.monotonic() + grace_s
    while True:
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                cwd = (entry / "cwd").resolve(strict=True)
                command = (entry / "cmdline").read_bytes()
            except (OSError, RuntimeError):  # not a process, gone, not ours
                continue
            if cwd == folder or folder in cwd.parents:
                shown = command.replace(b"\0", b" ").decode(errors="replace")
                found.append(f"{entry.name} {shown.strip()}")
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.1)
