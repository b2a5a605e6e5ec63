"""A source="lab" block (course/labs.py), rendered in-process as the
build renders it: output first, the idea under it, the full code in the
next tab, and the build still stops when the block fails."""

import re

import markdown
import pytest
from markdown_exec import markdown_config

from course import execute, labs

EXTENSIONS = ["md_in_html", "tables", "pymdownx.highlight", "pymdownx.tabbed"]
CONFIGS = {
    "pymdownx.tabbed": {"alternate_style": True},
    "pymdownx.superfences": {
        "custom_fences": [
            {
                "name": "python",
                "class": "python",
                "validator": __import__("markdown_exec").validator,
                "format": execute.formatter,
            }
        ]
    },
}

LAB = '''
def state_GB(params, bytes_per_param=16):
    """Weights, gradients and optimizer state."""
    number("params", params)
    if bytes_per_param > 100:
        raise ValueError("too many bytes")
    return params * bytes_per_param / 1e9


print(f"{state_GB(7e9):.0f} GB")
'''.lstrip()
CHECKS = (
    "from snippets.checks import number\n"
    "hidden = True  # markdown-exec: hide\n"
)


@pytest.fixture
def render():
    extensions = EXTENSIONS + ["pymdownx.superfences"]
    markdown_config.save(extensions, CONFIGS)

    def convert(text):
        md = markdown.Markdown(
            extensions=extensions, extension_configs=CONFIGS
        )
        return md.convert(text)

    yield convert
    markdown_config.reset()


def fence(code, options='source="lab" result="text" session="lab-test"'):
    return f'```python exec="on" {options}\n{code}```\n'


def text(html):
    return re.sub(r"<[^>]+>", "", html)


def test_idea_drops_docstrings_and_argument_checks():
    code = CHECKS + LAB
    assert labs.idea(code) == (
        "def state_GB(params, bytes_per_param=16):\n"
        "    return params * bytes_per_param / 1e9"
    )
    assert labs.idea(code, labs.pick("none")) == ""
    assert labs.idea(code, labs.pick("other")) == ""


def test_output_comes_first_and_the_full_code_is_a_tab_away(render):
    html = render(fence(CHECKS + LAB))
    labels = re.findall(r"<label[^>]*>([^<]+)</label>", html)
    assert labels == [title for title, _ in labs.TABS]
    assert labels == ["Output", "Code", "Run in your browser"]
    output = html.index("112 GB")
    idea = html.index("The lines that do the work")
    full = html.index("Full code, as it ran")
    assert output < idea < full
    code_tab = text(html[full:])
    assert 'number("params", params)' in code_tab
    assert "raise ValueError" in code_tab
    assert "markdown-exec: hide" not in html
    assert "number(" not in text(html[idea:full])


def test_a_printed_markdown_table_becomes_a_table(render):
    table = 'print("| a | b |")\nprint("| --- | --- |")\nprint("| 1 | 2 |")\n'
    html = render(fence(table, 'source="lab" session="lab-table"'))
    assert "<table>" in html and "<td>2</td>" in html


def test_a_tab_is_one_entry(render):
    lab = labs.Lab(
        "python", "x = 1", "x = 1", None, "1", False, "text", "", {}
    )
    two = labs.TABS[:2]
    run = ("Run in your browser", lambda lab: labs.html(lab, "<b>run</b>"))
    assert labs.tabbed(lab, two + (run,)).count('=== "') == 3
    assert list(lab.stash.values()) == ["<b>run</b>"]
    # a block that cannot run in a browser gets no empty tab
    none = ("Run in your browser", lambda lab: labs.html(lab, ""))
    assert labs.tabbed(lab, two + (none,)).count('=== "') == 2


def test_a_lab_the_browser_can_run_gets_the_runner_tab(render):
    html = render(fence("x = 6 * 7\nprint(x)\n"))
    assert "Run in your browser" in html
    assert "data-course-runner" in html
    html = render(fence("import course.figures\nprint(1)\n"))
    assert "Run in your browser" not in html


def test_a_raising_lab_still_stops_the_build(render):
    with pytest.raises(execute.SnippetError, match="ZeroDivisionError"):
        render(fence("1 / 0\n"))


def test_a_hanging_lab_is_stopped(render):
    # A sleep, not a busy loop: the abandoned thread ends on its own.
    options = 'source="lab" timeout="0.3" session="lab-hang"'
    with pytest.raises(execute.SnippetError, match="still running"):
        render(fence("import time\ntime.sleep(2)\n", options))
