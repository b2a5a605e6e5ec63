"""Turn a matplotlib figure into small, byte-stable, accessible SVG.

The figures on the site are drawn at build time from the lab functions
and printed as inline SVG by an executed block (html="true"). Three
things make that work:

- Determinism: a fixed `svg.hashsalt` and no date in the metadata, so
  the same data gives the same bytes (the page records a digest).
- Light and dark mode: text, axes and frames are drawn in a sentinel
  colour that is replaced by `currentColor`, and the background is
  transparent, so the figure takes the page's text colour.
- Accessibility: `role="img"`, an `aria-label` and a `<title>`, inside
  a `<figure>` whose caption says what to notice.

The charts (course/charts/) also share a few drawing helpers from here:
a log-2 axis, text that contrasts with its fill, labelled boxes and
arrows for the diagrams.
"""

import html
import io
import math
import re

import matplotlib

matplotlib.use("svg")  # no GUI backend, nothing else to import

from matplotlib.figure import Figure  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

# Chart text is never drawn smaller than this many CSS px: a chart whose
# smallest font would shrink below it at the column's width gets a
# min-width, and scrolls sideways in its own box instead of shrinking.
MIN_TEXT_PX = 11
INK = "#0a0b0c"  # sentinel for "the page's text colour"; never a data colour
DARK_TEXT = "#111111"  # on the palette's fills but one: 4.9:1 or more
# Series colours: at least 3:1 contrast on white and on Material's slate.
PALETTE = ("#3a87c8", "#d9641e", "#1f9a5a", "#b8479a", "#7a6fd0")

STYLE = {
    "svg.fonttype": "none",  # text stays text: small and selectable
    "svg.image_inline": True,
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans"],
    "font.size": 10,
    "text.color": INK,
    "axes.edgecolor": INK,
    "axes.labelcolor": INK,
    "axes.titlecolor": INK,
    "xtick.color": INK,
    "ytick.color": INK,
    "grid.color": INK,
    "grid.alpha": 0.15,
    "axes.facecolor": "none",
    "figure.facecolor": "none",
    "savefig.facecolor": "none",
    "savefig.edgecolor": "none",
    "savefig.transparent": True,
    "legend.frameon": False,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "lines.linewidth": 1.8,
    "path.simplify": True,
}


def style():
    """Draw inside `with style():` so axes, ticks and text get the site
    style (rcParams are read when each artist is made)."""
    return matplotlib.rc_context(STYLE)


def new_figure(width=6.4, height=3.4):
    """A bare Figure (no pyplot state); call inside `with style():`."""
    return Figure(figsize=(width, height), layout="constrained")


def to_svg(fig, *, salt):
    """The figure as an SVG string, identical for identical input."""
    buffer = io.StringIO()
    with matplotlib.rc_context({**STYLE, "svg.hashsalt": salt}):
        fig.savefig(buffer, format="svg", metadata={"Date": None})
    svg = buffer.getvalue()
    svg = svg[svg.index("<svg") :]  # drop the XML declaration and DOCTYPE
    svg = re.sub(r"<metadata>.*?</metadata>\s*", "", svg, flags=re.DOTALL)
    svg = svg.replace(INK, "currentColor")
    svg = svg.replace("'DejaVu Sans'", "sans-serif")
    # Several figures share a page: make every id unique to this one,
    # and keep matplotlib's global `*{...}` rule inside this figure.
    svg = re.sub(
        r'(id="|href="#|url\(#)([^"#)]+)', rf"\g<1>fig-{salt}-\g<2>", svg
    )
    svg = svg.replace('<style type="text/css">*{', f"<style>#fig-{salt} *{{")
    # Indentation and blank lines only add bytes; they also break
    # Markdown's raw-HTML handling when a blank line ends the block.
    return "".join(line.strip() for line in svg.splitlines())


def figure_html(fig, *, name, title, alt, caption):
    """A <figure> with the inline SVG, its accessible name and caption."""
    svg = to_svg(fig, salt=name)
    # Fixed width/height in pt would stop the figure from scaling.
    svg = re.sub(r'\s(width|height)="[\d.]+pt"', "", svg, count=2)
    opening = re.match(r"<svg\b[^>]*>", svg).group(0)
    labelled = (
        opening[:-1]
        + f' id="fig-{name}" role="img" aria-label="{html.escape(alt)}">'
        + f"<title>{html.escape(title)}</title>"
    )
    svg = labelled + svg[len(opening) :]
    return (
        f'<figure class="diagram chart" id="figure-{name}">'
        f'<div class="figure-scroll" tabindex="0" role="group" '
        f'aria-label="{html.escape(title)}, scrolls sideways when narrow" '
        f'style="--figure-min-width: {min_width(svg)}px">'
        f"{svg}</div><figcaption>{html.escape(caption)}</figcaption>"
        "</figure>"
    )


def min_width(svg):
    """CSS px below which the smallest text of `svg` is under
    MIN_TEXT_PX (user units are scaled by width / viewBox width)."""
    view = float(re.search(r'viewBox="[\d.]+ [\d.]+ ([\d.]+)', svg)[1])
    sizes = [float(s) for s in re.findall(r"font-size: ?([\d.]+)px", svg)]
    return math.ceil(view * MIN_TEXT_PX / min(sizes))


# --- drawing helpers shared by the charts -----------------------------


def log2_axis(ax, values):
    """A base-2 log x axis with a plain tick at each of `values`."""
    ax.set_xscale("log", base=2)
    ax.set_xticks(values, [str(v) for v in values])
    ax.minorticks_off()


def _luminance(colour):
    channels = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    r, g, b = (
        c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
        for c in channels
    )
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def text_on(fill):
    """DARK_TEXT or white, whichever contrasts more with `fill` (WCAG
    ratio; PALETTE[3] needs white)."""
    fill_l = _luminance(fill)
    dark = (fill_l + 0.05) / (_luminance(DARK_TEXT) + 0.05)
    light = 1.05 / (fill_l + 0.05)
    return DARK_TEXT if dark >= light else "#ffffff"


def text_box(ax, x, y, width, height, color, text="", **kw):
    """A filled box with centred text, in data coordinates."""
    ax.add_patch(
        Rectangle(
            (x, y), width, height, facecolor=color, edgecolor="none", **kw
        )
    )
    if text:
        ax.text(
            x + width / 2,
            y + height / 2,
            text,
            ha="center",
            va="center",
            color=text_on(color),
        )


def bare(ax):
    """No axes, ticks or frame: the axes are a canvas for a diagram."""
    ax.set_axis_off()
    ax.set_aspect("auto")


def arrow(ax, x0, x1, y):
    """A horizontal arrow from x0 to x1 at height y, in data coordinates."""
    ax.annotate(
        "",
        (x1, y),
        (x0, y),
        arrowprops={"arrowstyle": "->", "color": INK, "linewidth": 1},
    )
