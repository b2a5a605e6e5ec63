"""The site's charts, one module per chart, drawn from the labs with
matplotlib.

A page prints chart NAME with `figure("NAME")` (course/figures.py),
which draws it with `draw()` from course/charts/NAME.py, a "-" in the
name being a "_" in the module: figure("zero-stages") is
zero_stages.py. `draw()` returns a `<figure>` of inline SVG whose
numbers, in the chart and in its caption, all come from lab calls.

Each module imports the labs it draws from, and only those, with plain
imports, so course.cache keys each chart on its own labs: an edited lab
redraws the charts that import it and no other. Modules whose names
start with "_" are not charts (_common.py holds the model and job
several charts share); the drawing helpers are in course/svg.py.

This file imports nothing, and must stay so: a chart's key follows its
imports, and `from course.charts._common import ...` reaches this file
too, so a chart imported here would put its labs into every such key.
The chart names are listed from the folder (course.figures.names).
"""
