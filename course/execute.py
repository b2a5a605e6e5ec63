"""markdown-exec, made strict for this site.

markdown-exec turns an exception in a block into a warning and a page
that shows the traceback. This formatter stops the build instead, with
the page, the line of the block and the exception's last line, and it
also stops a block that runs longer than its time limit. It is wired in
mkdocs.yml as the superfences formatter for `python` and `pycon`;
course/hooks.py tells it which page is being built.
"""

import json
import os
import textwrap
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from markdown_exec import ExecutionError, base_format

# markdown-exec's own runners (pinned version; tests/test_build.py
# checks that a raising and a hanging block both stop the build).
from markdown_exec._internal.formatters.pycon import _transform_source
from markdown_exec._internal.formatters.python import _run_python
from pymdownx.superfences import SuperFencesException

from course.fences import expand, python_fences

DEFAULT_TIMEOUT_S = 60.0


class SnippetError(SuperFencesException):
    """A code block failed: the build must stop. (superfences swallows
    any other exception a formatter raises and prints the fence as
    plain code, so the error must be a SuperFencesException.)"""


@dataclass
class Building:
    page: object  # mkdocs.structure.pages.Page
    config: object  # mkdocs.config.defaults.MkDocsConfig


# The page MkDocs is rendering, set by course/hooks.py; None otherwise.
building = None


def _page():
    """'docs/page.md' for the page being built."""
    if building is None:
        return "<unknown page>"
    docs = Path(building.config.docs_dir).name
    return f"{docs}/{building.page.file.src_uri}"


def _locate(source):
    """'docs/page.md:LINE' for the block whose expanded code is `source`."""
    where = _page()
    if building is None:
        return where
    path = Path(building.page.file.abs_src_path)
    wanted = textwrap.dedent(source).strip()
    for fence in python_fences(path.read_text(encoding="utf-8")):
        try:
            code = expand(fence.body)
        except Exception:
            continue
        if textwrap.dedent(code).strip() == wanted:
            return f"{where}:{fence.line}"
    return where


def _limit(extra):
    value = extra.pop("timeout", None) or os.environ.get("SNIPPET_TIMEOUT")
    return float(value) if value else DEFAULT_TIMEOUT_S


def _strict_run(source, limit):
    def run(code, **kwargs):
        outcome = {}

        def target():
            try:
                outcome["output"] = _run_python(code, **kwargs)
            except BaseException as error:  # reported below
                outcome["error"] = error

        worker = threading.Thread(target=target, daemon=True)
        worker.start()
        worker.join(limit)
        if worker.is_alive():
            raise SnippetError(
                f"{_locate(source)}: code block still running after "
                f'{limit:g} s (time limit; set timeout="..." on the fence '
                f"or SNIPPET_TIMEOUT to change it)"
            )
        error = outcome.get("error")
        if isinstance(error, ExecutionError):
            cause = error.__cause__
            last = (
                f"{type(cause).__name__}: {cause}"
                if cause
                else str(error).strip().splitlines()[-1]
            )
            raise SnippetError(f"{_locate(source)}: code block raised {last}")
        if error is not None:
            raise error
        return outcome["output"]

    return run


def _record_timing(source, seconds):
    """Append a block's run time to $COURSE_EXEC_TIMINGS (for make bench)."""
    path = os.environ.get("COURSE_EXEC_TIMINGS")
    if path:
        with open(path, "a", encoding="utf-8") as log:
            log.write(json.dumps({"page": _page(), "seconds": seconds}))
            log.write("\n")


def formatter(source, language, css_class, options, md, **kwargs):
    """Superfences formatter: run the block, stop the build on failure."""
    started = time.perf_counter()
    try:
        return _format(source, language, options, md)
    finally:
        _record_timing(source, time.perf_counter() - started)


def _format(source, language, options, md):
    options = dict(options)
    options["extra"] = dict(options.get("extra", {}))
    limit = _limit(options["extra"])
    transform = _transform_source if language == "pycon" else None
    return base_format(
        language=language,
        run=_strict_run(source, limit),
        code=source,
        md=md,
        transform_source=transform,
        **options,
    )
