"""The charts: accessible, drawn from the labs, kept under the one cache
key. (That a fresh process draws them byte for byte again,
tests/test_build.py checks on the whole site; the pipeline schedule
lab they draw from, tests/test_pipeline.py.)"""

import math
import re
import shutil
from itertools import product

import pytest

from course import ROOT, charts
from course.build import cache
from course.charts import (
    course_map,
    draw,
    figure,
    names,
    strategy,
    zero_stages,
)
from course.charts._common import COMMS_JOB, P7B
from snippets.comms.cost import comms_cost
from snippets.ddp.allreduce import allreduce_bytes
from snippets.pipeline.bubble import bubble_fraction
from snippets.zero.memory import memory_per_gpu

# Drawing every chart takes seconds alone, minutes under load: once, on
# one worker.
pytestmark = [pytest.mark.timeout(300), pytest.mark.xdist_group("figures")]


@pytest.fixture(scope="module")
def figures():
    """Every chart, as the pages print it: from the cache, under the key
    of the current sources (course/build/cache.py), drawn where the
    cache lacks it. The slow test below draws each one afresh."""
    return {name: figure(name) for name in names()}


def project_copy(dest):
    """course/ and snippets/ of the checkout, without caches."""
    for folder in ("course", "snippets"):
        shutil.copytree(
            ROOT / folder,
            dest / folder,
            ignore=shutil.ignore_patterns("__pycache__"),
        )
    return dest


# --- the charts -------------------------------------------------------


@pytest.mark.slow  # draws every chart again
def test_the_cache_gives_back_the_drawn_bytes(figures):
    for name, html in figures.items():
        assert draw(name) == html, name
        assert figure(name) == html, name  # a second call, from the cache


@pytest.mark.slow  # starts a process pool
def test_the_build_draws_charts_ahead_in_a_pool_it_ends(tmp_path, monkeypatch):
    """course/charts/__init__.py `Ahead`: the charts are drawn last page
    first into the cache; a chart the pool is drawing or has drawn is
    waited for, one it has not started is left to the page; close()
    ends the pool's worker."""
    monkeypatch.setattr(cache, "_used", tmp_path)  # the pool's store too
    ahead = charts.Ahead(["ring", "bubble", "ring"])
    try:
        assert list(ahead.futures) == ["ring", "bubble"]
        ahead.wait_for("ring", limit=60)
        folder = cache.folder("figures")
        assert (folder / "ring.html").read_text() == charts.draw("ring")
        ahead.wait_for("bubble", limit=60)  # drawn, or left to the page
        assert figure("bubble") == charts.draw("bubble")
    finally:
        ahead.close()
    assert ahead.workers and not any(w.is_alive() for w in ahead.workers)
    assert charts.Ahead(["ring", "bubble"]).pool is None  # all in the cache


def test_figures_have_alt_text_title_and_caption(figures):
    for name, html in figures.items():
        svg = re.search(r"<svg\b[^>]*>", html).group(0)
        assert 'role="img"' in svg, name
        label = re.search(r'aria-label="([^"]+)"', svg).group(1)
        assert len(label) > 60, (name, label)
        title = re.search(r"<svg\b[^>]*><title>([^<]+)</title>", html)
        assert title and len(title.group(1)) > 15, name
        caption = re.search(r"<figcaption>([^<]+)</figcaption>", html)
        assert caption and len(caption.group(1)) > 60, name
        assert html.startswith("<figure") and html.endswith("</figure>")


def test_figures_follow_the_page_colour_and_stay_small(figures):
    ids = []
    for name, html in figures.items():
        assert "currentColor" in html, name
        assert "#0a0b0c" not in html, name  # the sentinel is all replaced
        assert "#000000" not in html, f"{name}: black would vanish in dark"
        # transparent background: the figure and axes patches unfilled
        assert "fill: #ffffff" not in html.split("<text", 1)[0], name
        assert "<?xml" not in html and "<metadata>" not in html, name
        assert not re.search(r'<svg[^>]*\swidth="', html), name
        assert len(html.encode()) < 100_000, (name, len(html.encode()))
        ids += re.findall(r'\sid="([^"]+)"', html)
    assert len(ids) == len(set(ids)), "an id repeats across figures"


