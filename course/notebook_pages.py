"""MkDocs hook: the exercise notebook pages in the site's own style.

mkdocs-jupyter (0.26) puts a copy of JupyterLab's stylesheets, about
590 KB, in every notebook page, and has no option to leave it out; with
it the pages look like another site and its `word-break: break-all`
splits words in the outputs. This hook removes every <style> element
from a notebook page's content, and docs/assets/notebooks.css styles
the cells with the site's fonts, colours and code style instead. It
also makes the code boxes, which scroll sideways rather than wrap (so
Python's indentation survives on a phone), reachable by keyboard.
"""

import re

STYLE = re.compile(r"<style\b[^>]*>.*?</style>\s*", re.DOTALL)
CODE_BOX = re.compile(r'(<div class="highlight-ipynb[^"]*">)<pre>')


def is_notebook(page):
    return page.file.src_uri.startswith("exercises/") and (
        page.file.src_uri.endswith((".py", ".ipynb"))
    )


def on_page_content(html, page, config, files):
    if not is_notebook(page):
        return html
    html = STYLE.sub("", html)
    return CODE_BOX.sub(r'\1<pre tabindex="0">', html)
