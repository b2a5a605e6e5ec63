"""Numbers in prose must be the numbers the code on the page produces."""

import pytest

from course import ROOT
from tests.docblocks import PAGES
from tests.prose_numbers import split_page, untraced


@pytest.mark.parametrize(
    "path", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES]
)
def test_prose_numbers_trace_to_code(path):
    text = path.read_text(encoding="utf-8")
    bad = untraced(text)
    where = path.relative_to(ROOT).as_posix()
    assert not bad, "\n".join(
        f"{where}:{f.line}: the prose says {f.text!r}, but no code or "
        f"recorded output on this page gives {f.text!r} at that precision; "
        f"update the sentence (or, for a number that is not an output, "
        f"list it under prose_numbers: in the page's front matter)"
        for f in bad
    )


def test_only_references_page_is_exempt():
    exempt = [
        p.relative_to(ROOT).as_posix()
        for p in PAGES
        if split_page(p.read_text(encoding="utf-8"))[0].get(
            "prose_numbers_exempt"
        )
    ]
    assert set(exempt) <= {"docs/references.md"}, exempt


def test_checker_catches_a_changed_figure():
    page = (ROOT / "docs/ddp.md").read_text(encoding="utf-8")
    assert untraced(page) == []
    changed = page.replace(
        "each rank sends 24.5 GB per", "each rank sends 25.5 GB per"
    )
    assert changed != page
    assert [f.text for f in untraced(changed)] == ["25.5"]
