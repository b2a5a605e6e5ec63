"""`make bench`: print how long the site takes to build and to rebuild.

Figures, not assertions: targets are for people to compare against.
- cold build: `mkdocs build --strict` into an empty directory, caches off;
- seconds spent executing each page's code blocks during that build;
- `mkdocs serve`: seconds from a one-word prose edit to "Reloading
  browsers", the edit undone afterwards;
- the charts and the notebooks: the work a cold build does for them;
- Run in your browser, in Chromium on a fresh build: the first Run on a
  lab page after a cold load, and the planner's full search in the
  browser (a second Run, Python loaded) and in CPython; the site's size;
Other parts of the site add their own figures (see `EXTRA` below).

    python -m course.bench            # all of it
    python -m course.bench parts      # charts and notebooks only
    python -m course.bench runner     # the browser runner and planner
"""

import collections
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("NO_MKDOCS_2_WARNING", "1")
BIN = Path(sys.executable).parent
EDIT_PAGE = ROOT / "docs" / "walls.md"
EDIT = ("Two separate limits push", "Two distinct limits push")
# A lab edit: a comment, so the page's outputs stay the same. (A lab the
# training script imports, such as zero/memory.py, also re-runs the
# torchrun page's launch, which adds that launch's seconds.)
LAB = ROOT / "snippets" / "pipeline" / "bubble.py"
LAB_EDIT = ("# --8<-- [end:model]", "# bench edit\n# --8<-- [end:model]")
COLD_BUILDS = 3
# Modules that print their own figures, if present.
EXTRA = ["course.browser"]
EXTRA_ARGS = {"course.browser": ["weight"]}


