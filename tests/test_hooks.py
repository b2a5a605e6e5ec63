"""The build's hooks (course/build/hooks.py), in-process, as markdown-exec
tests its formatters: a page's Markdown converted with the site's
extensions and one `Build`. A failing or hanging block stops the build
naming its page and line; a lab reads output first, with the Run tab the
browser can use; the search index gets a light copy of the page."""

import os
import re
from multiprocessing import resource_tracker
from types import SimpleNamespace

import markdown
import pytest
from markdown_exec import markdown_config
from mkdocs.config import load_config

from course import ROOT
from course.build import cache, execute, hooks, labs
from tests.project import processes_in

CONFIG = load_config(str(ROOT / "mkdocs.yml"))
BEFORE = "# A page\n\nSome prose.\n\n"  # the fence opens on line 5
LAB = '''
from snippets.checks import number


def state_GB(params, bytes_per_param=16):
    """Weights, gradients and optimizer state."""
    number("params", params)
    if bytes_per_param > 100:
        raise ValueError("too many bytes")
    return params * bytes_per_param / 1e9


print(f"{state_GB(7e9):.0f} GB")
'''.lstrip()


@pytest.fixture
def render():
    """render(text) -> the HTML the build makes of docs/page.md = text."""
    build = hooks.Build()
    config = SimpleNamespace(
        mdx_configs={k: dict(v) for k, v in CONFIG.mdx_configs.items()},
        plugins={},
    )
    build.on_config(config)
    markdown_config.save(CONFIG.markdown_extensions, config.mdx_configs)

    def convert(text, uri="page.md"):
        file = SimpleNamespace(src_uri=uri, content_string=text)
        numbered = build.on_page_markdown(
            text, page=SimpleNamespace(file=file), config=None, files=None
        )
        md = markdown.Markdown(
            extensions=CONFIG.markdown_extensions,
            extension_configs=config.mdx_configs,
        )
        return md.convert(numbered)

    convert.build = build
    yield convert
    build.stop()
    markdown_config.reset()


def fence(code, options='source="lab" result="text" session="page"'):
    return f'{BEFORE}```python exec="on" {options}\n{code}```\n'


def text(html):
    return re.sub(r"<[^>]+>", "", html)


RAISING = {
    "python": (
        "total = 1\ntotal / 0\n",
        "ZeroDivisionError: division by zero",
    ),
    "pycon": (">>> 1 / 0\n", "ZeroDivisionError: division by zero"),
    "included lab": (
        '--8<-- "snippets/ddp/allreduce.py:model"\n\nallreduce_bytes(0)\n',
        "ValueError: params must be >",
    ),
}


@pytest.mark.parametrize("kind", list(RAISING))
def test_a_raising_block_stops_the_build_naming_its_line(render, kind):
    code, last = RAISING[kind]
    language = "pycon" if kind == "pycon" else "python"
    text = f'{BEFORE}```{language} exec="on"\n{code}```\n'
    with pytest.raises(execute.SnippetError) as stopped:
        render(text)
    assert str(stopped.value).startswith(
        f"docs/page.md:5: code block raised {last}"
    )


def test_a_hanging_block_is_stopped_with_its_process(
    render, monkeypatch, tmp_path
):
    monkeypatch.chdir(tmp_path)  # where the block's process runs
    sleep = "import time\ntime.sleep(100_000)\n"
    with pytest.raises(
        execute.SnippetError, match="still running after 0.5 s"
    ):
        render(fence(sleep, 'timeout="0.5"'))
    assert processes_in(tmp_path, grace_s=0) == []
    assert "2" in render(fence("print(1 + 1)\n", ""))  # in a new one
    monkeypatch.setenv("SNIPPET_TIMEOUT", "0.5")
    with pytest.raises(
        execute.SnippetError, match="page.md:5: code block still"
    ):
        render(fence(sleep, ""))
    with pytest.raises(execute.SnippetError) as refused:
        render(fence("print(1)\n", 'timeout="soon"'))
    assert str(refused.value) == (
        "docs/page.md:5: timeout (or SNIPPET_TIMEOUT) must be a positive "
        "number of seconds, got 'soon'"
    )


