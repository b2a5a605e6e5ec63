"""The site's charts, one module per chart, drawn from the labs with
matplotlib (course/figures.py lists and draws them).

`draw()` in course/charts/NAME.py returns a `<figure>` of inline SVG
whose numbers, in the chart and in its caption, all come from lab
calls. Modules whose names start with "_" are not charts (_common.py
holds what several charts share); the drawing helpers are in
course/svg.py.
"""
