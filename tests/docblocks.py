"""A sybil parser for the Python fences of docs/, with recorded outputs.

Each ```python, ```py or ```pycon fence (found by course.build.fences, as in
the build) runs through course.build.execute.run after the earlier blocks of
its session, so it prints here what it prints on the page and in the
browser. A pycon block the build does not run is a doctest.

What a block prints is recorded right after its closing fence, in an
HTML comment readers never see (a block with `html="true"`, a figure
say, is recorded as a digest of its HTML):

    <!-- output
    what the block printed
    -->

A block that must not run says why on the line before its fence:

    <!-- skip: needs torchrun; tests/test_train.py runs this file -->

`make check` (REUSE_OUTPUTS=1) keeps what a block printed under the
build's cache key (course/build/cache.py, folder "docblocks"), by its
code and time limit, the code of the blocks it runs after and
pyproject.toml (the versions it runs with): after a prose edit no block
runs again, after an edit under snippets/ or course/ every block does.
Otherwise (make test, make update-outputs, CI, pytest by hand) every
block runs every time.
"""

import difflib
import doctest
import functools
import hashlib
import itertools
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from markdown_exec import validator
from pymdownx.superfences import RE_OPTIONS
from sybil import Region

from course import ROOT
from course.build import cache, execute
from course.build.fences import PYTHON, expand, fences

PAGES = sorted((ROOT / "docs").rglob("*.md"))
RECORD = re.compile(
    r"\n(?:[ \t]*\n)*(?P<indent>[ \t]*)<!-- output(?P<body>\n.*?)?\n[ \t]*-->",
    re.DOTALL,
)
SKIP = re.compile(r"<!-- skip: (?P<reason>.+?) -->")
RUNS = itertools.count()  # each run of a block gets a session of its own
# (page, session) -> (the runner's session, the id of the block it ran
# last): the next block of that session, run in turn, needs no setup.
CHAINS = {}


@dataclass
class Block:
    path: Path
    id: str  # docs/page.md:LINE
    line: int
    language: str
    source: str
    executed: bool
    options: dict  # as markdown-exec's validator reads the fence
    session: str | None
    indent: str
    end: int  # offset just after the closing fence
    record_end: int  # offset just after the record, or `end`
    record: str | None  # what the page records; None: no record
    skip: str | None
    setup: list  # the earlier blocks of its session


def parse(document):
    """sybil parser: one Region per Python fence, its record included."""
    text, earlier = document.text, []
    path = Path(document.path)
    page = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    for fence in fences(text):
        if fence.language not in PYTHON:
            continue
        values = {
            m["key"]: m["key"] if m["value"] is None else m["value"]
            for m in RE_OPTIONS.finditer(fence.info)
        }
        options = {}
        executed = validator(fence.language, values, options, {}, None)
        before = text[: fence.start].rstrip().rsplit("\n", 1)[-1].strip()
        skip = SKIP.fullmatch(before)
        record = RECORD.match(text, fence.end)
        if record and record["indent"] != fence.indent:
            record = None
        body = record and (record["body"] or "\n")[1:].split("\n")
        session = options.get("session") or None
        block = Block(
            path=path,
            id=f"{page.as_posix()}:{fence.line}",
            line=fence.line,
            language=fence.language,
            source=fence.source,
            executed=executed,
            options=options,
            session=session,
            indent=fence.indent,
            end=fence.end,
            record_end=record.end() if record else fence.end,
            record=body
            and "\n".join(ln.removeprefix(fence.indent) for ln in body),
            skip=skip and skip["reason"],
            setup=execute.session_setup(earlier, session),
        )
        if not block.skip:
            earlier.append(block)
        yield Region(fence.start, block.record_end, block, evaluate)


def output(block):
    """What the block prints as the page records it."""
    printed = run(block).rstrip("\n")
    if block.options.get("html") and printed:
        data = printed.encode()
        digest = hashlib.sha256(data).hexdigest()
        return f"html sha256:{digest} ({len(data)} bytes)"
    return printed


