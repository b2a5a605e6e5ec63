"""Each detector of detectors.js fires on a small page built to break it,
and stays quiet on its mended twin: a pass on the site means something."""

import pytest

from tests.browser.helpers import LAPTOP, PHONE

WIDE = "x" * 150
CODE = "<pre><code style='display:block;overflow-x:auto'>{}</code></pre>"
NAV = (
    "<pre style='position:relative'><nav class='md-code__nav' style='"
    "position:absolute;top:0;right:0;width:60px;height:30px'></nav>"
    "<code style='display:block;{}'>a line long enough to run under it"
    "</code></pre>"
)
FIGURE = (
    "<figure><svg {} viewBox='0 0 9 9' width='90'><text y='5' "
    "font-size='{}'>tick</text></svg>{}</figure>"
)
CASES = {  # detector: (args, viewport, broken page, mended page, words)
    "wide": (
        [False],
        PHONE,
        f"<p style='width:900px'>{WIDE}</p>",
        "<p>fits</p>",
        "scrolls sideways",
    ),
    "wide-laptop": (
        [True],
        LAPTOP,
        f"<div class='lab-output'>{CODE.format(WIDE)}</div>",
        f"<div class='lab-output'>{CODE.format('fits')}</div>",
        "wider than its box",
    ),
    "small": (
        ["boxes", 15],
        LAPTOP,
        "<div class='admonition'><p style='font-size:12px'>small</p></div>",
        "<div class='admonition'><p style='font-size:16px'>ok</p></div>",
        "under 15",
    ),
    "small-figures": (
        ["figures", 11],
        PHONE,
        FIGURE.format("role='img' aria-label='a'", 1, ""),
        FIGURE.format("role='img' aria-label='a'", 2, ""),
        "under 11",
    ),
    "unnamed": (
        [],
        LAPTOP,
        FIGURE.format("", 2, ""),
        FIGURE.format(
            "role='img' aria-label='a'", 2, "<figcaption>c</figcaption>"
        ),
        'no role="img"',
    ),
    "covered": (
        [],
        PHONE,
        NAV.format(""),
        NAV.format("padding-top:40px"),
        "covers",
    ),
    "notebook": (
        [],
        LAPTOP,
        "<div class='jp-OutputArea-output' style='word-break:break-all'>"
        "a</div>",
        "<div class='jp-OutputArea-output'>a</div>",
        "breaks words",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_detector_fires_on_a_broken_page_only(page, detect, case):
    args, viewport, broken, mended, words = CASES[case]
    page.set_viewport_size(viewport)
    found = []
    for body in (broken, mended):
        page.set_content(
            "<body style='margin:0'><article class='md-content__inner' "
            f"style='width:300px'>{body}</article></body>"
        )
        found.append(detect(case.split("-")[0], *args))
    assert any(words in problem for problem in found[0]), found[0]
    assert found[1] == [], found[1]
