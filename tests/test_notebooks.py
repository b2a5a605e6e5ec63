"""The exercise notebooks run, state the numbers the labs give, and the
copy a reader downloads runs on its own and is what the site ships.

Every notebook is executed twice: as the site renders it (in the repo,
labs imported from snippets/) and as a reader gets it (the exported
.ipynb, in a temporary folder, with the repository off sys.path). Both
runs must print the same thing.
"""

import asyncio
import re
import tempfile
import textwrap

import jupytext
import nbclient
import nbformat
import pytest
from jupyter_core.utils import run_sync
from mkdocs.config import load_config
from traitlets.config import Config

from course import ROOT
from course.build import notebooks
from course.build.notebooks import NOTEBOOKS, SITE_ONLY, export
from tests.prose_numbers import (
    COMMENT,
    INLINE_CODE,
    matches,
    prose_figures,
    source_values,
)

EXERCISES = ROOT / "docs" / "exercises"


def client(nb, cwd):
    """A client whose kernel talks over files in its own temporary
    folder (IPC), not TCP: jupyter_client picks a TCP port by binding
    and releasing it, and the torchrun tests beside these took one in
    between ("Address already in use"; the kernel died)."""
    sockets = tempfile.mkdtemp(prefix="kernel-")
    transport = {"transport": "ipc", "ip": f"{sockets}/kernel"}
    return nbclient.NotebookClient(
        nb,
        kernel_name="python3",
        timeout=120,
        allow_errors=False,
        resources={"metadata": {"path": str(cwd)}},
        config=Config({"KernelManager": transport}),
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

    # A browser test on this worker may have left Playwright's event loop
    # running in this thread; run_sync then runs the kernels on a thread of
    # their own instead of failing as asyncio.run() would.
    run_sync(run_all)()
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
    shown = RUNGS["fsdp"].replace(": ", ":\n  ")
    assert out.count(f"-> {shown}") == 2
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
    slug = CONFIG.repo_url.removeprefix("https://github.com/").strip("/")
    return (
        f"https://colab.research.google.com/github/{slug}/blob/"
        f"{notebooks.COLAB_BRANCH}/{name}.ipynb"
    )


CONFIG = load_config(str(ROOT / "mkdocs.yml"))


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_the_site_cell_and_the_exercises_page_link_the_download(
    name, site_runs, tmp_path
):
    cell = next(
        c
        for c in site_runs[name].cells
        if SITE_ONLY in c.metadata.get("tags", [])
    )
    html = cell.outputs[0]["data"]["text/html"]
    # the page is exercises/NAME/, the file exercises/NAME.ipynb
    assert f'download="{name}.ipynb" href="../{name}.ipynb"' in html
    assert f'href="{colab(name)}"' in html
    page = (EXERCISES / "index.md").read_text(encoding="utf-8")
    assert f'print(links("{name}", base=""))' in page
    notebooks.publish(tmp_path)  # as the build does, after the pages
    assert (tmp_path / "exercises" / f"{name}.ipynb").read_text() == export(
        name
    )


def test_the_plugin_runs_the_exercises_strictly_and_only_them():
    config = CONFIG.plugins["mkdocs-jupyter"].config
    assert config["include"] == ["exercises/*.py"]
    assert config["execute"] is True
    assert config["allow_errors"] is False  # a raising cell stops the build
    assert config["remove_tag_config"] == {"remove_input_tags": [SITE_ONLY]}
    assert config["no_prompt"] is True
