"""The detectors fire, one test each: on small broken pages served
locally, and (for the palette toggle, which needs the theme) on a copy
of the built site with the palette stylesheet emptied."""

import shutil
import sys
from types import SimpleNamespace

import pytest

from course import browser
from tests.browser import checks

ARTICLE = '<article class="md-content__inner md-typeset">{}</article>'


# An image that loads: 4 x 4 pixels.
DOT = '<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"/>'


def page(body, head=""):
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>t</title>{head}</head><body>"
        f"<main>{ARTICLE.format(body)}</main></body></html>"
    )


@pytest.fixture
def tiny(tmp_path, chromium):
    """write(name, html) -> url path; open_(path) -> Visit on tmp_path."""
    opened = []

    with browser.serve(tmp_path) as base_url:

        def write(name, html):
            target = tmp_path / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(html, encoding="utf-8")
            return name

        def open_(path):
            v = checks.Visit(chromium, base_url)
            opened.append(v)
            v.goto(path)
            return v

        yield write, open_, tmp_path
        for v in opened:
            v.close()


# --- links -------------------------------------------------------------------


def test_link_checker_names_missing_files_and_anchors(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "index.html").write_text(
        page('<h2 id="here">x</h2><a name="old">y</a>')
    )
    (tmp_path / "index.html").write_text(
        page(
            '<a href="a/">ok</a> <a href="a/#here">ok</a>'
            '<a href="a/#old">ok</a> <a href="#top">ok</a>'
            '<a href="https://example.org/x">other site</a>'
            '<a href="mailto:x@example.org">mail</a>'
            '<a href="missing/">bad</a> <a href="a/#nowhere">bad</a>'
            '<img src="img/none.png" alt="x">'
        )
    )
    problems = checks.link_problems(tmp_path, "", site_url="")
    assert len(problems) == 3, problems
    assert any("'missing/'" in p and "no such file" in p for p in problems)
    assert any("no id 'nowhere'" in p for p in problems)
    assert any("img/none.png" in p for p in problems)
    assert "home: 3 problem(s)" in checks.report("home", problems)


def test_resolve_handles_site_url_and_relative_paths():
    url = "https://x.example/course/"
    assert browser.resolve("ddp/", "../zero/#a", url) == ("zero/", "a")
    assert browser.resolve("ddp/", "#b", url) == ("ddp/", "b")
    assert browser.resolve("", "ddp/", url) == ("ddp/", "")
    assert browser.resolve("ddp/", "https://x.example/course/zero/", url) == (
        "zero/",
        "",
    )
    assert browser.resolve("ddp/", "https://github.com/x", url) is None
    assert browser.resolve("ddp/", "/course/a.css", url)[0] == "course/a.css"


# --- loading -----------------------------------------------------------


def test_visit_records_other_hosts_console_errors_and_404s(tiny):
    write, open_, _ = tiny
    write(
        "index.html",
        page(
            "<p>x</p><script>console.error('boom')</script>"
            '<img src="gone.png" alt="gone">',
            head='<script src="https://cdn.jsdelivr.net/npm/mathjax@3/es5/'
            'tex-mml-chtml.js"></script>',
        ),
    )
    v = open_("")
    v.settle()
    text = "\n".join(v.problems)
    assert "request to another host: https://cdn.jsdelivr.net" in text
    assert "console error: boom" in text
    assert "HTTP 404" in text and "gone.png" in text


# --- what the page shows -----------------------------------------------------


def test_lab_output_checker(tiny):
    write, open_, _ = tiny
    body = (
        '<div class="result"><pre><code>N=8: 24.5 GB</code></pre></div>'
        "<!-- output\nN=8: 24.5 GB\n-->"
        '<div class="result" style="display:none"><pre>x</pre></div>'
        "<!-- output\nx\n-->"
        '<div class="result"><pre>N=8: 99 GB</pre></div>'
        "<!-- output\nN=8: 24.5 GB\n-->"
        "<div></div><!-- output\nsomething\n-->"
    )
    write("index.html", page(body))
    problems, records = checks.lab_output_problems(open_("").page)
    assert records == 4
    assert len(problems) == 3, problems
    assert "lab output #2" in problems[0] and "not visible" in problems[0]
    assert "lab output #3" in problems[1] and "differs" in problems[1]
    assert "lab output #4" in problems[2]


