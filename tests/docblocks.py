"""A sybil parser for the Python fences of docs/, with recorded outputs.

Each ```python, ```py or ```pycon fence is found by course.fences (as in
the build), its options are read by markdown-exec's own validator, its
`--8<--` lines are expanded with the build's snippets configuration,
and it runs through course.execute.run, so it prints here what it
prints on the page. Blocks with the same `session` share globals, as
in the build. A pycon block the build does not run is a doctest.

What a block prints is recorded right after its closing fence, in an
HTML comment readers never see (a block with `html="true"`, such as a
figure, is recorded as a digest of its HTML):

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
from dataclasses import dataclass
from pathlib import Path

from markdown_exec import validator
from pymdownx.superfences import RE_OPTIONS
from sybil import Region

from course import execute
from course.fences import PYTHON, ROOT, expand, fences

PAGES = sorted((ROOT / "docs").rglob("*.md"))
RECORD = re.compile(
    r"\n(?:[ \t]*\n)*(?P<indent>[ \t]*)<!-- output(?P<body>\n.*?)?\n[ \t]*-->",
    re.DOTALL,
)
SKIP = re.compile(r"<!-- skip: (?P<reason>.+?) -->")
updates = None  # a list of (block, output) under --update-outputs


@dataclass
class Block:
    path: Path
    line: int
    language: str
    source: str
    executed: bool
    options: dict  # as markdown-exec's validator reads the fence
    indent: str
    end: int  # offset just after the closing fence
    record_end: int  # offset just after the record, or `end`
    record: str | None  # what the page records; None: no record
    skip: str | None

    @property
    def id(self):
        return f"{self.path.relative_to(ROOT).as_posix()}:{self.line}"


def parse(document):
    """sybil parser: one Region per Python fence, its record included."""
    text = document.text
    for fence in fences(text):
        if fence.language not in PYTHON:
            continue
        values = {
            m["key"]: m["key"] if m["value"] is None else m["value"]
            for m in RE_OPTIONS.finditer(fence.info)
        }
        options = {}
        executed = validator(fence.language, values, options, {}, None)
        indent = re.match(r"[ \t]*", text[fence.start :]).group()
        before = text[: fence.start].rstrip().rsplit("\n", 1)[-1].strip()
        skip = SKIP.fullmatch(before)
        record = RECORD.match(text, fence.end)
        if record and record["indent"] != indent:
            record = None
        body = record and (record["body"] or "\n")[1:].split("\n")
        block = Block(
            path=Path(document.path),
            line=fence.line,
            language=fence.language,
            source=fence.source,
            executed=executed,
            options=options,
            indent=indent,
            end=fence.end,
            record_end=record.end() if record else fence.end,
            record=body and "\n".join(ln.removeprefix(indent) for ln in body),
            skip=skip and skip["reason"],
        )
        yield Region(fence.start, block.record_end, block, evaluate)


def evaluate(example):
    block, document = example.parsed, example.document
    if block.skip:
        if block.executed:
            return f"{block.id}: the build runs this block; it cannot skip"
        return None
    session = block.options.get("session")
    page = block.path.stem
    if page == "index" and block.path.parent != ROOT / "docs":
        page = block.path.parent.name
    if session and not re.fullmatch(rf"{re.escape(page)}(-[\w-]+)?", session):
        return (
            f"{block.id}: markdown-exec sessions are shared by every page; "
            f"name this one after its page ({page!r} or {page!r}-something)"
        )
    # Run the earlier blocks of the session first, once, so that a block
    # selected on its own (pytest -k) sees the state the page gives it.
    ran = document.namespace.setdefault("ran", set())
    for _, region in document.regions:
        earlier = region.parsed
        if earlier is block:
            break
        same = session and earlier.options.get("session") == session
        if same and not earlier.skip and earlier.id not in ran:
            ran.add(earlier.id)
            run(earlier, document)
    ran.add(block.id)
    output = run(block, document).rstrip("\n")
    if block.options.get("html") and output:
        size = len(output.encode())
        digest = hashlib.sha256(output.encode()).hexdigest()
        output = f"html sha256:{digest} ({size} bytes)"
    if updates is not None:
        if output != (block.record or ""):
            updates.append((block, output))
        return None
    if block.record is None:
        if output:
            return (
                f"{block.id}: this block prints, but the page records no "
                f"output after it. `make update-outputs` records:\n{output}"
            )
    elif output != block.record:
        diff = difflib.unified_diff(
            block.record.split("\n"),
            output.split("\n"),
            f"{block.id} (recorded)",
            f"{block.id} (live)",
            lineterm="",
        )
        return (
            f"{block.id}: output drifted from the record in the page. If "
            f"the change is intended, run `make update-outputs`.\n"
            + "\n".join(diff)
        )
    return None


def run(block, document):
    """What the block prints, run as the build runs it."""
    code = expand(block.source)
    if block.language == "pycon" and not block.executed:
        parser = doctest.DocTestParser()
        test = parser.get_doctest(code, {}, block.id, block.id, block.line)
        runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
        report = []
        runner.run(test, out=report.append)
        assert not runner.failures, "".join(report)
        return ""
    if block.language == "pycon":
        code = execute.pycon_code(code)
    session = block.options.get("session")
    extra = dict(block.options.get("extra", {}))

    def where():
        return block.id

    return execute.run(
        code,
        limit=execute.time_limit(extra, where),
        where=where,
        # this parse of the page gets sessions of its own
        session=session and f"{id(document)}:{session}",
        title=block.id,
    )


def apply_updates(changes):
    """Rewrite the records of changed blocks; leave every other byte.
    Yields each page rewritten."""
    pages = {}
    for block, output in changes:
        pages.setdefault(block.path, []).append((block, output))
    for path, items in pages.items():
        text = path.read_text(encoding="utf-8")
        for block, output in sorted(items, key=lambda i: -i[0].end):
            lines = ["<!-- output", *output.split("\n"), "-->"]
            record = "\n".join(block.indent + ln if ln else ln for ln in lines)
            new = "\n\n" + record if output else ""
            text = text[: block.end] + new + text[block.record_end :]
        path.write_text(text, encoding="utf-8")
        yield path
