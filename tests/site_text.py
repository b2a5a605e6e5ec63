"""The built site's pages as text, for the tests of what is made from
them (tests/test_pdf.py, tests/test_llmstxt.py): the nav's files in
order, a page's built HTML, its title and its labs' outputs."""

import re
from html import unescape

from mkdocs.utils.yaml import yaml_load

from course import ROOT

SITE = ROOT / "site"


def nav_files(nav):
    for item in nav:
        value = next(iter(item.values())) if isinstance(item, dict) else item
        if isinstance(value, list):
            yield from nav_files(value)
        else:
            yield value


def built(source):
    """The built HTML of a docs/ file: 'zero.md' -> site/zero/index.html."""
    stem = source.rsplit(".", 1)[0]
    folder = "" if stem == "index" else stem.removesuffix("/index") + "/"
    return (SITE / folder / "index.html").read_text(encoding="utf-8")


def text(html):
    """The text of an HTML fragment, without its headerlinks (¶)."""
    return unescape(re.sub(r"<[^>]+>", "", html)).replace("¶", "")


def h1(html):
    return text(re.search(r"<h1[^>]*>(.*?)</h1>", html, re.S)[1]).strip()


def outputs(html):
    """The text of each lab's Output tab, without its captions."""
    html = re.sub(r'<span class="filename">.*?</span>', "", html)
    starts = [
        m.end() for m in re.finditer(r'<div class="lab-output"[^>]*>', html)
    ]
    ends = [html.find('<div class="tabbed-block">', at) for at in starts]
    return [text(html[a:b]) for a, b in zip(starts, ends, strict=True)]


def squeeze(text):
    """Text without its white space: a PDF's text breaks and joins the
    lines of a wrapped code block its own way."""
    return re.sub(r"\s+", "", text)


def nav_sources():
    """The docs/ files of the nav, in its order."""
    with open(ROOT / "mkdocs.yml", "rb") as file:
        return list(nav_files(yaml_load(file)["nav"]))
