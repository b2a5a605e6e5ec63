"""How a lab block reads on a page: its output first, the code behind it.

A fence with source="lab" runs like any other (course/build/execute.py), and
renders as content tabs made from TABS, in order:

- "Output": what the block printed, labelled as output (a printed
  Markdown table becomes an HTML table), and under it the few lines
  that carry the idea: the block's functions without their docstrings
  and argument checks (`idea="name ..."` picks the functions,
  `idea="none"` shows none);
- "Code": the full code, argument checks included, as it ran.

- "Run in your browser": the same code in an editor, run by Pyodide in
  the reader's browser (`runner`: the data course/build/runner.py made for
  it; docs/assets/run/); left out when the browser cannot run it.

A tab is one entry in TABS: a title and a function from a Lab to the
Markdown of the tab's body; a tab whose body is "" is left out.
"""

import ast
import hashlib
import textwrap
from dataclasses import dataclass

from markdown_exec import MarkdownConverter

CHECKS_MODULE = "snippets.checks"


@dataclass
class Lab:
    language: str
    source: str  # the code that ran, its --8<-- lines expanded
    code: str  # the code shown (pycon: as the transcript reads)
    session: str | None
    output: str  # what the block printed
    html: bool  # the output is HTML, inserted as it is
    result: str  # language of a text output; "": the output is Markdown
    idea: str  # the lines that carry the idea; "" for none
    runner: str  # the runner's data element (course/build/runner.py), or ""
    stash: dict  # placeholder -> HTML, filled in after the conversion


def _fence(language, code, **attributes):
    """A Markdown fence longer than any run of backticks in `code`."""
    ticks = "`" * max(4, _longest_ticks(code) + 1)
    options = "".join(f' {key}="{value}"' for key, value in attributes.items())
    return f"{ticks}{language}{options}\n{code}\n{ticks}"


def _longest_ticks(text):
    best = run = 0
    for char in text:
        run = run + 1 if char == "`" else 0
        best = max(best, run)
    return best


def html(lab, markup):
    """Markdown that stands for `markup`, inserted as it is after the
    conversion ("" stays "")."""
    if not markup:
        return ""
    # named after what it stands for: the same lab, the same Markdown
    digest = hashlib.sha256(str(markup).encode()).hexdigest()[:24]
    key = f'<div class="lab-stash-{len(lab.stash)}-{digest}"></div>'
    lab.stash[key] = markup
    return key


def output_tab(lab):
    if lab.html:
        body = html(lab, lab.output)
    elif lab.result:
        body = _fence(lab.result, lab.output.rstrip("\n"), title="Output")
    else:
        body = lab.output
    parts = [f'<div class="lab-output" markdown="1">\n\n{body}\n\n</div>']
    if lab.idea:
        parts.append(
            _fence(lab.language, lab.idea, title="The lines that do the work")
        )
    return "\n\n".join(parts)


def code_tab(lab):
    return _fence(lab.language, lab.code, title="Full code, as it ran")


def run_tab(lab):
    return html(lab, lab.runner)


# (tab title, Lab -> Markdown), in the order the tabs appear.
TABS = (
    ("Output", output_tab),
    ("Code", code_tab),
    ("Run in your browser", run_tab),
)


def tabbed(lab, tabs=TABS):
    """pymdownx.tabbed Markdown of the lab's tabs."""
    parts = []
    for title, body in tabs:
        text = body(lab)
        if text:
            parts.append(f'=== "{title}"\n\n' + textwrap.indent(text, "    "))
    return "\n\n".join(parts)


def render(md, lab, id_prefix):
    """The HTML of the lab's tabs, converted as markdown-exec converts a
    block's output; `id_prefix` keeps its ids apart from the page's."""
    converter = MarkdownConverter(md, update_toc=False)
    return converter.convert(tabbed(lab), stash=lab.stash, id_prefix=id_prefix)


# --- the lines that carry the idea ----------------------------------------


def _check_names(tree):
    """Names the code imports from snippets/checks.py."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == CHECKS_MODULE:
            names.update(alias.asname or alias.name for alias in node.names)
    return names


def _is_check(statement, checks):
    """An argument check: a call to a snippets.checks helper or to a
    function of the lab named _check..., or an `if` whose only work is
    to raise."""
    if isinstance(statement, ast.Expr) and isinstance(
        statement.value, ast.Call
    ):
        func = statement.value.func
        return isinstance(func, ast.Name) and (
            func.id in checks or func.id.startswith("_check")
        )
    if isinstance(statement, ast.If) and not statement.orelse:
        return all(isinstance(s, ast.Raise) for s in statement.body)
    return False


def _is_docstring(statement):
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, str)
    )


def idea(code, names=None):
    """The functions of `code` (those in `names`, if given) without their
    docstrings and argument checks: the lines a reader needs first."""
    try:
        tree = ast.parse(code)
    except SyntaxError:  # a pycon transcript, or not Python at all
        return ""
    lines = code.split("\n")
    checks = _check_names(tree)
    shown = []
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        if names is not None and node.name not in names:
            continue
        drop = set()
        for statement in node.body:
            if _is_docstring(statement) or _is_check(statement, checks):
                drop.update(range(statement.lineno, statement.end_lineno + 1))
        first = min([node.lineno] + [d.lineno for d in node.decorator_list])
        kept = [
            lines[n - 1]
            for n in range(first, node.end_lineno + 1)
            if n not in drop and lines[n - 1].strip()
        ]
        shown.append("\n".join(kept))
    return "\n\n".join(shown)


def pick(value):
    """The `idea` fence option: None (every function), or a set of
    names (empty for none)."""
    if value is None:
        return None
    if value.strip() == "none":
        return set()
    return set(value.split())
