"""`make bench`: how long the site takes to build, to rebuild and to run.
Figures, not assertions: the targets are for people to compare against.

- a cold strict build (caches off, as CI builds), median of three;
- `mkdocs serve`: seconds from an edit to "Reloading browsers", for a
  one-word prose edit and for a comment added to a lab;
- `make check`, the edit loop;
- the planner: its search for the largest job in CPython, and in the
  browser after Python has loaded;
- the browser runner's first Run on a cold page, and the site's size.
"""

import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from course import ROOT

BIN = Path(sys.executable).parent
ENV = dict(os.environ, NO_MKDOCS_2_WARNING="1")
PROSE = (
    ROOT / "docs" / "walls.md",
    ("Two separate limits", "Two distinct limits"),
)
LAB = (
    ROOT / "snippets" / "pipeline" / "bubble.py",
    (
        "# --8<-- [end:model]",
        "# bench edit\n# --8<-- [end:model]",
    ),
)


def cold_build():
    site = tempfile.mkdtemp()
    started = time.perf_counter()
    subprocess.run(
        [BIN / "mkdocs", "build", "--strict", "-q", "-d", site],
        cwd=ROOT,
        env=ENV | {"CI": "true"},
        check=True,
        capture_output=True,
    )
    shutil.rmtree(site)
    return time.perf_counter() - started


def serve_rebuilds(*edits):
    """Seconds from each edit (path, (old, new)) to the browser reload
    under `mkdocs serve`; each edit is undone before the next."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    flags = os.environ["SERVE_FLAGS"].split()
    server = subprocess.Popen(
        [BIN / "mkdocs", "serve", "-a", f"127.0.0.1:{port}", *flags],
        cwd=ROOT,
        env=ENV | {"PYTHONDONTWRITEBYTECODE": "1"},  # as make serve runs
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines = []
    threading.Thread(
        target=lambda: lines.extend(server.stdout), daemon=True
    ).start()

    def wait_for(pattern, after):
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and server.poll() is None:
            if any(re.search(pattern, ln) for ln in lines[after:]):
                return
            time.sleep(0.01)
        raise RuntimeError(
            f"mkdocs serve never printed {pattern!r}:\n{''.join(lines[-20:])}"
        )

    seconds = []
    try:
        wait_for("Serving on", 0)
        for path, (old, new) in edits:
            original = path.read_text(encoding="utf-8")
            for text in (original.replace(old, new, 1), original):
                time.sleep(1.5)  # the watcher settles
                mark = len(lines)
                started = time.perf_counter()
                path.write_text(text, encoding="utf-8")
                wait_for("Reloading browsers", mark)
                if text != original:
                    seconds.append(time.perf_counter() - started)
    finally:
        server.terminate()
        server.wait(timeout=30)
    return seconds


# Llama 3.1 405B as its config.json says, for the planner's largest job.
LLAMA_405B = {
    "hidden_size": 16384,
    "num_hidden_layers": 126,
    "num_attention_heads": 128,
    "num_key_value_heads": 8,
    "intermediate_size": 53248,
    "vocab_size": 128256,
    "max_position_embeddings": 131072,
    "hidden_act": "silu",
}
BIG_JOB = {"nodes": 2048, "seq_len": 8192, "global_batch_tokens": 16 * 2**20}


def planner_cpython():
    """Seconds `plan()` takes for 405B on 16,384 H100 (best of three)."""
    import json

    from snippets.planner.report import plan

    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        plan(json.dumps(LLAMA_405B), **BIG_JOB)
        best = min(best, time.perf_counter() - started)
    return best


def in_the_browser(site):
    """(first Run on the ZeRO page from a cold load, the planner form's
    first Plan, its Plan of 405B on 16,384 GPUs once Python is loaded)
    in seconds, in Chromium on the built site."""
    import json

    from playwright.sync_api import sync_playwright

    from course.tools.chromium import ARGS, EXECUTABLE
    from course.tools.serve import serve

    with serve(site) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=EXECUTABLE, args=ARGS)
        page = browser.new_page()
        ended = "e => ['done', 'error'].includes(e.dataset.state)"

        def click(button, on):
            on.get_by_role("button", name=button, exact=True).click()
            page.wait_for_function(
                ended, arg=on.element_handle(), timeout=120_000
            )

        page.goto(url + "zero/")
        page.locator("label", has_text="Run in your browser").first.click()
        box = page.locator(".course-runner").first
        click("Run", box)
        first_run = float(box.get_attribute("data-seconds"))
        page.goto(url + "planner/")
        form = page.locator("form[data-course-planner]")
        click("Plan", form)
        cold = float(form.get_attribute("data-seconds"))
        form.locator("[name=config]").fill(json.dumps(LLAMA_405B))
        for name, value in BIG_JOB.items():
            form.locator(f"[name={name}]").fill(str(value))
        click("Plan", form)
        big = float(form.get_attribute("data-python-seconds"))
        browser.close()
    return first_run, cold, big


def timed(*command):
    started = time.perf_counter()
    subprocess.run(command, cwd=ROOT, env=ENV, check=True, capture_output=True)
    return time.perf_counter() - started


def main():
    if "SERVE_FLAGS" not in os.environ:  # the Makefile's, for make serve
        raise SystemExit(
            "python -m course.tools.bench: run it as `make bench`"
        )
    print(f"load average at start: {os.getloadavg()[0]:.1f} (2 cores here)")
    builds = [cold_build() for _ in range(3)]
    print(
        f"cold strict build:         {statistics.median(builds):5.2f} s "
        f"(median of {', '.join(f'{b:.2f}' for b in builds)})"
    )
    prose, lab = serve_rebuilds(PROSE, LAB)
    print(f"serve rebuild, prose edit: {prose:5.2f} s")
    print(f"serve rebuild, lab edit:   {lab:5.2f} s")
    print(f"make check:                {timed('make', 'check'):5.2f} s")
    print(f"planner, 405B on 16,384 GPUs, CPython: {planner_cpython():.3f} s")
    site = ROOT / "site"  # make check has just built it
    first, cold, big = in_the_browser(site)
    print(f"browser: first Run, cold page:          {first:5.2f} s")
    print(f"browser: first Plan, loading Python:    {cold:5.2f} s")
    print(f"browser: Plan of 405B, Python loaded:   {big:5.2f} s")
    size = sum(p.stat().st_size for p in site.rglob("*") if p.is_file())
    print(f"site/: {size / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
