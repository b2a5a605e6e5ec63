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

Drawing is most of a cold build's work: the build draws the charts
its pages print ahead, in a process pool it owns (`save`, from
course/build/hooks.py), and a page's block waits for its chart there.
"""

import importlib
import multiprocessing
import os
import pkgutil
import re
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from course.build import cache

FOLDER = Path(__file__).parent
PRINTED = re.compile(r"""\bfigure\(["']([\w-]+)["']\)""")


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


def save(name):
    """Draw chart `name` into the cache folder, whole or not at all."""
    path = cache.folder("figures") / f"{name}.html"
    part = path.with_suffix(f".{os.getpid()}.part")
    part.write_text(draw(name), encoding="utf-8")
    part.replace(path)
    return path


def figure(name):
    """The <figure> HTML of chart `name`, drawn once per cache key (by
    this process, or ahead by the build's pool)."""
    check(name)
    path = cache.folder("figures") / f"{name}.html"
    if not path.is_file():
        save(name)
    return path.read_text(encoding="utf-8")


class Ahead:
    """The charts `names` (in page order) that the cache lacks, drawn
    ahead, the last page's first, by a process pool that this object
    owns, while the build works from the first page (one worker: with
    the build's own process, both cores)."""

    def __init__(self, names):
        folder = cache.folder("figures")
        missing = [
            name
            for name in dict.fromkeys(reversed(names))
            if not (folder / f"{name}.html").is_file()
        ]
        self.pool, self.futures, self.workers = None, {}, set()
        if not missing:
            return
        before = set(multiprocessing.active_children())
        self.pool = ProcessPoolExecutor(
            max_workers=1,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=cache.use,
            initargs=(cache.store(),),
        )
        self.futures = {name: self.pool.submit(save, name) for name in missing}
        # its worker, started by the first submit: for close() to kill
        self.workers = set(multiprocessing.active_children()) - before

    def wait_for(self, name, limit):
        """Chart `name` drawn, or left to the caller to draw when the pool
        has not started it. A TimeoutError if the pool is still drawing it
        after `limit` seconds."""
        future = self.futures.pop(name, None)
        if future is None or future.cancel():
            return
        try:
            future.result(timeout=limit)
        except TimeoutError:
            raise TimeoutError(
                f"chart {name!r} still drawing after {limit:g} s"
            ) from None
        except Exception:  # the caller draws it again, and says where
            return

    def close(self):
        """Stop the pool's worker, mid-chart or idle, and cancel what it has
        not started. The pool's own thread reaps the worker, and shutdown
        waits for that thread: a join here as well would race it for the
        child's exit status (a join that lost saw the worker still alive)."""
        if self.pool is not None:
            for worker in self.workers:
                worker.kill()
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None
