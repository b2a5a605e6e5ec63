"""`make screenshots`: every page, full length, at laptop and phone
width in both palettes, into screenshots/ (not a test pytest collects
by itself; the Makefile names this file)."""

import pytest

from course import ROOT
from tests.browser.helpers import LAPTOP, PHONE, site_pages

SIZES = {"1280": LAPTOP, "390": PHONE}


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", list(SIZES))
@pytest.mark.parametrize("path", site_pages())
def test_screenshot(page, base_url, path, width, scheme):
    page.set_viewport_size(SIZES[width])
    page.emulate_media(color_scheme=scheme, reduced_motion="reduce")
    page.goto(base_url + path, wait_until="networkidle")
    name = (path.strip("/") or "home").replace("/", "-")
    out = ROOT / "screenshots" / f"{name}-{width}-{scheme}.png"
    page.screenshot(path=out, full_page=True)
