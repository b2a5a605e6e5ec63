"""Formulas rendered to MathML at build time: no script, no CDN.

Used by pymdownx.superfences (```math fences) and pymdownx.inlinehilite
(`#!math ...` inline code); browsers render MathML natively.
"""

from html import escape

from latex2mathml.converter import convert
from markupsafe import Markup
from pymdownx.superfences import SuperFencesException


class FormulaError(SuperFencesException):
    """A formula latex2mathml cannot render: stop the build."""


def _mathml(source, display):
    """The formula as MathML, its TeX kept in MathML's own alttext
    attribute (what screen readers and the llms.txt text read)."""
    try:
        mathml = convert(source.strip(), display=display)
    except Exception as error:  # latex2mathml raises many kinds
        raise FormulaError(
            f"cannot render formula {source!r}: {error}"
        ) from error
    alt = escape(source.strip(), quote=True)
    return mathml.replace("<math ", f'<math alttext="{alt}" ', 1)


def block(source, language, css_class, options, md, **kwargs):
    """Superfences formatter for a display formula."""
    return Markup(f'<div class="arithmatex">{_mathml(source, "block")}</div>')


def inline(source, language, css_class, md):
    """Inlinehilite formatter for an inline formula (a string is stashed
    as raw HTML by inlinehilite)."""
    return f'<span class="arithmatex">{_mathml(source, "inline")}</span>'
