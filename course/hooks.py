"""MkDocs hooks, listed under `hooks:` in mkdocs.yml.

They tell course.execute which page MkDocs is rendering, so that a
failing block is reported as docs/page.md:LINE and code run by a block
can find the build it runs in (`execute.building.config.site_dir`).
MkDocs loads this file by its path, as a module named "course/hooks.py"
that `import course.hooks` would not share, so the state lives in
course.execute.
"""

from course import execute


def on_page_markdown(markdown, *, page, config, files):
    execute.building = execute.Building(page, config)


def on_page_content(html, *, page, config, files):
    execute.building = None
