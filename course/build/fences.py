"""The fenced blocks of a page, found one way for the whole site.

The build (course/build/hooks.py) notes the line of every executed block, the
docs tests (tests/docblocks.py) run every Python block, and the
prose-numbers check blanks code out of the prose: all three read pages
with `fences`. A fence inside a longer fence is text, as it is to
Markdown. `expand` resolves `--8<--` lines as the build does.
"""

import functools
import re
from typing import NamedTuple

import markdown
from mkdocs.utils.yaml import yaml_load

from course import ROOT

PYTHON = {"python", "py", "pycon"}
OPENING = re.compile(
    r"^(?P<indent>[ \t]*)(?P<ticks>`{3,}|~{3,})[ \t]*\.?"
    r"(?P<language>[\w#.+-]*)[ \t]*(?P<info>[^\n`]*?)[ \t]*$",
    re.M,
)


class Fence(NamedTuple):
    start: int  # offset of the opening fence's line
    end: int  # offset just after the closing fence
    line: int  # 1-based line of the opening fence
    indent: str  # the opening fence's indentation
    language: str
    info: str  # the options after the language
    source: str  # the body, its indentation removed

    @property
    def executed(self):
        return self.language in PYTHON and re.search(
            r'\bexec="(on|true|yes|1)"', self.info
        )


def fences(text):
    """The fenced blocks of a Markdown text, in order."""
    found, at = [], 0
    while opening := OPENING.search(text, at):
        ticks = opening["ticks"]
        closing = re.compile(
            rf"^[ \t]*{re.escape(ticks[0])}{{{len(ticks)},}}[ \t]*$", re.M
        )
        close = closing.search(text, opening.end())
        end = close.end() if close else len(text)
        body = text[opening.end() + 1 : close.start() if close else end]
        indent = opening["indent"]
        lines = [ln.removeprefix(indent) for ln in body.split("\n")]
        found.append(
            Fence(
                start=opening.start(),
                end=end,
                line=text.count("\n", 0, opening.start()) + 1,
                indent=indent,
                language=opening["language"],
                info=opening["info"],
                source="\n".join(lines).removesuffix("\n"),
            )
        )
        at = end
    return found


def number_lines(text, first_line=1):
    """`text` with line="N" added to each executed fence, N counted from
    `first_line`, so that a failing block can say where it is."""
    parts, done = [], 0
    for fence in fences(text):
        if fence.executed:
            eol = text.find("\n", fence.start)
            eol = len(text) if eol < 0 else eol
            line = fence.line + first_line - 1
            parts += [text[done:eol], f' line="{line}"']
            done = eol
    return "".join(parts) + text[done:]


@functools.cache
def snippets_options():
    """pymdownx.snippets' options in mkdocs.yml, read by MkDocs' own YAML
    loader (load_config would set up every extension and the theme)."""
    with open(ROOT / "mkdocs.yml", "rb") as file:
        for item in yaml_load(file)["markdown_extensions"]:
            if isinstance(item, dict) and "pymdownx.snippets" in item:
                return item["pymdownx.snippets"] or {}
    raise LookupError("mkdocs.yml does not enable pymdownx.snippets")


def expand(source, folder=ROOT):
    """Resolve `--8<--` lines as pymdownx.snippets does in the build."""
    options = dict(snippets_options())
    options["base_path"] = [str(folder / p) for p in options["base_path"]]
    md = markdown.Markdown(
        extensions=["pymdownx.snippets"],
        extension_configs={"pymdownx.snippets": options},
    )
    return "\n".join(md.preprocessors["snippet"].run(source.split("\n")))
