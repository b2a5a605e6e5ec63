"""Every Python fence in docs/ runs, and prints what its page records."""

from pathlib import Path

import markdown
import pytest
from mkdocs.utils.meta import get_data
from sybil import Document

from course.fences import PYTHON, ROOT, site_config
from tests.docblocks import PAGES, parse

DOCUMENTS = [Document.parse(str(path), parse) for path in PAGES]
EXAMPLES = [example for document in DOCUMENTS for example in document]


@pytest.mark.parametrize(
    "example", EXAMPLES, ids=[e.parsed.id for e in EXAMPLES]
)
def test_block(example):
    example.evaluate()


def python_fences_markdown_sees(text):
    """How many Python fences the build's Markdown finds in a page."""
    config, seen = site_config(), []
    mdx = dict(config.mdx_configs)
    mdx["pymdownx.superfences"] = {
        "custom_fences": [
            {
                "name": name,
                "class": name,
                "validator": lambda *args: True,
                "format": lambda *args, **kwargs: seen.append(1) or "",
            }
            for name in PYTHON
        ]
    }
    md = markdown.Markdown(
        extensions=config.markdown_extensions, extension_configs=mdx
    )
    md.convert(get_data(text)[0])
    return len(seen)


def test_no_fence_or_record_is_left_out():
    """A fence the parser misses (sybil's stock one skips every fence
    with options) never runs; a record that follows no block is never
    checked. Count what the build's Markdown sees, and compare."""
    wrong = []
    for document in DOCUMENTS:
        text, blocks = document.text, [e.parsed for e in document]
        fences = python_fences_markdown_sees(text)
        records = text.count("<!-- output")
        attached = sum(block.record is not None for block in blocks)
        if (fences, records) != (len(blocks), attached):
            page = Path(document.path).relative_to(ROOT).as_posix()
            wrong.append(
                f"{page}: {fences} Python fences, {len(blocks)} collected; "
                f"{records} output records, {attached} right after a block"
            )
    assert EXAMPLES, f"no Python fence found under {ROOT / 'docs'}"
    assert not wrong, "\n".join(wrong)
