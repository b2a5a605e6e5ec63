"""Every Python fence in docs/ runs, and prints what its page records."""

import re
from collections import defaultdict

import pytest

from course.fences import ROOT, python_fences
from tests.conftest import doc_pages, parsed_documents

DOCUMENTS = parsed_documents()
EXAMPLES = [example for document in DOCUMENTS for example in document]


@pytest.mark.parametrize(
    "example", EXAMPLES, ids=[e.parsed.id for e in EXAMPLES]
)
def test_block(example):
    example.evaluate()


def test_every_python_fence_is_collected():
    """sybil's stock Markdown parser skips fences with attributes; ours
    must not. Count the fences with a separate scanner and compare."""
    counted = {
        path: len(python_fences(path.read_text(encoding="utf-8")))
        for path in doc_pages()
    }
    collected = defaultdict(int)
    for example in EXAMPLES:
        collected[example.parsed.path] += 1
    missing = {
        p.relative_to(ROOT).as_posix(): (n, collected[p])
        for p, n in counted.items()
        if collected[p] != n
    }
    assert not missing, f"fences counted vs collected: {missing}"
    total = sum(counted.values())
    skipped = [e.parsed for e in EXAMPLES if e.parsed.skip]
    print(
        f"\n{total} Python fences in docs/, {len(EXAMPLES)} collected, "
        f"{len(skipped)} marked not to run:"
    )
    for block in skipped:
        print(f"  {block.id}: {block.skip}")
    assert total > 0


def test_sessions_are_named_per_page():
    """markdown-exec sessions are global to a build: one page, one name."""
    owners = defaultdict(set)
    for example in EXAMPLES:
        block = example.parsed
        if block.session:
            owners[block.session].add(block.path.relative_to(ROOT).as_posix())
            page = block.path.stem
            if page == "index" and block.path.parent != ROOT / "docs":
                page = block.path.parent.name
            assert re.fullmatch(
                rf"{re.escape(page)}(-[\w-]+)?", block.session
            ), (
                f"{block.id}: session {block.session!r} should be named after "
                f"its page ({page!r} or {page!r}-something)"
            )
    shared = {s: sorted(p) for s, p in owners.items() if len(p) > 1}
    assert not shared, f"sessions used on more than one page: {shared}"


def test_executed_blocks_have_no_stray_skip():
    """A block the build executes cannot be marked not to run in tests."""
    both = [
        e.parsed.id for e in EXAMPLES if e.parsed.skip and e.parsed.executed
    ]
    assert not both, f"executed at build but skipped in tests: {both}"


def test_every_output_record_belongs_to_a_block():
    """A record not attached to a block (one too many, or separated from
    its fence) would never be checked: refuse it."""
    attached = defaultdict(int)
    for example in EXAMPLES:
        if example.parsed.record is not None:
            attached[example.parsed.path] += 1
    stray = {
        path.relative_to(ROOT).as_posix(): (written, attached[path])
        for path in doc_pages()
        if (written := path.read_text(encoding="utf-8").count("<!-- output"))
        != attached[path]
    }
    assert not stray, f"records written vs attached to a block: {stray}"
