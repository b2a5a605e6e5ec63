"""Run a code block as markdown-exec runs it, with a time limit, and
fail loudly: the build (course/build/hooks.py), the docs tests
(tests/docblocks.py) and, through the data the build hands it, the
reader's browser all go by these rules.

markdown-exec turns an exception in a block into a warning and a page
that shows the traceback. Here a block that raises, or still runs after
its time limit, is a SnippetError that starts with the page and line;
superfences lets that error stop the build.

The blocks run in a process of their own (`Runner`), as markdown-exec
runs them: each session's blocks share their globals, and what `print`
prints is the block's output. A block still running at its limit is
stopped with that process; the next block starts a new one.
"""

import builtins
import io
import linecache
import multiprocessing
import os
import sys
import traceback
from types import ModuleType

from pymdownx.superfences import SuperFencesException

# Seconds a block may run, in the build, the tests and the browser,
# unless its fence says timeout="..." or SNIPPET_TIMEOUT is set.
TIME_LIMIT_S = 60.0
SPAWN = multiprocessing.get_context("spawn")  # no fork of a threaded build
BLOCK = "<code block>"  # a block's file name in its traceback


class SnippetError(SuperFencesException):
    """A code block failed: the build must stop. (superfences prints a
    fence whose formatter raises anything else as plain code.)"""


def pycon(transcript):
    """(code, shown) of a pycon transcript: its `>>>` and `...` lines
    as Python, and those lines as the transcript reads."""
    lines = [ln for ln in transcript.split("\n") if ln[:4] in (">>> ", "... ")]
    return "\n".join(ln[4:] for ln in lines), "\n".join(lines)


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


def execute(code, env):
    """What `code` prints, run in the globals `env`."""
    printed = io.StringIO()

    def print_(*values, sep=" ", end="\n", file=None, flush=False):
        if file not in (None, sys.stdout):
            return builtins.print(*values, sep=sep, end=end, file=file)
        printed.write((" " if sep is None else sep).join(map(str, values)))
        printed.write("\n" if end is None else end)

    # dataclasses and pickle look a function's module up by its name
    name = env.setdefault("__name__", f"code_block_{id(env):x}")
    sys.modules.setdefault(name, ModuleType(name))
    env["print"] = print_
    lines = code.splitlines(keepends=True)  # for the traceback
    linecache.cache[BLOCK] = (len(code), None, lines, BLOCK)
    exec(compile(code, BLOCK, "exec"), env)
    return printed.getvalue()


def _traceback(error):
    """The traceback of `error` from the block's own frame on."""
    frames = error.__traceback__
    while frames and frames.tb_frame.f_code.co_filename != BLOCK:
        frames = frames.tb_next
    return "".join(traceback.format_exception(type(error), error, frames))


def _serve(connection, setup):
    """The runner's process: run each (code, session) it is sent and
    send back ("output", text) or ("error", last line, traceback)."""
    if setup:
        setup[0](*setup[1:])
    sessions = {}
    while True:
        try:
            code, session = connection.recv()
        except EOFError:  # the build is done with it
            return
        env = sessions.setdefault(session, {}) if session else {}
        try:
            connection.send(("output", execute(code, env)))
        except BaseException as error:  # SystemExit included
            last = f"{type(error).__name__}: {error}".rstrip(": ")
            connection.send(("error", last, _traceback(error)))


class Runner:
    """A process that runs code blocks, started on the first block;
    `setup` is (function, *arguments) it calls first. Killed by
    `close()`, and when a block runs past its time limit."""

    def __init__(self, setup=()):
        self.setup, self.process, self.connection = setup, None, None

    def run(self, code, *, where, limit=TIME_LIMIT_S, session=None):
        """What `code` prints, run in `session`'s globals. A block that
        raises, or runs past `limit` seconds, is a SnippetError that
        starts with `where` ('docs/page.md:LINE')."""
        if self.process is None:
            self.connection, theirs = SPAWN.Pipe()
            self.process = SPAWN.Process(
                target=_serve, args=(theirs, self.setup), daemon=True
            )
            self.process.start()
            theirs.close()
        self.connection.send((code, session))
        if not self.connection.poll(limit):
            self.close()
            raise SnippetError(
                f"{where}: code block still running after {limit:g} s "
                f'(time limit; set timeout="..." on the fence or '
                f"SNIPPET_TIMEOUT to change it)"
            )
        try:
            kind, *answer = self.connection.recv()
        except (EOFError, OSError):  # it died before it answered
            self.process.join(timeout=5)
            code = self.process.exitcode
            self.close()
            raise SnippetError(
                f"{where}: code block ended its Python (exit code {code})"
            ) from None
        if kind == "error":
            last, trace = answer
            raise SnippetError(f"{where}: code block raised {last}\n{trace}")
        return answer[0]

    def close(self):
        """Stop the process, whatever it is doing."""
        if self.process is not None:
            self.process.kill()
            self.process.join()
            self.connection.close()
            self.process = self.connection = None


_runner = Runner()  # the tests' (tests/docblocks.py), and a browser test's


def run(code, *, where, limit=TIME_LIMIT_S, session=None):
    """Runner.run on this process's own runner."""
    return _runner.run(code, where=where, limit=limit, session=session)
