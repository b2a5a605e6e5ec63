"""course/cache.py: keys follow the imports of what ran, so an edited
lab misses the cache; CI=true turns it off."""

import shutil
from pathlib import Path

import pytest

from course import cache
from course.fences import ROOT


@pytest.fixture
def tree(tmp_path, monkeypatch):
    """A small project: `write("snippets/a.py", text)` adds a file."""
    monkeypatch.setattr(cache, "ROOT", tmp_path)
    monkeypatch.setattr(cache, "STORE", tmp_path / ".cache")
    monkeypatch.delenv("CI", raising=False)

    def write(rel, text):
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    write.root = tmp_path
    return write


def test_closure_follows_every_kind_of_import(tree):
    tree("course/__init__.py", "")
    tree("course/page.py", "from snippets.pkg import sub\nimport json\n")
    tree("snippets/pkg/__init__.py", "from . import helper\n")
    tree("snippets/pkg/sub.py", "def f():\n    from .deep.leaf import x\n")
    tree("snippets/pkg/helper.py", "")
    tree("snippets/pkg/deep/leaf.py", "from snippets import top\n")
    tree("snippets/top.py", "import course.page\n")  # a cycle
    tree("snippets/unused.py", "")
    assert list(cache.closure("course.page")) == [
        "course/__init__.py",
        "course/page.py",
        "snippets/pkg/__init__.py",
        "snippets/pkg/deep/leaf.py",
        "snippets/pkg/helper.py",
        "snippets/pkg/sub.py",
        "snippets/top.py",
    ]


def test_closure_starts_from_files_too(tree):
    notebook = tree("docs/nb.py", "# %%\nfrom snippets.lab import f\n")
    tree("snippets/lab.py", "f = 1\n")
    assert list(cache.closure(notebook)) == ["docs/nb.py", "snippets/lab.py"]


def test_closure_refuses_a_root_that_is_not_ours(tree):
    with pytest.raises(ValueError, match="'json' is not a module"):
        cache.closure("json")


def test_the_key_changes_with_an_imported_lab_only(tree):
    tree("snippets/chart.py", "from snippets.lab import f\n")
    lab = tree("snippets/lab.py", "from snippets.deep import g\nf = 1\n")
    deep = tree("snippets/deep.py", "g = 1\n")
    other = tree("snippets/other.py", "h = 1\n")
    first = cache.key("snippets.chart")
    other.write_text("h = 2\n")
    assert cache.key("snippets.chart") == first
    for path in (lab, deep):
        path.write_text(path.read_text() + "# edited\n")
        assert cache.key("snippets.chart") != first, path
        first = cache.key("snippets.chart")
    assert cache.key("snippets.chart", args=["x"]) != first
    assert cache.key("snippets.chart", packages=["pytest"]) != first


def test_editing_a_lab_the_torchrun_run_imports_changes_its_key(
    tmp_path, monkeypatch
):
    """The torchrun page's measurement (course/measure.py) launches
    train.py, which reaches the memory lab through report.py: the key
    of that run must see the lab."""
    for folder in ("course", "snippets"):
        shutil.copytree(
            ROOT / folder,
            tmp_path / folder,
            ignore=shutil.ignore_patterns("__pycache__"),
        )
    monkeypatch.setattr(cache, "ROOT", tmp_path)
    roots = ["snippets.torchrun.train", "course.measure"]
    args = ["--steps=3"]
    first = cache.key(*roots, args=args, packages=["torch"])
    assert "snippets/zero/memory.py" in cache.closure(*roots)
    lab = tmp_path / "snippets" / "zero" / "memory.py"
    lab.write_text(lab.read_text() + "\n# edited\n")
    assert cache.key(*roots, args=args, packages=["torch"]) != first


def test_cached_computes_once_per_key_and_keeps_one_value(tree):
    lab = tree("snippets/lab.py", "x = 1\n")
    calls = []

    def compute(value):
        def run():
            calls.append(value)
            return {"value": value}

        return run

    def get(label, value):
        return cache.cached(
            "test", label, compute(value), roots=["snippets.lab"]
        )

    assert get("a", 1) == {"value": 1}
    assert get("a", 2) == {"value": 1}  # from the cache
    assert get("a-b", 3) == {"value": 3}  # another label
    lab.write_text("x = 2\n")
    assert get("a", 4) == {"value": 4}
    assert calls == [1, 3, 4]
    folder = tree.root / ".cache" / "test"
    names = sorted(p.name.rsplit("-", 1)[0] for p in folder.iterdir())
    assert names == ["a", "a-b"], "the stale value of 'a' is still there"


@pytest.mark.parametrize("ci", ["true", "1", "YES"])
def test_ci_turns_the_cache_off(tree, monkeypatch, ci):
    tree("snippets/lab.py", "x = 1\n")
    monkeypatch.setenv("CI", ci)
    values = iter(range(10))
    for expected in (0, 1):
        got = cache.cached(
            "test", "a", lambda: next(values), roots=["snippets.lab"]
        )
        assert got == expected
    assert not (tree.root / ".cache").exists()


def test_directory_is_named_by_key_and_drops_older_ones(tree):
    lab = tree("snippets/lab.py", "x = 1\n")
    first = Path(cache.directory("tool", roots=["snippets.lab"]))
    first.mkdir(parents=True)
    assert cache.directory("tool", roots=["snippets.lab"]) == str(first)
    lab.write_text("x = 2\n")
    second = Path(cache.directory("tool", roots=["snippets.lab"]))
    assert second.parent == first.parent and second != first
    assert not first.exists(), "the stale folder is still there"
