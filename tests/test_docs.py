"""Every Python fence in docs/ runs, and prints what its page records;
`make update-outputs` (pytest --update-outputs) records it instead."""

import re
from pathlib import Path

import pytest
from sybil import Document

from course import ROOT
from tests.docblocks import PAGES, apply_updates, output, parse

DOCUMENTS = [Document.parse(str(path), parse) for path in PAGES]
EXAMPLES = [example for document in DOCUMENTS for example in document]
# The opening line of a Python fence, counted without course.build.fences
OPENING = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*(python|pycon|py)\b", re.M)


@pytest.mark.parametrize(
    "example",
    [  # a page's blocks on one worker, in turn: each runs its session's
        pytest.param(e, id=e.parsed.id, marks=pytest.mark.xdist_group(page))
        for e in EXAMPLES  # earlier blocks once (tests/docblocks.py)
        for page in [e.parsed.id.split(":")[0]]
    ],
)
def test_block(example, updates):
    block = example.parsed
    if updates is None:
        example.evaluate()
    elif not block.skip and output(block) != (block.record or ""):
        updates.append((block, output(block)))


def test_no_fence_or_record_is_left_out():
    """A fence the parser misses never runs; a record that follows no
    block is never checked. Count both in the text, and compare. (A
    Python fence shown inside a longer Markdown fence is counted but is
    no block: this check would flag it.)"""
    wrong = []
    for document in DOCUMENTS:
        text, blocks = document.text, [e.parsed for e in document]
        fences = len(OPENING.findall(text))
        records = text.count("<!-- output")
        attached = sum(block.record is not None for block in blocks)
        if (fences, records) != (len(blocks), attached):
            page = Path(document.path).relative_to(ROOT).as_posix()
            wrong.append(
                f"{page}: {fences} Python fences, {len(blocks)} collected; "
                f"{records} output records, {attached} right after a block"
            )
    assert len(EXAMPLES) > 60, f"only {len(EXAMPLES)} Python fences found"
    assert not wrong, "\n".join(wrong)


PAGE = """# A page

```python exec="on"
print(6 * 7)
```

<!-- output
41
-->

Prose stays as it is.

```python exec="on"
print("new")
```

```python exec="on"
print("same")
```

<!-- output
same
-->
"""


def test_update_outputs_rewrites_the_records_and_nothing_else(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(PAGE, encoding="utf-8")
    examples = list(Document.parse(str(page), parse))
    wrong = [e for e in examples if e.parsed.record != output(e.parsed)]
    assert [e.parsed.line for e in wrong] == [3, 13]
    with pytest.raises(
        Exception, match="output drifted.*\n.*\n.*\n.*\n-41\n\\+42"
    ):
        wrong[0].evaluate()
    list(apply_updates([(e.parsed, output(e.parsed)) for e in wrong]))
    assert page.read_text(encoding="utf-8") == PAGE.replace(
        "41", "42"
    ).replace(
        'print("new")\n```\n', 'print("new")\n```\n\n<!-- output\nnew\n-->\n'
    )
