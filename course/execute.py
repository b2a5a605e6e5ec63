"""markdown-exec, made strict for this site.

markdown-exec turns an exception in a block into a warning and a page
that shows the traceback. This formatter stops the build instead, with
the page, the line of the block and the exception's last line, and it
also stops a block that runs longer than its time limit. mkdocs.yml
wires it as the superfences formatter for python, py and pycon, and
course/hooks.py tells it which page is being built. The docs tests run
blocks with `run`, as the build does. A block with source="lab" runs
the same way and is laid out by course/labs.py: output first.
"""

import json
import os
import textwrap
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from markdown_exec import ExecutionError, MarkdownConverter, base_format

# The site's only use of markdown-exec internals (its version is pinned
# in pyproject.toml). The public API formats a whole block but exposes
# neither the function that runs its code nor the one that reads a pycon
# transcript: the build needs them to put a time limit around a block,
# the tests to run a block exactly as the build does. tests/test_build.py
# and tests/test_docs.py fail if either changes.
from markdown_exec._internal.formatters.pycon import _transform_source
from markdown_exec._internal.formatters.python import _run_python
from markupsafe import Markup
from pymdownx.superfences import SuperFencesException

from course import labs
from course.fences import PYTHON, expand, fences

DEFAULT_TIMEOUT_S = 60.0


@dataclass
class Building:
    page: object  # mkdocs.structure.pages.Page
    config: object  # mkdocs.config.defaults.MkDocsConfig
    # sessions with a block that gets no Run tab (course/runner.py)
    refused_sessions: set = field(default_factory=set)
    labs: int = 0  # lab blocks laid out so far on this page


# The page MkDocs is rendering, set by course/hooks.py; None otherwise.
building = None


class SnippetError(SuperFencesException):
    """A code block failed: the build must stop. (superfences swallows
    any other exception a formatter raises and prints the fence as
    plain code, so the error must be a SuperFencesException.)"""


def pycon_code(transcript):
    """The Python code of a pycon block: its `>>>` and `...` lines."""
    return _transform_source(transcript)[0]


def time_limit(extra, where):
    """Seconds a block may run: its timeout="..." option (taken out of
    `extra`), else $SNIPPET_TIMEOUT, else 60."""
    value = (
        extra.pop("timeout", None)
        or os.environ.get("SNIPPET_TIMEOUT")
        or DEFAULT_TIMEOUT_S
    )
    try:
        seconds = float(value)
    except ValueError:
        seconds = 0.0
    if not seconds > 0:
        raise SnippetError(
            f"{where()}: timeout (or SNIPPET_TIMEOUT) must be a positive "
            f"number of seconds, got {value!r}"
        )
    return seconds


def run(code, *, limit, where, **options):
    """Run Python `code` with markdown-exec's runner and return what it
    printed. A block that raises, or still runs after `limit` seconds,
    is a SnippetError that starts with `where()`, its location."""
    outcome = {}

    def target():
        try:
            outcome["output"] = _run_python(code, **options)
        except BaseException as error:  # reported below
            outcome["error"] = error

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(limit)
    if worker.is_alive():
        raise SnippetError(
            f"{where()}: code block still running after {limit:g} s "
            f'(time limit; set timeout="..." on the fence or '
            f"SNIPPET_TIMEOUT to change it)"
        )
    error = outcome.get("error")
    if isinstance(error, ExecutionError):
        cause = error.__cause__
        last = (
            f"{type(cause).__name__}: {cause}"
            if cause
            else str(error).strip().splitlines()[-1]
        )
        raise SnippetError(f"{where()}: code block raised {last}") from error
    if error is not None:
        raise error
    return outcome["output"]


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
    config = building.config
    snippets = config.mdx_configs.get("pymdownx.snippets", {})
    folder = Path(config.config_file_path).resolve().parent
    text = Path(building.page.file.abs_src_path).read_text(encoding="utf-8")
    wanted = textwrap.dedent(source).strip()
    for fence in fences(text):
        if fence.language not in PYTHON:
            continue
        try:
            code = expand(fence.source, snippets, folder)
        except Exception:  # an include that fails is not this block
            continue
        if textwrap.dedent(code).strip() == wanted:
            return f"{where}:{fence.line}"
    return where


def lab_format(source, language, md, options, limit, where):
    """A source="lab" block: run it as base_format would, then lay it
    out output first (course/labs.py)."""
    extra = options["extra"]
    names = labs.pick(extra.pop("idea", None))
    if language == "pycon":
        code, shown = _transform_source(source)
    else:
        code = shown = source
    shown = "\n".join(
        line for line in shown.split("\n") if "markdown-exec: hide" not in line
    ).strip("\n")
    output = run(
        code,
        limit=limit,
        where=where,
        returncode=options.get("returncode", 0),
        session=options.get("session") or None,
        id=options.get("id", ""),
        **extra,
    )
    lab = labs.Lab(
        language=language,
        source=code,
        code=shown,
        session=options.get("session") or None,
        output=output,
        html=options.get("html", False),
        result=options.get("result", ""),
        idea=labs.idea(shown, names),
        stash={},
    )
    return Markup(f'<div class="lab">{_lab_html(md, lab)}</div>')


# A lab's HTML, by its Markdown, the page's Markdown settings and its ids'
# prefix: under `mkdocs serve` a rebuild lays out again only the labs
# whose code or output changed (converting one is most of a rebuild).
_laid_out = {}


def _lab_html(md, lab):
    """The HTML of the lab's tabs. A lab's output adds no headings to the
    page's table of contents, so the conversion has no effect on the
    page besides its HTML."""
    text = labs.tabbed(lab)
    if building is None:  # outside a build: no page to count labs on
        converter = MarkdownConverter(md, update_toc=False)
        return converter.convert(text, stash=lab.stash)
    building.labs += 1
    prefix = f"lab{building.labs}-"
    config = building.config
    settings = repr((config.markdown_extensions, config.mdx_configs))
    key = (settings, text, tuple(sorted(lab.stash.items())), prefix)
    if key not in _laid_out:
        converter = MarkdownConverter(md, update_toc=False)
        _laid_out[key] = converter.convert(
            text, stash=lab.stash, id_prefix=prefix
        )
    return _laid_out[key]


def formatter(source, language, css_class, options, md, **kwargs):
    """Superfences formatter: run the block, stop the build on failure."""
    started = time.perf_counter()
    options = {**options, "extra": dict(options.get("extra", {}))}

    def where():
        return _locate(source)

    transform = _transform_source if language == "pycon" else None
    try:
        limit = time_limit(options["extra"], where)
        if options.get("source") == "lab":
            return lab_format(source, language, md, options, limit, where)
        return base_format(
            language=language,
            run=lambda code, **kw: run(code, limit=limit, where=where, **kw),
            code=source,
            md=md,
            transform_source=transform,
            **options,
        )
    except SnippetError:
        raise
    except Exception as error:  # superfences would print the fence as code
        raise SnippetError(f"{where()}: {error!r}") from error
    finally:
        # Each block's run time goes to $COURSE_EXEC_TIMINGS (make bench).
        log = os.environ.get("COURSE_EXEC_TIMINGS")
        if log:
            seconds = time.perf_counter() - started
            with open(log, "a", encoding="utf-8") as out:
                out.write(json.dumps({"page": _page(), "seconds": seconds}))
                out.write("\n")
