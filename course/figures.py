"""The charts on the pages.

A page prints a chart from an executed block:

    ```python exec="on" html="true"
    from course.figures import figure

    print(figure("memory"))
    ```

Chart "memory" is drawn by `draw()` in course/charts/memory.py; a "-"
in a name is a "_" in its module ("zero-stages" is zero_stages.py).
What a chart drew is kept in course.cache's folder, so a rebuild after
a prose edit draws nothing; any edit under snippets/ or course/ draws
every chart again.
"""

import importlib
import pkgutil
from pathlib import Path

from course import cache

FOLDER = Path(__file__).with_name("charts")


def names():
    """The chart names: one per module of course/charts/ not named _..."""
    return sorted(
        info.name.replace("_", "-")
        for info in pkgutil.iter_modules([str(FOLDER)])
        if not info.name.startswith("_")
    )


def draw(name):
    """Chart `name` drawn now; a ValueError lists the names."""
    if name not in names():
        listed = ", ".join(repr(n) for n in names())
        raise ValueError(f"name must be one of {listed}; got {name!r}")
    module = f"course.charts.{name.replace('-', '_')}"
    return importlib.import_module(module).draw()


def figure(name):
    """The <figure> HTML of chart `name`, drawn once per cache key."""
    if not cache.enabled():
        return draw(name)
    path = cache.folder("figures") / f"{name}.html"
    if not path.is_file():
        path.write_text(draw(name), encoding="utf-8")
    return path.read_text(encoding="utf-8")
