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

ROOT = Path(__file__).resolve().parent.parent
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
    server = subprocess.Popen(
        [BIN / "mkdocs", "serve", "-a", f"127.0.0.1:{port}", "--livereload"],
        cwd=ROOT,
        env=ENV,
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


def timed(*command):
    started = time.perf_counter()
    subprocess.run(command, cwd=ROOT, env=ENV, check=True, capture_output=True)
    return time.perf_counter() - started


def main():
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
    site = ROOT / "site"
    if site.is_dir():
        size = sum(p.stat().st_size for p in site.rglob("*") if p.is_file())
        print(f"site/:                     {size / 1e6:5.1f} MB")


if __name__ == "__main__":
    main()
