"""The charts on the pages, drawn once per change of what they draw.

A page prints a chart from an executed block:

    ```python exec="on" html="true"
    from course.figures import figure

    print(figure("memory"))
    ```

`figure` keeps what course/charts.py drew in course.cache, keyed on
the source of charts.py and of every lab and helper it imports, and on
matplotlib's version: a prose edit redraws nothing, an edited lab
redraws the charts. A cached chart costs no matplotlib import.
"""

import importlib
import sys

from course import cache

CHARTS = "course.charts"


def figure(name):
    """The <figure> HTML of chart `name` (a key of course.charts.CHARTS)."""
    return cache.cached(
        "figures",
        name,
        lambda: _draw(name),
        roots=[CHARTS],
        args=name,
        packages=["matplotlib"],
    )


def _draw(name):
    charts = _fresh_charts().CHARTS
    if name not in charts:
        names = ", ".join(repr(n) for n in charts)
        raise ValueError(f"name must be one of {names}; got {name!r}")
    return charts[name]()


def _fresh_charts():
    """course.charts as its files read now. Under `mkdocs serve` a lab
    may have changed since it was imported; its new key missed the
    cache, and drawing with the old module would store a stale chart.
    So every module of the closure is imported afresh (they are small;
    packages stay, and matplotlib is not one of them)."""
    for rel in cache.closure(CHARTS):
        name = rel.removesuffix(".py").replace("/", ".")
        sys.modules.pop(name, None)
    importlib.invalidate_caches()
    return importlib.import_module(CHARTS)
