"""The charts on the pages.

A page prints a chart from an executed block:

    ```python exec="on" html="true"
    from course.charts import figure

    print(figure("memory"))
    ```

Chart "memory" is drawn by `draw()` in course/charts/memory.py; a "-"
in a name is a "_" in its module ("zero-stages" is zero_stages.py).
What a chart drew is kept in course.build.cache's folder, so a rebuild after
a prose edit draws nothing; any edit under snippets/ or course/ draws
every chart again.

Drawing is most of a build's work, and a build uses one core, so a
build starts a second process (`ahead`, from course/build/hooks.py) that
draws the pages' charts into that folder, last page first, while the
build works from the first. Whichever takes a chart first draws it:
its `NAME.drawing` file holds its process id, and the other waits.
"""

import importlib
import os
import pkgutil
import re
import subprocess
import sys
import time
from pathlib import Path

from course import ROOT
from course.build import cache

FOLDER = Path(__file__).parent
PRINTED = re.compile(r"""\bfigure\(["']([\w-]+)["']\)""")
WAIT_S = 60  # for a chart the other process is drawing (the block limit)


def names():
    """The chart names: one per module of course/charts/ not named _..."""
    return sorted(
        info.name.replace("_", "-")
        for info in pkgutil.iter_modules([str(FOLDER)])
        if not info.name.startswith("_")
    )


def printed(text):
    """The chart names `text` (a page's Markdown) prints, in order."""
    return PRINTED.findall(text)


def check(name):
    """A ValueError that lists the names, unless `name` is one."""
    if name not in names():
        listed = ", ".join(repr(n) for n in names())
        raise ValueError(f"name must be one of {listed}; got {name!r}")


def draw(name):
    """Chart `name` drawn now; a ValueError lists the names."""
    check(name)
    module = f"course.charts.{name.replace('-', '_')}"
    return importlib.import_module(module).draw()


def _alive(pid):
    try:
        os.kill(pid, 0)  # no signal: only whether it exists
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's
    return True


def _take(path):
    """Draw chart path.stem into `path` unless it is there or another
    live process is drawing it; False when it is that other's."""
    if path.is_file():
        return True
    claim = path.with_suffix(".drawing")  # born holding its process id:
    mine = path.with_suffix(f".{os.getpid()}.pid")  # linked into place
    mine.write_text(str(os.getpid()))
    try:
        while not path.is_file():
            try:
                os.link(mine, claim)
            except FileExistsError:
                try:
                    pid = int(claim.read_text())
                except FileNotFoundError:
                    continue  # just let go: look again
                if _alive(pid):
                    return False
                claim.unlink(missing_ok=True)  # its process died
                continue
            try:
                part = path.with_suffix(f".{os.getpid()}.part")
                part.write_text(draw(path.stem), encoding="utf-8")
                part.replace(path)  # whole or not at all
            finally:
                claim.unlink(missing_ok=True)
    finally:
        mine.unlink(missing_ok=True)
    return True


def figure(name):
    """The <figure> HTML of chart `name`, drawn once per cache key (by
    this process, or by the one drawing ahead)."""
    check(name)
    path = cache.folder("figures") / f"{name}.html"
    deadline = time.monotonic() + WAIT_S
    while not _take(path):
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"chart {name!r}: another process has drawn it for over "
                f"{WAIT_S} s"
            )
        time.sleep(0.02)
    return path.read_text(encoding="utf-8")


def ahead(charts):
    """Start drawing `charts` (names, in page order) into the cache
    folder in a second process, the last first; the process, or None
    when every one is drawn already."""
    folder = cache.folder("figures")
    missing = [n for n in charts if not (folder / f"{n}.html").is_file()]
    if not missing:
        return None
    return subprocess.Popen(  # -m: it imports course/ from its cwd
        [sys.executable, "-m", "course.charts", str(folder), *missing[::-1]],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
    )


def main(argv):
    folder, *charts = argv
    for name in charts:
        try:
            _take(Path(folder, f"{name}.html"))
        except Exception:  # the build draws it again, and names the page
            continue
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
