"""The site's configuration keeps its promises: strict, offline, complete."""

import ast
import graphlib
import re

from mkdocs.config import load_config

from course import ROOT
from tests.site_text import nav_files

CONFIG = load_config(str(ROOT / "mkdocs.yml"))


def test_build_is_strict_and_makes_no_third_party_requests():
    assert CONFIG.strict is True
    assert CONFIG.theme["font"] is False  # no Google Fonts
    text = (ROOT / "mkdocs.yml").read_text()
    for cdn in ("cdn.", "unpkg", "jsdelivr", "googleapis", "mathjax", "katex"):
        assert cdn not in text.lower(), f"mkdocs.yml mentions {cdn}"


def test_python_fences_run_through_the_build_and_links_are_checked():
    """course/build/hooks.py, the one hook, runs the Python fences; MkDocs
    itself stops the strict build on a broken link or anchor."""
    assert list(CONFIG.hooks) == ["course/build/hooks.py"]
    config = CONFIG.plugins.on_config(load_config(str(ROOT / "mkdocs.yml")))
    fences = config.mdx_configs["pymdownx.superfences"]["custom_fences"]
    by_name = {fence["name"]: fence["format"] for fence in fences}
    for language in ("python", "py", "pycon"):
        assert getattr(by_name[language], "__self__", None) is not None
    links = CONFIG.validation.links
    assert links.not_found == links.anchors == links.absolute_links == 30


def test_every_page_is_in_the_nav():
    in_nav = set(nav_files(CONFIG.nav))
    docs = ROOT / "docs"
    pages = {
        p.relative_to(docs).as_posix()
        for p in [*docs.rglob("*.md"), *docs.glob("exercises/*.py")]
    }
    # (a nav entry with no page is a warning, so the strict build fails)
    assert pages - in_nav == set(), "pages missing from nav"


def test_no_orphan_snippets():
    """Every file in snippets/ is shown on a page, run from one, or
    imported by a file that is."""
    docs = "\n".join(
        p.read_text()
        for p in (ROOT / "docs").rglob("*")
        if p.is_file() and p.suffix in {".md", ".py"}
    )
    files = sorted((ROOT / "snippets").rglob("*.py"))

    def mentioned(path, text):
        rel = path.relative_to(ROOT)
        module = ".".join(rel.with_suffix("").parts)
        package, name = module.rsplit(".", 1)
        return (
            rel.as_posix() in text
            or re.search(rf"\b{re.escape(module)}\b", text)
            or re.search(
                rf"from ({re.escape(package)}|\.) import [^\n]*\b{name}\b",
                text,
            )
            or re.search(rf"from \.{name} import", text)
        )

    used = {p for p in files if mentioned(p, docs)}
    changed = True
    while changed:
        code = "\n".join(p.read_text() for p in used)
        new = {p for p in files if p not in used and mentioned(p, code)}
        changed = bool(new)
        used |= new
    orphans = [
        p.relative_to(ROOT).as_posix()
        for p in files
        if p not in used and p.name != "__init__.py"
    ]
    assert not orphans, f"snippet files no page uses: {orphans}"


def test_the_build_code_imports_no_cycle():
    """course/ modules import each other without a cycle, counting the
    imports inside functions too (graphlib names the cycle if any).
    Every import names its module: ruff refuses relative ones (TID252)."""
    graph = {}
    for path in (ROOT / "course").rglob("*.py"):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        graph[name.removesuffix(".__init__")] = wanted = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "course":
                wanted |= {f"course.{a.name}" for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                wanted.add(node.module)
            elif isinstance(node, ast.Import):
                wanted |= {a.name for a in node.names}
    ours = {
        k: {m for m in v if m in graph and m != k} for k, v in graph.items()
    }
    assert len(ours) > 10
    graphlib.TopologicalSorter(ours).prepare()  # CycleError names it


def test_pages_hold_no_control_characters():
    """A "\\b" written through a Python string once left a backspace in
    a formula: the page showed a broken glyph."""
    control = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
    for path in sorted((ROOT / "docs").rglob("*.md")) + sorted(
        (ROOT / "docs" / "exercises").glob("*.py")
    ):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            assert not control.search(line), f"{path.relative_to(ROOT)}:{n}"
