"""The exercise notebooks run, state the numbers the labs give, and the
copy a reader downloads runs on its own.

Every notebook is executed twice: as the site renders it (in the repo,
labs imported from snippets/) and as a reader gets it (the exported
.ipynb, in a temporary folder, with the repository off sys.path). Both
runs must print the same thing.
"""

import asyncio
import os
import pathlib
import re
import subprocess
import sys
import textwrap

import jupytext
import nbclient
import nbformat
import pytest
import yaml
from mkdocs.config import load_config

from course import jupyter, notebooks
from course.fences import ROOT
from course.notebooks import NOTEBOOKS, SITE_ONLY, export
from tests.prose_numbers import (
    COMMENT,
    INLINE_CODE,
    matches,
    prose_figures,
    source_values,
)

EXERCISES = ROOT / "docs" / "exercises"


def client(nb, cwd):
    return nbclient.NotebookClient(
        nb,
        kernel_name="python3",
        timeout=120,
        allow_errors=False,
        resources={"metadata": {"path": str(cwd)}},
    )


def run(nb, cwd):
    client(nb, cwd).execute()
    return nb


def printed(nb):
    """What each code cell printed, in order, site-only cells left out."""
    return [
        "".join(
            o.get("text", "") for o in c.outputs if o.output_type == "stream"
        )
        for c in nb.cells
        if c.cell_type == "code"
        and SITE_ONLY not in c.metadata.get("tags", [])
    ]


@pytest.fixture(scope="module")
def site_runs():
    """Every notebook as the build runs it; the kernels run side by side."""
    nbs = {n: jupytext.read(EXERCISES / f"{n}.py") for n in NOTEBOOKS}

    async def run_all():
        await asyncio.gather(
            *(client(nb, ROOT).async_execute() for nb in nbs.values())
        )

    asyncio.run(run_all())
    return nbs


def test_every_exercise_file_is_a_known_notebook():
    files = sorted(p.stem for p in EXERCISES.glob("*.py"))
    assert files == sorted(NOTEBOOKS)
    index = (EXERCISES / "index.md").read_text(encoding="utf-8")
    for name in NOTEBOOKS:
        assert f"]({name}.py)" in index, f"index.md does not link {name}"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_task_comes_before_the_worked_answer(name):
    nb = jupytext.read(EXERCISES / f"{name}.py")
    first = nb.cells[0]
    assert first.cell_type == "markdown"
    assert "**Your task**" in first.source and "**Hint.**" in first.source
    headings = [
        c.source.split("\n", 1)[0]
        for c in nb.cells
        if c.cell_type == "markdown"
    ]
    assert headings[1] == "## Worked answer"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_prose_numbers_trace_to_code_or_output(name, site_runs):
    """The rule of the site's pages, applied to the notebooks: a number
    in a markdown cell must be one the code or its output gives."""
    nb = site_runs[name]
    sources = [c.source for c in nb.cells if c.cell_type == "code"]
    sources += printed(nb)
    values = source_values(sources)
    bad = []
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        prose = COMMENT.sub(" ", INLINE_CODE.sub(" ", cell.source))
        prose = re.sub(r"^#+ MS\d\.\d", "", prose, flags=re.M)
        bad += [f.text for f in prose_figures(prose) if not matches(f, values)]
    assert not bad, f"{name}: numbers in prose no cell gives: {bad}"


def test_ms2_1_states_the_lab_numbers(site_runs):
    from snippets.strategy.choose import RUNGS
    from snippets.strategy.plan import plan
    from snippets.zero.memory import memory_per_gpu

    out = "".join(printed(site_runs["ms2_1"]))
    p = 13_000_000_000
    for n in (8, 64):
        ddp = memory_per_gpu("ddp", p, n)
        zero3 = memory_per_gpu("zero3", p, n)
        assert f"N={n:>2}: DDP {ddp:6.2f} GB" in out
        assert f"ZeRO-3 {zero3:5.2f} GB" in out
    assert out.count(f"-> {RUNGS['fsdp']}") == 2
    # The answer starts where plan says, for the notebook's assumptions.
    shape = {"layers": 40, "hidden": 5120, "heads": 40}
    chosen = plan(p, 8, 80, seq_len=4096, micro_batch=1, **shape)
    assert chosen["strategy"] == "zero2"
    zero2 = chosen["per_gpu_GB"]["zero2"]
    assert f"Start on ZeRO-2 on 8 GPUs: {zero2:.2f} GB of state" in out
    assert out.count("lowest rung that fits: zero2") == 2


