"""MkDocs hook: the search plugin indexes a light copy of each page.

Material's search plugin reads a page's HTML tag by tag. Most tags on
these pages carry no words: each token of highlighted code is a <span>,
and each chart is inline SVG, hundreds of shapes. Parsing them was a
third of a rebuild under `mkdocs serve`. So the plugin is handed the
page with every code block as plain text (the words it would have
indexed, without the spans) and without the SVG (tick labels
are not worth finding; the figure's caption stays), and the page gets
its full HTML back right after, before it is written.
"""

import re

from mkdocs.plugins import event_priority

PRE = re.compile(r"<pre\b[^>]*>(.*?)</pre>", re.DOTALL)
NOT_CODE = re.compile(r"<(?!/?code\b)[^>]*>")  # any tag but <code>, </code>
SVG = re.compile(r"<svg\b.*?</svg>", re.DOTALL)

_full = {}  # page URL -> its HTML, while the search plugin reads it


def light(html):
    """`html` with code as plain text and no SVG."""
    html = SVG.sub("", html)
    return PRE.sub(lambda m: f"<pre>{NOT_CODE.sub('', m[1])}</pre>", html)


@event_priority(-100)  # after every other plugin's on_page_content
def on_page_content(html, *, page, config, files):
    _full[page.url] = html
    return light(html)


@event_priority(-100)  # after the search plugin's on_page_context
def on_page_context(context, *, page, config, nav):
    page.content = _full.pop(page.url)
    return context