def test_the_line_counts_the_front_matter(render):
    with pytest.raises(execute.SnippetError, match="docs/page.md:8: code"):
        render("---\nprose_numbers: [1]\n---\n" + fence("1 / 0\n", ""))


def test_a_session_is_named_after_its_page(render):
    with pytest.raises(execute.SnippetError, match="name it after its page"):
        render(fence("print(1)\n", 'session="other"'))
    assert "42" in render(fence("print(42)\n", 'session="page-two"'))


def test_a_lab_shows_its_output_first_and_its_full_code_a_tab_away(render):
    html = render(fence(LAB))
    labels = re.findall(r"<label[^>]*>([^<]+)</label>", html)
    assert labels == [title for title, _ in labs.TABS]
    output = html.index("112 GB")
    idea = html.index("The lines that do the work")
    full = html.index("Full code, as it ran")
    assert output < idea < full
    assert 'number("params", params)' in text(html[full:])
    assert "number(" not in text(html[idea:full])  # checks left out


def test_a_kept_block_runs_no_more_and_an_edited_one_after_its_session(
    render, tmp_path, monkeypatch
):
    """With the cache on (`mkdocs serve`), each block's HTML is kept: the
    page built again, or after a prose edit, runs nothing. A block
    edited after kept ones runs them first, in a Python that never ran
    them (a new serve), so it finds their globals. Output with a heading
    is not kept."""
    build = render.build
    build.kept = tmp_path
    setup = '```python exec="on" session="page"\nx = 20\nprint(x)\n```\n\n'
    page = fence("print(x + 1)\n").replace(BEFORE, BEFORE + setup)
    first = render(page)
    assert ">21" in first and len(list(tmp_path.iterdir())) == 2
    ran = []
    real = build.run
    monkeypatch.setattr(
        build,
        "run",
        lambda code, *a, **kw: ran.append(code) or real(code, *a, **kw),
    )
    assert render(page) == first and ran == []
    render(page.replace("Some prose.", "Some prose.\n\nMore, above it."))
    assert ran == []  # its line changed, its HTML did not
    build.stop()  # the next block runs in a new process
    edited = render(page.replace("x + 1", "x + 2"))
    assert ran == ["x = 20\nprint(x)", "print(x + 2)"] and ">22" in edited
    kept = len(list(tmp_path.iterdir()))
    render(fence('print("## A heading")\n', 'session="page"'))
    assert len(list(tmp_path.iterdir())) == kept  # it would miss the toc


def test_a_printed_markdown_table_becomes_a_table(render):
    table = 'print("| a | b |")\nprint("| --- | --- |")\nprint("| 1 | 2 |")\n'
    html = render(fence(table, 'source="lab"'))
    assert "<table>" in html and "<td>2</td>" in html


def test_the_run_tab_carries_the_session_and_is_left_out_when_it_cannot_run(
    render,
):
    first = '```python exec="on" session="page"\nx = 21\n```\n\n'
    html = render(
        fence("print(x * 2)\n", 'source="lab" session="page"').replace(
            BEFORE, BEFORE + first
        )
    )
    data = re.search(r"data-course-runner>(.*?)</script>", html)[1]
    assert '"setup": ["x = 21"]' in data
    assert '"limit": 120.0' in data  # a Run runs the setup's 60 s too
    assert ">42" in html
    for needs in (
        "import course.charts",
        "from snippets.torchrun import model",
    ):
        refused = f'```python exec="on" session="page"\n{needs}\n```\n\n'
        html = render(
            fence("print(1)\n", 'source="lab" session="page"').replace(
                BEFORE, BEFORE + refused
            )
        )
        assert "Run in your browser" not in html, needs


