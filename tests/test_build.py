"""What only a whole `mkdocs build --strict` shows, run on copies of the
working tree in a temporary directory (the checkout's site/ is never
touched): a failing block or a broken link stops it; the build needs
only the docs dependency group and gives, byte for byte, the site that
`make build` made in the checkout.
(What one page does with its blocks is tested in-process, in
tests/test_hooks.py.)"""

import difflib
import filecmp
from pathlib import Path

import pytest

from course import ROOT
from course.build import runner
from tests.project import build, copy_project

pytestmark = pytest.mark.slow
SITE = ROOT / "site"  # what `make build` made


def test_a_failing_block_or_notebook_or_a_broken_link_stops_the_build(
    tmp_path,
):
    project = copy_project(tmp_path, with_docs=False)
    docs = project / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\n[a page](page.md#nowhere)\n")
    (docs / "page.md").write_text("# Page\n")
    nav = "INHERIT: mkdocs.yml\nnav: [index.md, page.md]\n"
    (project / "test.yml").write_text(nav)
    done = build(project, "test.yml")
    assert done.returncode != 0
    assert "'page.md#nowhere'" in done.stderr and "nowhere" in done.stderr
    (docs / "index.md").write_text("# Home\n")
    (docs / "page.md").write_text(
        '# Page\n\n```python exec="on"\n1 / 0\n```\n'
    )
    done = build(project, "test.yml")
    assert done.returncode != 0
    assert "docs/page.md:3: code block raised ZeroDivisionError" in done.stderr
    assert not (project / "site" / "page" / "index.html").exists()
    (docs / "page.md").write_text("# Page\n")
    (docs / "exercises").mkdir()  # a notebook
    (docs / "exercises" / "nb.py").write_text("# %%\nprint(1 / 0)\n")
    (project / "test.yml").write_text(nav.replace("]", ", exercises/nb.py]"))
    done = build(project, "test.yml")
    assert done.returncode != 0
    assert "Error reading page 'exercises/nb.py'" in done.stderr
    assert "ZeroDivisionError" in done.stderr
    assert not (project / "site" / "exercises" / "nb" / "index.html").exists()


def differences(left, right):
    """Files that differ between two site folders, with a short diff."""
    # make pdf prints print_page/ to course.pdf after the build, and
    # removes it
    ignore = [*filecmp.DEFAULT_IGNORES, "course.pdf", "print_page"]
    found, stack = [], [(filecmp.dircmp(left, right, ignore=ignore), Path())]
    while stack:
        cmp, rel = stack.pop()
        found += [
            f"{rel / n}: only in one build"
            for n in cmp.left_only + cmp.right_only
        ]
        _, mismatch, errors = filecmp.cmpfiles(
            cmp.left, cmp.right, cmp.common_files, shallow=False
        )
        for name in mismatch + errors:
            a, b = (Path(d, name).read_bytes() for d in (cmp.left, cmp.right))
            try:
                diff = difflib.unified_diff(
                    a.decode().splitlines(), b.decode().splitlines(), n=0
                )
                found.append(f"{rel / name}:\n" + "\n".join(list(diff)[2:8]))
            except UnicodeDecodeError:
                found.append(f"{rel / name}: (binary)")
        stack += [(c, rel / s) for s, c in cmp.subdirs.items()]
    return sorted(found)


def test_a_fresh_build_needs_only_the_docs_group_and_is_make_builds_site(
    tmp_path,
):
    """A copy of the working tree built afresh (CI=true: no cache) with
    the train and test groups unimportable gives, file for file, the
    site/ that `make build` made here, at another path and with the
    cache on: no output depends on the time, the path, the run or the
    cache; and with CI=true it keeps nothing in .cache/."""
    name, _ = runner.archive()
    if not (SITE / runner.RUN_DIR / name).is_file():
        pytest.fail(f"{SITE} is missing or stale: run `make build` first")
    project = copy_project(tmp_path)
    done = build(project)
    assert done.returncode == 0, done.stderr[-3000:]
    assert len(list((project / "site").rglob("*.html"))) > 15
    assert not (project / ".cache").exists(), "CI=true kept something"
    found = differences(SITE, project / "site")
    assert not found, (
        "the fresh build differs from site/ (run `make build` again after "
        "an edit):\n" + "\n\n".join(found)
    )