def cold_build():
    timings = Path(tempfile.mkstemp(suffix=".jsonl")[1])
    site = Path(tempfile.mkdtemp())
    env = dict(os.environ, COURSE_EXEC_TIMINGS=str(timings), CI="true")
    shutil.rmtree(ROOT / ".cache", ignore_errors=True)
    started = time.perf_counter()
    subprocess.run(
        [BIN / "mkdocs", "build", "--strict", "--quiet", "--site-dir", site],
        cwd=ROOT,
        env=env,
        check=True,
    )
    seconds = time.perf_counter() - started
    per_page = collections.defaultdict(float)
    for line in timings.read_text().splitlines():
        row = json.loads(line)
        per_page[row["page"]] += row["seconds"]
    timings.unlink()
    shutil.rmtree(site)
    return seconds, per_page


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve_rebuild(path=EDIT_PAGE, edit=EDIT):
    """Seconds from an edit of `path` to the browser reload, in
    `mkdocs serve`; the edit is undone afterwards."""
    port = free_port()
    server = subprocess.Popen(
        [
            BIN / "mkdocs",
            "serve",
            "--dev-addr",
            f"127.0.0.1:{port}",
            "--livereload",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines = []
    reader = threading.Thread(
        target=lambda: [lines.append(ln) for ln in server.stdout], daemon=True
    )
    reader.start()
    original = path.read_text(encoding="utf-8")
    assert edit[0] in original, f"bench edit target missing in {path}"

    def wait_for(pattern, after, limit=300):
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            for line in lines[after:]:
                if re.search(pattern, line):
                    return True
            if server.poll() is not None:
                break
            time.sleep(0.01)
        raise RuntimeError(
            f"mkdocs serve never printed {pattern!r}:\n" + "".join(lines[-20:])
        )

    try:
        wait_for(r"Serving on", 0)
        time.sleep(1)
        mark = len(lines)
        started = time.perf_counter()
        path.write_text(original.replace(*edit, 1), encoding="utf-8")
        wait_for(r"Reloading browsers", mark)
        seconds = time.perf_counter() - started
    finally:
        path.write_text(original, encoding="utf-8")
        time.sleep(1.5)
        server.terminate()
        server.wait(timeout=30)
    return seconds


def bench_charts():
    """Import matplotlib and draw every chart, as a cold build does (the
    cache is skipped); returns (count, import s, total s, CPU s)."""
    start, cpu = time.perf_counter(), time.process_time()
    from course import figures, svg  # noqa: F401 (svg imports matplotlib)

    imported = time.perf_counter()
    names = figures.names()
    for name in names:
        figures.draw(name)
    done = time.perf_counter()
    cpu = time.process_time() - cpu
    return len(names), imported - start, done - start, cpu


def bench_notebooks():
    """Execute and render each exercise notebook as mkdocs-jupyter does
    with its cache off; returns (count, seconds)."""
    from mkdocs_jupyter import convert

    import course.jupyter  # noqa: F401 (stable cell ids, as in the build)
    from course.notebooks import EXERCISES, NOTEBOOKS

    start = time.perf_counter()
    for name in NOTEBOOKS:
        convert.nb2html(
            str(EXERCISES / f"{name}.py"),
            execute=True,
            kernel_name="python3",
            allow_errors=False,
            remove_tag_config={"remove_input_tags": ["site-only"]},
        )
    return len(NOTEBOOKS), time.perf_counter() - start


def parts():
    load = os.getloadavg()[0]
    count, imported, total, cpu = bench_charts()
    print(
        f"charts:    {total:5.2f} s for {count} charts "
        f"(matplotlib import {imported:.2f} s; CPU {cpu:.2f} s)"
    )
    count, total = bench_notebooks()
    print(f"notebooks: {total:5.2f} s for {count} notebooks, executed")
    print(f"(load average {load:.1f} on {os.cpu_count()} CPUs at the start)")


def _runs(page, n, state="done"):
    """Click the n-th runner's Run on the open page; seconds to `state`."""
    box = page.locator(".course-runner").nth(n)
    started = time.perf_counter()
    box.get_by_role("button", name="Run").click()
    page.wait_for_function(
        "([box, state]) => box.dataset.state === state",
        arg=[box.element_handle(), state],
        timeout=120_000,
    )
    return time.perf_counter() - started


def _open_run_tab(page, url, path):
    page.goto(url + path)
    page.get_by_text("Run in your browser").first.click()
    page.wait_for_selector(".course-runner textarea")


def runner():
    """The Run tab and the planner in Chromium, on a fresh build."""
    from playwright.sync_api import sync_playwright

    from course import browser
    from snippets.planner.layouts import plan_layouts
    from snippets.planner.model import MODELS, cluster

    job = {"global_batch_tokens": 4 * 1024 * 1024, "micro_batch": 1}
    model, nodes = MODELS["llama3-70b"], cluster("h100-80gb", 8)
    seconds = []
    for _ in range(5):
        started = time.perf_counter()
        plan = plan_layouts(model, nodes, job)
        seconds.append(time.perf_counter() - started)
    print(
        f"planner, full search in CPython ({len(plan['ranked'])} layouts, "
        f"median of 5): {sorted(seconds)[2]:5.3f} s  [< 1 s]"
    )
    site = Path(tempfile.mkdtemp())
    subprocess.run(
        [BIN / "mkdocs", "build", "--strict", "--quiet", "--site-dir", site],
        cwd=ROOT,
        check=True,
    )
    files = [f for f in site.rglob("*") if f.is_file()]
    runtime = sum(
        f.stat().st_size for f in (site / "assets" / "pyodide").iterdir()
    )
    total = sum(f.stat().st_size for f in files)
    print(
        f"site size: {total / 1e6:.1f} MB in {len(files)} files, of which "
        f"Pyodide {runtime / 1e6:.1f} MB"
    )
    with sync_playwright() as p, browser.serve(site) as url:
        chromium = browser.launch(p)
        for path, label in (("zero/", "ZeRO page"), ("planner/", "planner")):
            page = chromium.new_context().new_page()
            _open_run_tab(page, url, path)
            cold = _runs(page, 0)
            warm = _runs(page, 0)
            print(
                f"{label}: first Run after a cold load {cold:5.2f} s  [< 4 s];"
                f" again {warm:5.2f} s"
                + (
                    "  [< 3 s: the planner's search]"
                    if path == "planner/"
                    else ""
                )
            )
            page.context.close()
        chromium.close()
    shutil.rmtree(site)


def main():
    print(
        "make bench: seconds on this machine "
        f"({os.cpu_count()} CPUs); targets in brackets\n"
    )
    builds = sorted(
        (cold_build() for _ in range(COLD_BUILDS)), key=lambda b: b[0]
    )
    seconds, per_page = builds[len(builds) // 2]
    torchrun = per_page.get("docs/torchrun.md", 0.0)
    each = ", ".join(f"{b[0]:.2f}" for b in builds)
    print(
        f"cold strict build, caches off, median of {COLD_BUILDS}: "
        f"{seconds:6.2f} s  [< 10 s]  ({each})"
    )
    # The launch starts with the build (course/hooks.py); the page waits
    # only for what is left of it.
    print(
        f"  of which the torchrun page waited for its launch: "
        f"{torchrun:6.2f} s"
    )
    print("seconds executing code blocks, by page (the median build):")
    for page, spent in sorted(per_page.items()):
        print(f"  {page:<32} {spent:6.2f} s")
    print(
        f"serve rebuild after a one-word prose edit: {serve_rebuild():6.2f} s"
        "  [< 1.5 s]"
    )
    print(
        "serve rebuild after a lab edit:           "
        f"{serve_rebuild(LAB, LAB_EDIT):6.2f} s  [< 3 s]"
    )
    print()
    parts()
    print()
    runner()
    for module in EXTRA:
        if (ROOT / Path(*module.split("."))).with_suffix(".py").exists():
            print(f"\n{module}:", flush=True)
            subprocess.run(
                [sys.executable, "-m", module, *EXTRA_ARGS.get(module, [])],
                cwd=ROOT,
                check=True,
            )


if __name__ == "__main__":
    if sys.argv[1:] == ["parts"]:
        parts()
    elif sys.argv[1:] == ["runner"]:
        runner()
    else:
        main()