def evaluate(example):
    """sybil evaluator: None when the block prints what the page records,
    else what is wrong, with a unified diff."""
    block = example.parsed
    if block.skip:
        if block.executed:
            return f"{block.id}: the build runs this block; it cannot skip"
        return None
    printed = output(block)
    if block.record is None and printed:
        return (
            f"{block.id}: this block prints, but the page records no "
            f"output after it. `make update-outputs` records:\n{printed}"
        )
    if block.record is not None and printed != block.record:
        diff = difflib.unified_diff(
            block.record.split("\n"),
            printed.split("\n"),
            f"{block.id} (recorded)",
            f"{block.id} (live)",
            lineterm="",
        )
        return (
            f"{block.id}: output drifted from the record in the page. If "
            "the change is intended, run `make update-outputs`.\n"
            + "\n".join(diff)
        )
    return None


def code(block):
    text = expand(block.source)
    return execute.pycon(text)[0] if block.language == "pycon" else text


REUSE = os.environ.get("REUSE_OUTPUTS") == "1"


@functools.cache
def _kept_outputs():
    """The folder of the blocks' kept outputs, for this process."""
    return cache.folder("docblocks")


def kept_output(block, limit):
    """Where what `block` prints is kept: named by the digest of its
    code, its time limit, its setup's code and pyproject.toml."""
    pins = (ROOT / "pyproject.toml").read_bytes()
    what = [hashlib.sha256(pins).hexdigest(), limit, code(block)]
    what += [code(earlier) for earlier in block.setup]
    name = hashlib.sha256(json.dumps(what).encode()).hexdigest()[:32]
    return _kept_outputs() / f"{name}.txt"


def run(block):
    """What the block prints, run as the build runs it: in a session of
    its own, after the earlier blocks of its page's session (run just
    before it, in turn, or else now); or, for the same code, what it
    printed when it last ran (`kept_output`)."""
    if block.language == "pycon" and not block.executed:
        test = doctest.DocTestParser().get_doctest(
            expand(block.source), {}, block.id, block.id, block.line
        )
        runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
        report = []
        runner.run(test, out=report.append)
        assert not runner.failures, "".join(report)
        return ""
    timeout = block.options.get("extra", {}).get("timeout")
    limit = execute.time_limit(timeout, block.id)
    kept = kept_output(block, limit) if REUSE else None
    if kept and kept.is_file():
        return kept.read_text(encoding="utf-8")
    session, last = CHAINS.pop((block.path, block.session), (None, None))
    try:
        if not (block.setup and block.setup[-1].id == last):
            session = f"{block.id}#{next(RUNS)}"
            for earlier in block.setup:
                execute.run(code(earlier), where=earlier.id, session=session)
        printed = execute.run(
            code(block), where=block.id, limit=limit, session=session
        )
    except execute.SnippetError:  # its process may be a new one now
        CHAINS.clear()
        raise
    if block.session:
        CHAINS[block.path, block.session] = (session, block.id)
    if kept:
        partial = kept.with_name(f"{os.getpid()}.partial")
        partial.write_text(printed, encoding="utf-8")
        partial.replace(kept)  # whole, even with another process at it
    return printed


def apply_updates(changes):
    """Rewrite the records of changed blocks; leave every other byte.
    Yields each page rewritten."""
    pages = {}
    for block, printed in changes:
        pages.setdefault(block.path, []).append((block, printed))
    for path, items in pages.items():
        text = path.read_text(encoding="utf-8")
        for block, printed in sorted(items, key=lambda i: -i[0].end):
            lines = ["<!-- output", *printed.split("\n"), "-->"]
            record = "\n".join(block.indent + ln if ln else ln for ln in lines)
            new = "\n\n" + record if printed else ""
            text = text[: block.end] + new + text[block.record_end :]
        path.write_text(text, encoding="utf-8")
        yield path
