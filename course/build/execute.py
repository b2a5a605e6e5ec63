"""Run a code block as markdown-exec runs it, with a time limit, and
fail loudly: the build (course/build/hooks.py), the docs tests
(tests/docblocks.py) and, through the data the build hands it, the
reader's browser all go by these rules.

markdown-exec turns an exception in a block into a warning and a page
that shows the traceback. Here a block that raises, or still runs after
its time limit, is a SnippetError that starts with the page and line;
superfences lets that error stop the build.
"""

import os
import threading

# The site's only use of markdown-exec internals (pinned in
# pyproject.toml): its public API formats a whole block, but the build
# needs the function that runs the code, to put a time limit around it,
# and the one that reads a pycon transcript. The tests fail if either
# changes.
from markdown_exec import ExecutionError
from markdown_exec._internal.formatters.pycon import _transform_source
from markdown_exec._internal.formatters.python import _run_python
from pymdownx.superfences import SuperFencesException

# Seconds a block may run, in the build, the tests and the browser,
# unless its fence says timeout="..." or SNIPPET_TIMEOUT is set.
TIME_LIMIT_S = 60.0


class SnippetError(SuperFencesException):
    """A code block failed: the build must stop. (superfences prints a
    fence whose formatter raises anything else as plain code.)"""


def pycon(transcript):
    """(code, shown) of a pycon transcript: its `>>>` and `...` lines
    as Python, and the transcript as it reads."""
    return _transform_source(transcript)


def session_setup(earlier, session):
    """The blocks a block runs after: the earlier blocks of its session,
    in page order (none without a session). The build, the docs tests
    and, through the build's data, the browser all run a block so."""
    return [block for block in earlier if session and block.session == session]


def time_limit(option, where):
    """A block's time limit: its timeout option, else $SNIPPET_TIMEOUT,
    else TIME_LIMIT_S. Anything but a positive number is refused."""
    value = option or os.environ.get("SNIPPET_TIMEOUT") or TIME_LIMIT_S
    try:
        seconds = float(value)
    except ValueError:
        seconds = 0.0
    if not seconds > 0:
        raise SnippetError(
            f"{where}: timeout (or SNIPPET_TIMEOUT) must be a positive "
            f"number of seconds, got {value!r}"
        )
    return seconds


def run(code, *, where, limit=TIME_LIMIT_S, session=None, **options):
    """What `code` prints, run by markdown-exec in `session`'s globals.
    A block that raises, or runs past `limit` seconds, is a SnippetError
    that starts with `where` ('docs/page.md:LINE')."""
    outcome = {}

    def target():
        try:
            outcome["output"] = _run_python(code, session=session, **options)
        except BaseException as error:  # reported below
            outcome["error"] = error

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(limit)
    if worker.is_alive():
        raise SnippetError(
            f"{where}: code block still running after {limit:g} s "
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
        raise SnippetError(f"{where}: code block raised {last}") from error
    if error is not None:
        raise error
    return outcome["output"]