def test_the_search_index_reads_a_light_copy_of_the_page():
    build = hooks.Build()
    figure = (
        "<svg><text>tick 1e3</text></svg>"
        '<pre><code><span class="n">x</span></code></pre>'
    )
    file = SimpleNamespace(src_uri="page.md")
    light = build.on_page_content(
        figure,
        page=SimpleNamespace(file=file, url="p/"),
        config=None,
        files=None,
    )
    assert light == "<pre><code>x</code></pre>"
    shown = SimpleNamespace(file=file, url="p/", content=light)
    build.on_page_context({}, page=shown, config=None, nav=None)
    assert shown.content == figure


def test_each_build_runs_its_blocks_in_a_process_of_its_own(
    monkeypatch, tmp_path
):
    """`mkdocs serve` keeps one Python: a lab edited since the last build
    must not answer from the module imported before the edit. Each
    build's blocks run in a new process, ended with the build."""
    monkeypatch.setattr(hooks.vendor, "check", lambda: None)
    monkeypatch.setattr(hooks.runner, "archive", lambda: ("labs.zip", ""))
    # Python's resource tracker starts with this process's first spawned
    # child and lives as long as this process: start it outside the folder
    resource_tracker.ensure_running()
    monkeypatch.chdir(tmp_path)
    lab = tmp_path / "lab_for_the_test.py"
    ask = "import lab_for_the_test\nprint(lab_for_the_test.ANSWER)"
    answers = []
    for answer in (1, 2):
        lab.write_text(f"ANSWER = {answer}\n")
        # an edit a second after the last: Python takes a module from
        # __pycache__ while its source keeps the same size and mtime in
        # whole seconds, so two edits in one second would not show
        os.utime(lab, (answer, answer))
        build = hooks.Build()
        build.on_pre_build(config=None)
        answers.append(
            build.run(f"import sys\nsys.path[:0] = ['.']\n{ask}", "p:1")
        )
        assert processes_in(tmp_path, grace_s=0) != []
        build.on_build_error(error=None)
        assert processes_in(tmp_path, grace_s=0) == []
    assert answers == ["1\n", "2\n"]


def test_a_notebook_page_loses_jupyterlab_css_and_random_cell_ids():
    html = (
        '<style type="text/css">.x{word-break:break-all}</style>'
        '<div id="cell-id=8f2c"></div><div id="cell-id=a913"></div>'
        '<div class="highlight-ipynb hl-python"><pre>x = 1</pre></div>'
    )

    def content(uri):
        page = SimpleNamespace(file=SimpleNamespace(src_uri=uri), url=uri)
        build = hooks.Build()
        build.on_page_content(html, page=page, config=None, files=None)
        return build.full[uri]

    out = content("exercises/ms2_1.py")
    assert "<style" not in out and "break-all" not in out
    assert re.findall(r'id="cell-id=(\w+)"', out) == ["1", "2"]
    assert '<pre tabindex="0">x = 1</pre>' in out
    assert content("ddp.md") == html


def test_a_kept_value_is_made_once_for_each_content_of_its_sources(
    tmp_path, monkeypatch
):
    """cache.kept: made once, then read back; made again when a module
    the computing module imports (here snippets.planner.fit) changes."""
    monkeypatch.setattr(cache, "_used", tmp_path)
    made = []

    def compute():
        made.append(len(made) + 1)
        return {"made": made[-1]}

    compute.__module__ = "snippets.planner.accuracy"
    assert cache.kept("value", compute) == cache.kept("value", compute)
    assert made == [1]
    edited = tmp_path / "fit.py"
    fit = cache.source("snippets.planner.fit")
    edited.write_bytes(fit.read_bytes() + b"\n# an edit\n")
    real = cache.source
    monkeypatch.setattr(
        cache,
        "source",
        lambda name: edited if real(name) == fit else real(name),
    )
    assert cache.kept("value", compute) == {"made": 2}
    assert len(list((tmp_path / "value").iterdir())) == 1  # the old key