def test_ms2_2_states_the_lab_numbers(site_runs):
    from snippets.comms.cost import LINKS_GBps, comms_cost

    out = "".join(printed(site_runs["ms2_2"]))
    job = {
        "params": 7_000_000_000,
        "world_size": 64,
        "tflops_per_gpu": 989 * 0.40,
        "tokens_per_gpu": 8192,
    }
    assert LINKS_GBps["Ethernet, 10 Gb/s"] == 1.25  # not the seed's 12.5
    r = comms_cost(interconnect_GBps=1.25, **job)
    assert f"crossover: {r['crossover_GBps']:.1f} GB/s" in out
    need = -(-r["comms_s"] // r["compute_s"])
    assert (
        f"Ethernet, 10 Gb/s          needs accum_steps >= {need:2.0f}" in out
    )
    for k in (2, 4):
        moved = comms_cost(interconnect_GBps=1.25, accum_steps=k, **job)
        assert moved["crossover_GBps"] == pytest.approx(
            r["crossover_GBps"] / k
        )
        assert f"accum_steps={k:>2}: crossover" in out


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_download_runs_alone_and_prints_what_the_site_shows(
    name, site_runs, tmp_path
):
    text = export(name)
    assert text == export(name), "the export is not deterministic"
    nb = nbformat.reads(text, as_version=4)
    nbformat.validate(nb)
    assert "from course" not in text and SITE_ONLY not in text
    # The harness, not the notebook: take the repository off sys.path
    # (the venv's .pth puts it there) before the first cell runs.
    guard = nbformat.v4.new_code_cell(
        textwrap.dedent(
            f"""\
            import importlib.util, sys
            sys.path[:] = [p for p in sys.path
                           if p not in ({str(ROOT)!r}, '')]
            assert importlib.util.find_spec("snippets") is None
            """
        )
    )
    nb.cells.insert(0, guard)
    run(nb, tmp_path)
    nb.cells.pop(0)
    assert (tmp_path / "course_labs" / "snippets" / "checks.py").is_file()
    alone = printed(nb)
    assert alone[0].startswith("labs ready:")  # the setup cell
    assert alone[1:] == printed(site_runs[name])


def colab(name):
    slug = site_config().repo_url.removeprefix("https://github.com/")
    return (
        f"https://colab.research.google.com/github/{slug.strip('/')}/blob/"
        f"{notebooks.COLAB_BRANCH}/{name}.ipynb"
    )


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_site_cell_offers_the_download_and_colab(name, site_runs):
    cell = next(
        c
        for c in site_runs[name].cells
        if SITE_ONLY in c.metadata.get("tags", [])
    )
    html = cell.outputs[0]["data"]["text/html"]
    # the page is exercises/NAME/, the file exercises/NAME.ipynb
    assert f'download="{name}.ipynb" href="../{name}.ipynb"' in html
    assert f'href="{colab(name)}"' in html


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_publish_writes_the_download_into_the_site(name, tmp_path):
    html = notebooks.publish(name, site_dir=tmp_path)
    assert (tmp_path / "exercises" / f"{name}.ipynb").read_text() == export(
        name
    )
    assert f'download="{name}.ipynb" href="{name}.ipynb"' in html
    assert f'href="{colab(name)}"' in html
    # outside a build: nothing written, the same links printed
    assert notebooks._site_dir_being_built() is None
    assert notebooks.publish(name) == html
    page = (EXERCISES / "index.md").read_text(encoding="utf-8")
    assert f'print(publish("{name}"))' in page


def test_a_build_publishes_the_download(tmp_path):
    """The block, run by the site's strict formatter in a real build,
    finds the site being built and writes the notebook there."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text(
        '# Home\n\n```python exec="on" html="true"\n'
        "from course.notebooks import publish\n\n"
        'print(publish("ms2_1"))\n```\n'
    )
    (tmp_path / "mkdocs.yml").write_text(
        textwrap.dedent(
            """\
            site_name: t
            strict: true
            hooks: [HOOKS]
            plugins:
              - markdown-exec:
                  languages: [tree]
            markdown_extensions:
              - pymdownx.superfences:
                  custom_fences:
                    - name: python
                      class: python
                      validator: !!python/name:markdown_exec.validator
                      format: !!python/name:course.execute.formatter
            """
        ).replace("HOOKS", str(ROOT / "course" / "hooks.py"))
    )
    subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q"],
        cwd=tmp_path,
        check=True,
        capture_output=True,
    )
    built = tmp_path / "site" / "exercises" / "ms2_1.ipynb"
    assert built.read_text() == export("ms2_1")
    assert (
        'href="ms2_1.ipynb"' in (tmp_path / "site" / "index.html").read_text()
    )


def test_export_command_writes_every_notebook(tmp_path):
    assert notebooks.main(["export", str(tmp_path)]) == 0
    for name in NOTEBOOKS:
        assert (tmp_path / f"{name}.ipynb").read_text() == export(name)


def site_config():
    return load_config(str(ROOT / "mkdocs.yml"))


def plugin_config():
    return site_config().plugins["mkdocs-jupyter"].config


def test_plugin_executes_strictly_and_only_the_exercises():
    config = plugin_config()
    assert config["include"] == ["exercises/*.py"]
    assert config["execute"] is True
    assert config["allow_errors"] is False
    assert config["remove_tag_config"] == {"remove_input_tags": [SITE_ONLY]}
    assert config["cache"] == jupyter.cache()
    assert config["cache_dir"] == jupyter.cache_dir()
    assert config["no_prompt"] is True
    # links("NAME") says "../NAME.ipynb": the pages are exercises/NAME/
    assert "use_directory_urls: false" not in (ROOT / "mkdocs.yml").read_text()


@pytest.mark.parametrize("ci, cached", [("true", False), ("", True)])
def test_ci_turns_the_notebook_cache_off(ci, cached):
    code = (
        "from mkdocs.config import load_config\n"
        "c = load_config('mkdocs.yml')\n"
        "print(c.plugins['mkdocs-jupyter'].config['cache'])\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    if ci:
        env["CI"] = ci
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.strip() == str(cached)


def test_a_failing_cell_fails_the_build(tmp_path):
    """The plugin options from mkdocs.yml, on a notebook that raises."""
    config = dict(plugin_config(), cache=False, cache_dir=str(tmp_path / "c"))
    (tmp_path / "docs" / "exercises").mkdir(parents=True)
    (tmp_path / "docs" / "index.md").write_text("# Home\n")
    (tmp_path / "docs" / "exercises" / "bad.py").write_text(
        '# %% [markdown]\n# # Bad\n\n# %%\nraise RuntimeError("cell broke")\n'
    )
    (tmp_path / "mkdocs.yml").write_text(
        yaml.safe_dump(
            {
                "site_name": "t",
                "strict": True,
                "nav": ["index.md"],
                "plugins": [{"mkdocs-jupyter": config}],
            }
        )
    )
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert result.returncode != 0
    assert "cell broke" in result.stderr
    assert not (tmp_path / "site" / "exercises" / "bad").exists()


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_the_small_percent_reader_agrees_with_jupytext(name):
    path = EXERCISES / f"{name}.py"
    assert notebooks.read_percent(path) == [
        (c.cell_type, c.source, c.metadata.get("tags", []))
        for c in jupytext.read(path).cells
    ]


RENDER = (
    "import hashlib, sys\n"
    "import course.jupyter\n"
    "from mkdocs_jupyter import convert\n"
    "html = convert.nb2html(sys.argv[1], execute=True,"
    " kernel_name='python3', allow_errors=False,"
    " remove_tag_config={'remove_input_tags': ['site-only']})\n"
    "print(hashlib.sha256(html.encode()).hexdigest())\n"
)


def test_a_notebook_page_is_identical_across_two_builds():
    """Without course.jupyter the cells get random ids, which
    nbconvert writes into the page."""
    path = str(EXERCISES / f"{NOTEBOOKS[0]}.py")
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", RENDER, path],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        for _ in range(2)
    ]
    digests = [run.communicate(timeout=180)[0].strip() for run in runs]
    assert all(run.returncode == 0 for run in runs)
    assert digests[0] == digests[1]


def test_editing_a_lab_starts_a_fresh_notebook_cache(tmp_path, monkeypatch):
    """The plugin keys its cache on the notebook text only; the cache
    folder is named after what the notebooks import, so a changed lab
    misses, and a lab no notebook imports does not."""
    import course.cache
    import course.jupyter as jupyter

    def write(rel, text):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)

    write("docs/exercises/nb.py", "# %%\nfrom snippets.lab import X\n")
    write("snippets/lab.py", "from snippets.base import Y\nX = Y\n")
    write("snippets/base.py", "Y = 1\n")
    write("snippets/other.py", "Z = 1\n")
    monkeypatch.setattr(course.cache, "ROOT", tmp_path)
    monkeypatch.setattr(jupyter, "EXERCISES", tmp_path / "docs" / "exercises")
    first = jupyter.cache_dir()
    pathlib.Path(first).mkdir(parents=True)
    write("snippets/other.py", "Z = 2\n")
    assert jupyter.cache_dir() == first
    write("snippets/base.py", "Y = 2\n")
    second = jupyter.cache_dir()
    assert second != first
    assert not pathlib.Path(first).exists(), "the stale cache is removed"


def test_notebook_pages_take_the_site_code_colours():
    """The rules for the notebook pages are a stylesheet of the site,
    not a string the links cell sends."""
    css = ROOT / "docs" / "assets" / "notebooks.css"
    assert "assets/notebooks.css" in (ROOT / "mkdocs.yml").read_text()
    rules = css.read_text(encoding="utf-8")
    assert ".highlight-ipynb" in rules and "--md-code-hl-" in rules
    assert "<style" not in notebooks.Links("ms2_1")._repr_html_()


def test_the_notebook_hook_is_loaded_and_strips_jupyterlab_css():
    """mkdocs.yml loads course/notebook_pages.py (a second `hooks:` key
    would silently drop it), and the hook removes the inlined styles
    from notebook pages only, making code boxes focusable."""
    from types import SimpleNamespace

    from course import browser, notebook_pages

    assert "course/notebook_pages.py" in browser.mkdocs_config().plugins
    html = (
        '<style type="text/css">.x{word-break:break-all}</style>'
        '<div class="highlight-ipynb hl-python"><pre>x = 1</pre></div>'
    )

    def page(uri):
        return SimpleNamespace(file=SimpleNamespace(src_uri=uri))

    out = notebook_pages.on_page_content(
        html, page("exercises/ms2_1.py"), 0, 0
    )
    assert "<style" not in out and "break-all" not in out
    assert '<pre tabindex="0">x = 1</pre>' in out
    assert notebook_pages.on_page_content(html, page("ddp.md"), 0, 0) == html
