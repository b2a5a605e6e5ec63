"""MkDocs hooks, listed under `hooks:` in mkdocs.yml.

They tell course.execute which page MkDocs is rendering, so that a
failing block is reported as docs/page.md:LINE and code run by a block
can find the build it runs in (`execute.building.config.site_dir`).
MkDocs loads this file by its path, as a module named "course/hooks.py"
that `import course.hooks` would not share, so the state lives in
course.execute.

They also start the torchrun page's launch (course/measure.py) when the
build starts, if a page of the build measures, so that it runs while
the other pages are built.
"""

from course import execute, measure


def on_files(files, *, config):
    pages = files.documentation_pages()
    if any("course.measure" in page.content_string for page in pages):
        measure.start()


def on_page_markdown(markdown, *, page, config, files):
    execute.building = execute.Building(page, config)


def on_page_content(html, *, page, config, files):
    execute.building = None