def test_figure_checker(tiny):
    write, open_, tmp = tiny
    (tmp / "dot.svg").write_text(DOT)
    body = (
        '<svg role="img" aria-label="named" width="200" height="100">'
        '<rect width="200" height="100"/></svg>'
        '<svg width="200" height="100"><rect width="9" height="9"/></svg>'
        '<svg role="img" width="200" height="100" style="display:none">'
        "<title>hidden</title></svg>"
        '<img src="dot.svg" alt="a dot"><img src="dot.svg">'
        '<button><svg width="16" height="16"></svg></button>'
    )
    write("index.html", page(body))
    problems, count = checks.figure_problems(open_("").page)
    assert count == 3  # the button's icon is not a figure
    text = "\n".join(problems)
    assert 'figure #2 (inline SVG) has no role="img"' in text
    assert "figure #2 (inline SVG) has no text alternative" in text
    assert "figure #3 (inline SVG) is not visible" in text
    assert "image #2 (dot.svg) has no alt text" in text
    assert "figure #1" not in text and "image #1" not in text


def test_math_checker(tiny):
    write, open_, _ = tiny
    good = "<math><mi>N</mi><mo>-</mo><mn>1</mn></math>"
    body = (
        f'<span class="arithmatex">{good}</span>'
        '<span class="arithmatex">\\(N-1\\)</span>'
        f'<div style="display:none">{good}</div>'
    )
    write("index.html", page(body))
    problems, count = checks.math_problems(open_("").page)
    assert count == 2
    assert len(problems) == 2, problems
    assert "formula #2" in problems[0] and "not MathML" in problems[0]
    assert "no size or is hidden" in problems[1]


def test_details_checker(tiny):
    write, open_, _ = tiny
    body = (
        "<details><summary>Answer</summary><p>42</p></details>"
        "<details><summary>Empty</summary></details>"
        '<details><summary>Hidden</summary><p class="h">x</p></details>'
        "<details><summary>Stuck</summary><p>y</p></details>"
        "<script>document.querySelectorAll('summary')[3].addEventListener("
        "'click', (e) => e.preventDefault())</script>"
    )
    write(
        "index.html", page(body, head="<style>.h{visibility:hidden}</style>")
    )
    problems, count = checks.details_problems(open_("").page)
    assert count == 4
    assert problems == [
        'details #2 ("Empty") opened but shows no content',
        'details #3 ("Hidden") opened but shows no content',
        'details #4 ("Stuck") did not open on click',
    ]


def test_copy_checker(tiny):
    write, open_, _ = tiny
    body = (
        '<pre id="__code_0"><code>print(1)</code></pre>'
        '<button data-md-type="copy" data-clipboard-target="#__code_0 > code"'
        " onclick=\"navigator.clipboard.writeText('print(1)')\">c</button>"
        '<pre id="__code_1"><code>print(2)</code></pre>'
        '<button data-md-type="copy" data-clipboard-target="#__code_1 > code"'
        " onclick=\"navigator.clipboard.writeText('nope')\">c</button>"
        '<pre id="__code_2"><code>print(3)</code></pre>'
        '<button data-md-type="copy" data-clipboard-target="#__code_2 > code"'
        ">c</button>"
        '<pre id="__code_3"><code>print(4)</code></pre>'
        # A block in the second of two content tabs: its tab is clicked.
        '<div class="tabbed-set"><input checked id="t1" name="t" type="radio">'
        '<input id="t2" name="t" type="radio"><div class="tabbed-labels">'
        '<label for="t1">A</label><label for="t2">B</label></div>'
        '<div class="tabbed-content"><div class="tabbed-block">a</div>'
        '<div class="tabbed-block"><pre id="__code_4"><code>print(5)</code>'
        '</pre><button data-md-type="copy" data-clipboard-target='
        '"#__code_4 > code" onclick="navigator.clipboard.writeText('
        "'print(5)')\">c</button></div></div></div>"
    )
    tabs = (
        "<style>.tabbed-set>input,.tabbed-block{display:none}"
        ".tabbed-set>input:nth-of-type(2):checked~.tabbed-content"
        ">.tabbed-block:nth-child(2){display:block}</style>"
    )
    write("index.html", page(body, head=tabs))
    v = open_("")
    v.context.grant_permissions(
        ["clipboard-read", "clipboard-write"], origin=v.base_url.rstrip("/")
    )
    problems, count = checks.copy_problems(v.page)
    assert count == 5
    assert len(problems) == 3, problems
    assert "code block #2" in problems[0] and "'nope'" in problems[0]
    assert "code block #3" in problems[1] and "copied nothing" in problems[1]
    assert "code block #4" in problems[2] and "no copy button" in problems[2]


