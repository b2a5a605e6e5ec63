"""The charts on the pages, each drawn once per change of what it draws.

A page prints a chart from an executed block:

    ```python exec="on" html="true"
    from course.figures import figure

    print(figure("memory"))
    ```

Chart "memory" is drawn by `draw()` in course/charts/memory.py; a "-"
in a name is a "_" in its module ("zero-stages" is zero_stages.py).
The names are the public modules of course/charts/, listed from the
folder without importing them (`names`), so a new chart needs only its
file.

`figure` keeps what a chart drew in course.cache, keyed on the source
of its module and of every lab and helper that module imports, and on
matplotlib's version. Each chart module imports only the labs it draws
from, so an edited lab redraws the charts that import it and no other,
a prose edit redraws nothing, and a cached chart costs no matplotlib
import.
"""

import importlib
import pkgutil
import sys
from pathlib import Path

from course import cache

PACKAGE = "course.charts"
FOLDER = Path(__file__).with_name("charts")


def names():
    """The chart names, sorted: one per module of course/charts/ whose
    name does not start with "_"."""
    return sorted(
        info.name.replace("_", "-")
        for info in pkgutil.iter_modules([str(FOLDER)])
        if not info.name.startswith("_")
    )


def module(name):
    """'course.charts.zero_stages' for chart "zero-stages"; a ValueError
    that lists the names for a name that is no chart."""
    known = names()
    if name not in known:
        listed = ", ".join(repr(n) for n in known)
        raise ValueError(f"name must be one of {listed}; got {name!r}")
    return f"{PACKAGE}.{name.replace('-', '_')}"


def figure(name):
    """The <figure> HTML of chart `name` (one of `names()`), from the
    cache while its module and what that imports are unchanged."""
    return cache.cached(
        "figures",
        name,
        lambda: draw(name),
        roots=[module(name)],
        args=name,
        packages=["matplotlib"],
    )


def draw(name):
    """Chart `name` drawn now, by its module as the files read now.

    Under `mkdocs serve` a lab may have changed since it was imported;
    its new key missed the cache, and drawing with the old module would
    store a stale chart. So every module of this chart's closure (the
    modules its key digests) is imported afresh before drawing: they
    are small; packages stay, and matplotlib is not one of them."""
    root = module(name)
    for rel in cache.closure(root):
        sys.modules.pop(rel.removesuffix(".py").replace("/", "."), None)
    importlib.invalidate_caches()
    return importlib.import_module(root).draw()
