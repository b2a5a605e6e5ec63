"""The site's configuration keeps its promises: strict, offline, complete."""

import re

import yaml

from course.fences import ROOT, SNIPPETS_CONFIG


class _Loader(yaml.SafeLoader):
    """mkdocs.yml uses !!python/name and !ENV tags: read them as text."""


_Loader.add_multi_constructor(
    "tag:yaml.org,2002:python/", lambda loader, suffix, node: suffix
)
_Loader.add_multi_constructor(
    "!",
    lambda loader, suffix, node: (
        loader.construct_sequence(node)
        if isinstance(node, yaml.SequenceNode)
        else loader.construct_scalar(node)
    ),
)

CONFIG = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=_Loader)


def extension(name):
    for entry in CONFIG["markdown_extensions"]:
        if isinstance(entry, dict) and name in entry:
            return entry[name]
        if entry == name:
            return {}
    raise AssertionError(f"{name} is not enabled in mkdocs.yml")


def nav_pages(nav):
    for item in nav:
        value = next(iter(item.values())) if isinstance(item, dict) else item
        if isinstance(value, list):
            yield from nav_pages(value)
        else:
            yield value


def test_build_is_strict_and_makes_no_third_party_requests():
    assert CONFIG["strict"] is True
    assert CONFIG["theme"]["font"] is False  # no Google Fonts
    text = (ROOT / "mkdocs.yml").read_text()
    for cdn in ("cdn.", "unpkg", "jsdelivr", "googleapis", "mathjax", "katex"):
        assert cdn not in text.lower(), f"mkdocs.yml mentions {cdn}"


def test_snippet_includes_are_resolved_like_the_build():
    """The tests expand `--8<--` lines with course.fences.SNIPPETS_CONFIG;
    it must be the configuration the build uses."""
    assert extension("pymdownx.snippets") == SNIPPETS_CONFIG


def test_python_fences_run_through_the_strict_formatter():
    fences = extension("pymdownx.superfences")["custom_fences"]
    by_name = {f["name"]: f for f in fences}
    for language in ("python", "pycon"):
        assert by_name[language]["format"] == "name:course.execute.formatter"


def test_every_page_is_in_the_nav():
    in_nav = set(nav_pages(CONFIG["nav"]))
    docs = ROOT / "docs"
    pages = {
        p.relative_to(docs).as_posix()
        for p in [*docs.rglob("*.md"), *docs.glob("exercises/*.py")]
    }
    assert pages - in_nav == set(), "pages missing from nav"
    assert {p for p in in_nav if p.endswith((".md", ".py"))} <= pages


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
