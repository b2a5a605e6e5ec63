"""Site-wide browser checks: the nav is built, search finds the pages."""

import pytest

from course import browser
from tests.browser import checks

SEARCHES = {
    "all-reduce": "ddp/",
    "ZeRO-3": "zero/",
    "bubble": "pipeline/",
    "gradient accumulation": "accumulation/",
}
TOP = 3  # the page must be among the first TOP results


def test_every_nav_page_is_built(site):
    missing = [
        p for p in browser.nav_pages() if not browser.page_file(site, p)
    ]
    assert not missing, f"nav pages missing from site/: {missing}"


@pytest.mark.parametrize("query", list(SEARCHES))
def test_search_finds_the_page(visit, query):
    v = visit("")
    found = checks.search(v.page, query)
    expected = SEARCHES[query]
    assert expected in found[:TOP], (
        f"search {query!r}: {expected} not in the first {TOP} results "
        f"{found[:TOP]}"
    )
    assert not v.problems, checks.report("home (search)", v.problems)
