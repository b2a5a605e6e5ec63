"""Trace every number in a page's prose to the code or output it quotes.

Prose is what a reader reads as text: everything outside fenced blocks,
inline code, formulas and HTML comments. Each number there must equal,
at the precision it is written with, a number in that page's code
(included snippet files count) or in its recorded outputs. A percentage
may also quote a fraction (40% for 0.40). Numbers that are not outputs,
such as a year, are listed in the page's front matter:

    ---
    prose_numbers: [2021]
    ---

Change what a lab prints, and the sentence quoting the old figure fails
until it is updated.
"""

import math
import re
from dataclasses import dataclass

from mkdocs.utils.meta import get_data

from course.build.fences import PYTHON, expand, fences

COMMENT = re.compile(r"<!--(.*?)-->", re.DOTALL)
INLINE_CODE = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)", re.DOTALL)
LINK_TARGET = re.compile(r"\]\([^)]*\)|\]\[[^\]]*\]|^\s*\[[^\]]+\]:.*$", re.M)
HTML_TAG = re.compile(r"<[^>]+>")
FOOTNOTE_REF = re.compile(r"\[\^[^\]]+\]")
LIST_MARKER = re.compile(r"^(\s*)\d+[.)]\s", re.M)
ATTR_LIST = re.compile(r"\{[:#.][^}]*\}")
PROSE_NUMBER = re.compile(
    r"(?<![\w.\-/^=])"
    r"(?P<number>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
    r"(?P<suffix>%|x|×)?"
    r"(?![\w]|\.\d)"
    r"(?P<scale>\s+(?:thousand|million|billion|trillion)\b)?"
)
SCALE = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}
SOURCE_NUMBER = re.compile(
    r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d[\d_]*(?:\.\d+)?(?:[eE][+-]?\d+)?"
)


@dataclass
class Figure:
    text: str
    line: int
    value: float
    decimals: int
    percent: bool
    scale: float = 1.0


def split_page(text):
    """(front matter, prose with code blanked, list of source texts)."""
    body, meta = get_data(text)  # as MkDocs reads it
    text = "\n" * (text.count("\n") - body.count("\n")) + body
    sources, prose, done = [], [], 0
    for fence in fences(text):
        if fence.language != "math":
            code = fence.source
            sources.append(expand(code) if fence.language in PYTHON else code)
        blank = "\n" * text.count("\n", fence.start, fence.end)
        prose += [text[done : fence.start], blank]
        done = fence.end
    prose = "".join(prose) + text[done:]

    def keep_comment(match):
        body = match.group(1)
        if body.startswith(" output"):
            sources.append(body)
        return "\n" * body.count("\n")

    prose = COMMENT.sub(keep_comment, prose)
    for pattern in (INLINE_CODE, LINK_TARGET, FOOTNOTE_REF, ATTR_LIST):
        prose = pattern.sub(lambda m: "\n" * m.group(0).count("\n"), prose)
    prose = HTML_TAG.sub(" ", prose)
    prose = LIST_MARKER.sub(r"\1", prose)
    return meta, prose, sources


def prose_figures(prose):
    for lineno, line in enumerate(prose.split("\n"), start=1):
        for m in PROSE_NUMBER.finditer(line):
            raw = m["number"].replace(",", "")
            decimals = len(raw.split(".")[1]) if "." in raw else 0
            yield Figure(
                text=m.group(0),
                line=lineno,
                value=float(raw),
                decimals=decimals,
                percent=m["suffix"] == "%",
                scale=SCALE[m["scale"].strip()] if m["scale"] else 1.0,
            )


def source_values(sources):
    values = set()
    for text in sources:
        for token in SOURCE_NUMBER.findall(text):
            try:
                values.add(float(token.replace(",", "").replace("_", "")))
            except ValueError:
                continue
    return values


def matches(figure, values):
    def same(x):
        return math.isclose(
            round(x / figure.scale, figure.decimals),
            figure.value,
            rel_tol=1e-9,
            abs_tol=1e-12,
        )

    for value in values:
        # "7 billion" may quote 7e9, or a 7 that code scales itself.
        if same(value) or figure.scale != 1 and same(value * figure.scale):
            return True
        if figure.percent and same(value * 100):
            return True
    return False


def untraced(text):
    """The prose figures of a page that no code or output backs up."""
    meta, prose, sources = split_page(text)
    if meta.get("prose_numbers_exempt"):
        return []
    values = source_values(sources)
    allowed = {float(v) for v in meta.get("prose_numbers", []) or []}
    return [
        f
        for f in prose_figures(prose)
        if f.value not in allowed and not matches(f, values)
    ]