def test_contrast_checker(tiny):
    write, open_, _ = tiny
    body = (
        '<svg role="img" aria-label="f" width="300" height="120">'
        '<rect width="300" height="60" fill="#000"/>'
        '<text x="10" y="40" fill="#fff">white on black</text>'
        '<text x="10" y="100" fill="#222">dark on the page</text>'
        "</svg>"
    )
    write(
        "index.html",
        page(body, head="<style>body{background:#1e2129}</style>"),
    )
    problems, checked = checks.contrast_problems(open_("").page)
    assert checked == 2
    assert len(problems) == 1, problems
    assert problems[0] == (
        "figure #1: text rgb(34, 34, 34) on rgb(30, 33, 41), contrast 1.01"
        ' < 4.5: "dark on the page"'
    )


def test_axe_reports_an_image_without_alt(tiny):
    write, open_, tmp = tiny
    (tmp / "dot.svg").write_text(DOT)
    write("index.html", page('<img src="dot.svg">'))
    v = open_("")
    problems = checks.axe_problems(v.page)
    assert any("image-alt" in p for p in problems), problems
    v.settle()
    assert v.problems == []  # axe fetched nothing


def test_weight_budget_is_enforced(tmp_path):
    (tmp_path / "big.png").write_bytes(b"\0" * 1_200_000)
    (tmp_path / "s.css").write_text("a{background:url(big.png)}")
    (tmp_path / "index.html").write_text(
        page("<p>x</p>", head='<link rel="stylesheet" href="s.css">')
    )
    weight = browser.page_weight(tmp_path, "")
    assert weight["images"] == 1_200_000
    assert weight["total"] > browser.WEIGHT_BUDGET


# --- the built site, broken on purpose ------------------------------------


def test_a_palette_without_its_colours_fails(site, tmp_path, chromium):
    broken_site = tmp_path / "site"
    shutil.copytree(site, broken_site)
    emptied = list((broken_site / "assets" / "stylesheets").glob("palette.*"))
    assert emptied, "no palette stylesheet in the built site"
    for css in emptied:
        css.write_text("")
    with browser.serve(broken_site) as url:
        v = checks.Visit(chromium, url)
        try:
            v.goto("ddp/")
            problems = checks.palette_problems(v.page)
        finally:
            v.close()
    assert "the background did not change with the palette" in problems


# --- setup: the site and the browser ----------------------------------------


def test_a_missing_site_is_a_clear_failure(tmp_path):
    with pytest.raises(browser.SiteMissing, match="make build"):
        browser.require_site(tmp_path)


def test_install_uses_apt_as_root_and_playwright_elsewhere(monkeypatch):
    calls = []
    monkeypatch.setattr(browser, "find_browser", lambda: None)
    monkeypatch.setattr(
        browser.subprocess, "run", lambda cmd, **kw: calls.append(cmd)
    )
    monkeypatch.setattr(browser.shutil, "which", lambda name: "/bin/" + name)
    monkeypatch.setattr(browser.os, "geteuid", lambda: 0)
    with pytest.raises(browser.BrowserMissing, match="apt-get install"):
        browser.install()
    assert calls == [
        ["apt-get", "update", "-q"],
        ["apt-get", "install", "-y", "-q", "chromium"],
    ]
    calls.clear()
    monkeypatch.setattr(browser.os, "geteuid", lambda: 1000)
    with pytest.raises(browser.BrowserMissing, match="playwright install"):
        browser.install()
    assert calls == [
        [sys.executable, "-m", "playwright", "install", "chromium"]
    ]


def test_pages_come_from_the_nav_and_the_site(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: t\n"
        "nav:\n  - Home: index.md\n  - Part:\n      - a/index.md\n"
        "      - B: b.md\n      - N: n.py\n  - Out: https://example.org/\n"
        "x: !!python/name:os.getcwd\n"
    )
    site = tmp_path / "site"
    for rel in ("index.html", "b/index.html", "c/index.html", "404.html"):
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_text("x")
    found = browser.pages(site, tmp_path / "mkdocs.yml")
    assert found == ["", "a/", "b/", "c/"]
    assert [browser.page_id(p) for p in found] == ["home", "a", "b", "c"]


def test_no_browser_is_an_error_not_a_skip(monkeypatch, tmp_path):
    monkeypatch.setattr(browser, "DEBIAN_CHROMIUM", tmp_path / "chromium")
    running = SimpleNamespace(
        chromium=SimpleNamespace(executable_path=str(tmp_path / "none"))
    )
    with pytest.raises(browser.BrowserMissing, match="make browser"):
        browser.launch(running)