def test_figure_numbers_come_from_the_labs(figures):
    p7b, job = P7B, COMMS_JOB
    sent = allreduce_bytes(p7b, 2, 64)["sent_per_rank_GB"]
    assert f"{sent:g} GB with 64" in figures["allreduce-factor"]
    ddp = memory_per_gpu("ddp", p7b, 8)
    assert f"DDP needs {ddp:.0f} GB" in figures["memory"]
    cross = comms_cost(interconnect_GBps=1, **job)["crossover_GBps"]
    assert f"below {cross:.1f} GB/s" in figures["comms"]
    assert f"{bubble_fraction(4, 16):.1%}" in figures["bubble"]
    assert f"idle {bubble_fraction(4, 8):.1%}" in figures["schedule"]


def test_unknown_figure_is_refused():
    listed = ", ".join(repr(n) for n in names())
    for bad in ("memroy", "zero_stages", "_common", "../figures"):
        with pytest.raises(ValueError) as refused:
            figure(bad)
        assert str(refused.value) == (
            f"name must be one of {listed}; got {bad!r}"
        )
    assert "'accumulation', 'activations', 'allreduce-factor'" in listed


def test_pages_name_only_known_figures():
    named = re.findall(
        r'figure\("([^"]+)"\)',
        "\n".join(p.read_text() for p in (ROOT / "docs").rglob("*.md")),
    )
    assert named, "no page prints a figure"
    assert set(named) == set(names()), "a chart no page prints"
    assert len(named) == len(set(named)), "a figure is printed twice"


def test_the_cache_key_follows_the_labs_and_the_build_code(tmp_path):
    """One key for every chart: an edit under snippets/ or course/
    changes it (every chart is drawn again), an edit elsewhere does not."""
    project = project_copy(tmp_path)
    (project / "docs").mkdir()
    before = cache.key(project)
    (project / "docs" / "page.md").write_text("prose\n")
    assert cache.key(project) == before
    lab = project / "snippets" / "pipeline" / "bubble.py"
    lab.write_text(lab.read_text() + "\n# edited\n")
    assert cache.key(project) != before


# --- the diagrams -----------------------------------------------------


def test_new_figures_state_the_labs_numbers(figures):
    ring = allreduce_bytes(P7B, 2, 4)
    assert f"that is {ring['sent_per_rank_GB']:g} GB" in figures["ring"]
    for s in ("ddp", "zero1", "zero2", "zero3"):
        gb = memory_per_gpu(s, P7B, 8)
        assert f"{gb:.2f}" in figures["zero-stages"], s
        assert math.isclose(sum(zero_stages._state_parts(s, P7B, 8)), gb)


def test_course_map_follows_the_nav():
    from tests.browser.helpers import lesson_pages

    pages = {page for page, _, _ in course_map.COURSE_MAP}
    assert {f.removesuffix(".md") + "/" for f in pages} == lesson_pages() - {
        ""
    }


def test_strategy_chart_asks_what_choose_strategy_answers():
    from snippets.strategy.choose import RULES, choose_strategy

    chain, last = strategy.strategy_chain()
    asked = [q for q, _ in RULES if q is not None]
    assert [q for q, _ in chain] == [strategy._question(n) for n in asked]
    # Reading the chart top to bottom, stopping at the first yes, gives
    # the function's own answer for every consistent set of answers.
    tried = 0
    for model, state, layer, multi in product((True, False), repeat=4):
        try:
            want = choose_strategy(model, state, layer, multi)
        except ValueError:  # inconsistent answers
            continue
        answers = {
            "model_fits_one_gpu": model,
            "state_fits_one_gpu": state,
            "layer_fits_one_gpu": layer,
            "multi_node": multi,
        }
        got = next(
            (
                rung
                for (_, rung), n in zip(chain, asked, strict=True)
                if answers[n]
            ),
            last,
        )
        assert got == want, answers
        tried += 1
    assert tried >= 8
    assert "first yes" in strategy.draw()
