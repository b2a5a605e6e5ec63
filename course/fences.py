"""The one way this site finds the fenced blocks of a page.

sybil's Markdown fence lexer, with an info pattern that takes the whole
info string (its stock Python parser wants the language alone and skips
```python exec="on"``` without a word). Used by the build, to name the
line of a failing block (course/execute.py), by the docs tests
(tests/docblocks.py) and by the prose-numbers check.
"""

import functools
import re
from pathlib import Path
from typing import NamedTuple

import markdown
from mkdocs.utils.yaml import yaml_load
from sybil import Document
from sybil.parsers.markdown.lexers import RawFencedCodeBlockLexer

ROOT = Path(__file__).resolve().parent.parent
PYTHON = {"python", "py", "pycon"}
LEXER = RawFencedCodeBlockLexer(
    info_pattern=re.compile(
        r"[ \t]*\.?(?P<language>[\w#.+-]*)[ \t]*(?P<info>[^\n]*)$\n", re.M
    )
)


class Fence(NamedTuple):
    start: int  # offset of the opening fence's line
    end: int  # offset just after the closing fence
    line: int  # 1-based line of the opening fence
    language: str
    info: str  # the info string after the language: the fence's options
    source: str  # the body, its indentation removed


def fences(text):
    """The fenced blocks of a Markdown text, in order. A fence inside
    another one is text, as it is to Markdown, and is left out."""
    found = []
    for region in sorted(LEXER(Document(text, "")), key=lambda r: r.start):
        if found and region.start < found[-1].end:
            continue
        lexemes = region.lexemes
        line = text.count("\n", 0, region.start) + 1
        found.append(
            Fence(
                region.start,
                region.end,
                line,
                lexemes["language"],
                lexemes["info"],
                str(lexemes["source"]),
            )
        )
    return found


@functools.cache
def snippets_options():
    """pymdownx.snippets' options in mkdocs.yml, read by MkDocs' own YAML
    loader. (load_config would also load the theme and set up every
    extension: material's emoji index alone takes a tenth of a second.)"""
    with open(ROOT / "mkdocs.yml", "rb") as file:
        for item in yaml_load(file)["markdown_extensions"]:
            if isinstance(item, dict) and "pymdownx.snippets" in item:
                return item["pymdownx.snippets"] or {}
    raise LookupError("mkdocs.yml does not enable pymdownx.snippets")


def expand(source, options=None, folder=ROOT):
    """Resolve `--8<--` lines as pymdownx.snippets does with `options`
    (default: mkdocs.yml's), its base paths taken under `folder`."""
    options = dict(snippets_options() if options is None else options)
    options["base_path"] = [
        str(folder / path) for path in options.get("base_path", ["."])
    ]
    md = markdown.Markdown(
        extensions=["pymdownx.snippets"],
        extension_configs={"pymdownx.snippets": options},
    )
    return "\n".join(md.preprocessors["snippet"].run(source.split("\n")))
