"""The strict build: a failing or hanging code block stops it, and two
clean builds of the real site are byte for byte the same.

Every build here runs `mkdocs build --strict` on a copy of the working
tree in a temporary directory (with its docs/, or with a few test pages
instead), so the checkout's site/ is never touched.
"""

import difflib
import filecmp
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from course.fences import ROOT

MKDOCS = Path(sys.executable).parent / "mkdocs"
STARTUP_S = 60  # generous: importing mkdocs, material and markdown-exec
# A fixed build date: mkdocs writes it into sitemap.xml (<lastmod>) and
# into the gzip header of sitemap.xml.gz, and reads it from here.
SOURCE_DATE_EPOCH = "1764374400"  # 2025-11-29 00:00 UTC


def project_files():
    """The working tree as git sees it: tracked files plus untracked
    ones that are not ignored (no .venv, site/, .cache/ or .git)."""
    listed = subprocess.run(
        # safe.directory: in a CI container the checkout belongs to
        # another user, and git would refuse to read it.
        [
            "git",
            "-c",
            f"safe.directory={ROOT}",
            "ls-files",
            "--cached",
            "--others",
            "--exclude-standard",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    return [p for p in listed if (ROOT / p).is_file()]


def copy_project(dest, with_docs):
    """A copy of the working tree; without docs/ if `with_docs` is off."""
    for name in project_files():
        if not with_docs and name.startswith("docs/"):
            continue
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)
    return dest


def mkdocs_build(project, config="mkdocs.yml", env=None, timeout=None):
    """Run a strict build of `project`; its own course/ and snippets/
    come first on sys.path. Returns (process, seconds)."""
    full_env = {
        **os.environ,
        "PYTHONPATH": str(project),
        "NO_MKDOCS_2_WARNING": "1",
        **(env or {}),
    }
    full_env = {k: v for k, v in full_env.items() if v is not None}
    started = time.monotonic()
    result = subprocess.run(
        [str(MKDOCS), "build", "--strict", "-f", config, "-d", "site"],
        cwd=project,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return result, time.monotonic() - started


@pytest.fixture
def test_site(tmp_path):
    """The project's build config with docs/ replaced by test pages."""
    project = copy_project(tmp_path / "project", with_docs=False)
    (project / "docs").mkdir()
    (project / "docs" / "index.md").write_text("# Home\n\nA test site.\n")

    def build(pages, env=None, timeout=STARTUP_S):
        nav = ["index.md"]
        for name, text in pages.items():
            (project / "docs" / name).write_text(text, encoding="utf-8")
            nav.append(name)
        # Everything from the real mkdocs.yml; only the pages differ.
        (project / "test.yml").write_text(
            "INHERIT: mkdocs.yml\nnav:\n" + "".join(f"  - {n}\n" for n in nav)
        )
        result, seconds = mkdocs_build(project, "test.yml", env, timeout)
        return result, seconds, project / "site"

    return build


def tracebacks_in(site):
    if not site.exists():
        return []
    return [
        p.relative_to(site).as_posix()
        for p in site.rglob("*.html")
        if "Traceback (most recent call last)" in p.read_text("utf-8")
        or "ZeroDivisionError" in p.read_text("utf-8")
    ]


PAGE_BEFORE = "# A page\n\nSome prose before the code.\n\n"
RAISING = {
    "python": (
        '```python exec="on" session="boom"\ntotal = 1\ntotal / 0\n```\n',
        "ZeroDivisionError: division by zero",
    ),
    "pycon": (
        '```pycon exec="on" session="boom"\n'
        ">>> total = 1\n"
        ">>> total / 0\n"
        "```\n",
        "ZeroDivisionError: division by zero",
    ),
    "included lab": (
        '```python exec="on" session="boom"\n'
        '--8<-- "snippets/ddp/allreduce.py:model"\n'
        "\n"
        "allreduce_bytes(0)\n"
        "```\n",
        "ValueError: params must be >",
    ),
}


@pytest.mark.parametrize("kind", list(RAISING))
def test_a_raising_block_stops_the_build(test_site, kind):
    fence, last_line = RAISING[kind]
    fine = '```python exec="on" session="fine"\nprint("fine")\n```\n'
    result, _, site = test_site(
        {
            "fine.md": PAGE_BEFORE + fine,
            "boom.md": PAGE_BEFORE + fence,
        }
    )
    log = result.stdout + result.stderr
    assert result.returncode != 0, f"the build passed:\n{log}"
    fence_line = PAGE_BEFORE.count("\n") + 1
    assert f"docs/boom.md:{fence_line}: code block raised {last_line}" in log
    assert not (site / "boom" / "index.html").exists()
    assert tracebacks_in(site) == []


def test_a_hanging_block_is_stopped_by_the_time_limit(test_site):
    limit = 3
    hang = (
        '```python exec="on" session="hang"\n'
        "import time\n"
        "while True:\n"
        "    time.sleep(1)\n"
        "```\n"
    )
    result, seconds, site = test_site(
        {"hang.md": PAGE_BEFORE + hang},
        env={"SNIPPET_TIMEOUT": str(limit)},
        timeout=limit + STARTUP_S,  # TimeoutExpired fails the test
    )
    log = result.stdout + result.stderr
    print(f"\nhanging block stopped after {seconds:.1f} s (limit {limit} s)")
    assert result.returncode != 0, f"the build passed:\n{log}"
    line = PAGE_BEFORE.count("\n") + 1
    assert (
        f"docs/hang.md:{line}: code block still running after {limit} s" in log
    ), log
    assert tracebacks_in(site) == []


def test_a_fence_can_set_its_own_time_limit(test_site):
    slow = (
        '```python exec="on" timeout="2"\nimport time\ntime.sleep(3600)\n```\n'
    )
    result, _, _ = test_site(
        {"slow.md": PAGE_BEFORE + slow},
        env={"SNIPPET_TIMEOUT": None},
        timeout=2 + STARTUP_S,
    )
    log = result.stdout + result.stderr
    assert result.returncode != 0, f"the build passed:\n{log}"
    assert "code block still running after 2 s" in log, log


def test_a_time_limit_that_is_not_a_number_stops_the_build(test_site):
    bad = '```python exec="on" timeout="soon"\nprint(1)\n```\n'
    result, _, _ = test_site({"bad.md": PAGE_BEFORE + bad})
    log = result.stdout + result.stderr
    assert result.returncode != 0, f"the build passed:\n{log}"
    line = PAGE_BEFORE.count("\n") + 1
    assert (
        f"docs/bad.md:{line}: timeout (or SNIPPET_TIMEOUT) must be a "
        "positive number of seconds, got 'soon'"
    ) in log, log


FIGURE = (
    '<figure><svg viewBox="0 0 9 9"><text>tick label 1e3</text></svg>'
    "<figcaption>A caption to find</figcaption></figure>\n"
)


def test_a_passing_block_builds(test_site):
    """The control: the same test site builds when nothing fails. The
    search index (course/search.py) holds its code's words and the
    figure's caption, not the SVG's text; the page keeps both whole."""
    ok = '```python exec="on" session="ok"\nprint(6 * 7)\n```\n'
    code = "```python\nsquare = lambda side: side * side\n```\n"
    result, _, site = test_site({"ok.md": PAGE_BEFORE + ok + code + FIGURE})
    assert result.returncode == 0, result.stdout + result.stderr
    html = (site / "ok" / "index.html").read_text("utf-8")
    assert "42" in html
    assert '<span class="n">square</span>' in html and "tick label" in html
    index = (site / "search" / "search_index.json").read_text("utf-8")
    assert "square = lambda side: side * side" in index
    assert "A caption to find" in index and "tick label" not in index


# --- reproducibility -------------------------------------------------------


def differences(left, right):
    """Files that differ between two site dirs, with a short diff each."""
    found = []
    compare = filecmp.dircmp(left, right)
    stack = [(compare, Path())]
    while stack:
        cmp, rel = stack.pop()
        for name in cmp.left_only + cmp.right_only:
            found.append(f"{rel / name}: only in one build")
        _, mismatch, errors = filecmp.cmpfiles(
            cmp.left, cmp.right, cmp.common_files, shallow=False
        )
        for name in mismatch + errors:
            a = (Path(cmp.left) / name).read_bytes()
            b = (Path(cmp.right) / name).read_bytes()
            try:
                diff = difflib.unified_diff(
                    a.decode().splitlines(), b.decode().splitlines(), n=0
                )
                excerpt = "\n".join(ln[:300] for ln in list(diff)[2:8])
            except UnicodeDecodeError:
                excerpt = "(binary)"
            found.append(f"{rel / name}:\n{excerpt}")
        for sub, sub_cmp in cmp.subdirs.items():
            stack.append((sub_cmp, rel / sub))
    return sorted(found)


def test_two_clean_builds_are_identical(tmp_path):
    """One snapshot of the project, copied to two different directories,
    each built into a fresh site/: every file must match byte for byte,
    so no output depends on the time, the machine or the path.

    The notebooks are executed and rendered fresh in both builds, and
    the charts drawn fresh (their caches are left out). The torchrun
    measurement is read from the checkout's cache in .cache/torchrun
    (CI unset), to keep this test short: what that block prints is
    compared with its recorded output by tests/test_docs.py, fresh in
    CI, and tests/test_train.py runs the script itself.
    """
    env = {"SOURCE_DATE_EPOCH": SOURCE_DATE_EPOCH, "CI": None}
    first = copy_project(tmp_path / "first", with_docs=True)
    if (ROOT / ".cache" / "torchrun").is_dir():
        shutil.copytree(
            ROOT / ".cache" / "torchrun", first / ".cache" / "torchrun"
        )
    second = tmp_path / "second"
    sites = []
    for project in (first, second):
        if project is second:  # the same snapshot and torchrun cache
            shutil.copytree(
                first,
                second,
                # both builds draw their own charts and run notebooks
                ignore=shutil.ignore_patterns(
                    "site", "mkdocs-jupyter", "figures"
                ),
            )
        result, seconds = mkdocs_build(project, env=env)
        assert result.returncode == 0, result.stdout + result.stderr
        print(f"\n{project.name} build: {seconds:.1f} s")
        sites.append(project / "site")
    pages = list(sites[0].rglob("*.html"))
    assert len(pages) > 10, "the site has hardly any pages"
    found = differences(*sites)
    assert not found, "builds differ:\n" + "\n\n".join(found)
    kinds = sorted({p.suffix for p in sites[0].rglob("*") if p.is_file()})
    print(f"identical: {len(pages)} HTML pages; file types {kinds}")
