"""Sybil parser for every Python fence in docs/, with recorded outputs.

A fence is collected whatever its info string: ```python, ```py and
```pycon, with or without markdown-exec attributes. Its `--8<--` include
lines are expanded as pymdownx.snippets does at build time, and it runs
with markdown-exec's own runner, so a block prints here exactly what
it prints on the page. Blocks with the same `session` share globals,
as they do in the build; other blocks start from empty globals.

What a block prints is recorded right after its closing fence, in an
HTML comment that readers never see (a block with `html="true"`, such as
a figure, is recorded as a digest of its HTML):

    <!-- output
    what the block printed
    -->

A block that must not run says why on the line before its fence:

    <!-- skip: needs torchrun; tests/test_train.py runs this file -->
"""

import difflib
import doctest
import hashlib
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from markdown_exec._internal.formatters.pycon import _transform_source
from markdown_exec._internal.formatters.python import (
    _run_python,
    _sessions_globals,
)
from sybil import Region
from sybil.parsers.markdown.lexers import RawFencedCodeBlockLexer

from course.fences import ROOT, expand

INFO = re.compile(
    r"(?P<language>python|py|pycon)(?:[ \t]+(?P<attrs>[^\n]*))?$\n",
    re.MULTILINE,
)
RECORD = re.compile(
    r"\n(?:[ \t]*\n)*(?P<indent>[ \t]*)<!-- output(?P<body>\n.*?)?"
    r"\n[ \t]*-->",
    re.DOTALL,
)
SKIP = re.compile(r"[ \t]*<!-- skip: (?P<reason>.+?) -->[ \t]*$")


class UpdateLog:
    """Outputs seen while `--update-outputs` is on, keyed by file."""

    enabled = False
    changes: dict = {}


@dataclass
class Block:
    path: Path
    line: int
    language: str
    attrs: dict
    source: str  # as written in the page
    fence_end: int  # offset just after the closing fence
    indent: str
    skip: str | None = None
    record: str | None = None  # recorded output, None when absent
    record_span: tuple | None = None
    done: set = field(default_factory=set)

    @property
    def id(self):
        return f"{self.path.relative_to(ROOT).as_posix()}:{self.line}"

    @property
    def session(self):
        return self.attrs.get("session") or None

    @property
    def executed(self):
        return self.attrs.get("exec", "").lower() in {"on", "1", "true", "yes"}

    def code(self):
        return expand(self.source)


def parse_attrs(text):
    return dict(re.findall(r'(\w+)="([^"]*)"', text or ""))


class DocBlockParser:
    lexer = RawFencedCodeBlockLexer(info_pattern=INFO)

    def __call__(self, document):
        path = Path(document.path)
        text = document.text
        for region in self.lexer(document):
            opening_line = text.count("\n", 0, region.start) + 1
            line_start = text.rfind("\n", 0, region.start) + 1
            indent = re.match(r"[ \t]*", text[line_start:]).group()
            previous = text[:line_start].rstrip("\n").rsplit("\n", 1)[-1]
            skip = SKIP.fullmatch(previous)
            block = Block(
                path=path,
                line=opening_line,
                language=region.lexemes["language"],
                attrs=parse_attrs(region.lexemes.get("attrs")),
                source=str(region.lexemes["source"]),
                fence_end=region.end,
                indent=indent,
                skip=skip["reason"] if skip else None,
            )
            end = region.end
            record = RECORD.match(text, region.end)
            if record and record["indent"] == indent:
                body = (record["body"] or "\n")[1:].split("\n")
                block.record = "\n".join(
                    ln[len(indent) :] if ln.startswith(indent) else ln.lstrip()
                    for ln in body
                )
                block.record_span = (region.end, record.end())
                end = record.end()
            yield Region(region.start, end, parsed=block, evaluator=evaluate)


def _run(block, document):
    code = block.code()
    if block.language == "pycon":
        if not block.executed:
            return _doctest(block, code)
        code, _ = _transform_source(code)
    session = None
    if block.session:
        session = f"tests:{block.path.name}:{block.session}"
        started = document.namespace.setdefault("sessions", set())
        if session not in started:
            _sessions_globals.pop(session, None)
            started.add(session)
    return _run_python(code, session=session, title=block.id)


def _doctest(block, code):
    parser = doctest.DocTestParser()
    test = parser.get_doctest(code, {}, block.id, str(block.path), block.line)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    out = []
    runner.run(test, out=out.append)
    if runner.failures:
        raise AssertionError("".join(out))
    return ""


def evaluate(example):
    block = example.parsed
    document = example.document
    if block.skip:
        return None
    # Run the earlier blocks of the same session first, once, so that one
    # block selected on its own sees the state the page gives it.
    done = document.namespace.setdefault("done", set())
    if block.session:
        for earlier in document.namespace["blocks"]:
            if earlier is block:
                break
            if earlier.session == block.session and earlier.id not in done:
                done.add(earlier.id)
                _run(earlier, document)
    done.add(block.id)
    output = recordable(block, _run(block, document).rstrip("\n"))
    if UpdateLog.enabled:
        if output != (block.record or "") or (output and block.record is None):
            UpdateLog.changes.setdefault(block.path, []).append(
                (block, output)
            )
        return None
    return check(block, output)


def recordable(block, output):
    """What the record holds: the text a block prints, or for an HTML
    block (a figure's SVG, say) a digest of it, which no reader needs
    to review line by line but any change still breaks."""
    if block.attrs.get("html", "").lower() in {"1", "true", "yes", "on"}:
        if not output:
            return output
        digest = hashlib.sha256(output.encode()).hexdigest()
        return f"html sha256:{digest} ({len(output.encode())} bytes)"
    return output


def check(block, output):
    if block.record is None:
        if output:
            return (
                f"{block.id}: this block prints but the page has no recorded "
                f"output after it. Run `make update-outputs` to record:\n"
                f"{output}"
            )
        return None
    if output != block.record:
        diff = "\n".join(
            difflib.unified_diff(
                block.record.split("\n"),
                output.split("\n"),
                fromfile=f"{block.id} (recorded)",
                tofile=f"{block.id} (live)",
                lineterm="",
            )
        )
        return (
            f"{block.id}: output drifted from the record in the page. "
            f"If the change is intended, run `make update-outputs`.\n{diff}"
        )
    return None


def render_record(block, output):
    lines = ["<!-- output", *output.split("\n"), "-->"]
    return "\n".join((block.indent + ln) if ln else ln for ln in lines)


def apply_updates(changes=None):
    """Rewrite the records of changed blocks; leave every other byte."""
    changes = UpdateLog.changes if changes is None else changes
    written = []
    for path, items in changes.items():
        text = path.read_text(encoding="utf-8")
        for block, output in sorted(
            items, key=lambda item: item[0].fence_end, reverse=True
        ):
            if block.record_span:
                start, end = block.record_span
                new = "\n\n" + render_record(block, output) if output else ""
                text = text[:start] + new + text[end:]
            elif output:
                at = block.fence_end
                text = (
                    text[:at]
                    + "\n\n"
                    + render_record(block, output)
                    + text[at:]
                )
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def main_update_message(paths):
    for path in paths:
        print(
            f"updated recorded outputs in {path.relative_to(ROOT)}",
            file=sys.stderr,
        )
