"""Pyodide, self-hosted: installed by the set-up, shipped by the build.

The version and its sha512 are pinned in package-lock.json (npm's lock
of package.json). `python -m course.pyodide install` (run by `make
setup`) puts the runtime files in .venv/pyodide/, with the rest of what
the set-up installs:

- with npm: `npm ci` in a scratch folder holding package.json and
  package-lock.json (npm checks the tarball against the lock's sha512);
- without npm: the tarball from the npm registry with urllib, checked
  against the same sha512 here.

The build reads them from the virtual environment that runs it
(sys.prefix), so a copy of the project built with this .venv (the
build tests) ships the same files.

As a MkDocs hook (mkdocs.yml, `hooks:`), this module copies the runtime
into site/assets/pyodide/ and writes the labs' archive
(course/runner.py) into site/assets/run/ after every build. Nothing is
fetched from another host at run time: the worker loads these files.

    python -m course.pyodide install   # if missing or out of date; and
                                       # Debian's nodejs, for the tests
    python -m course.pyodide check     # is the installed copy the pinned one?
"""

import argparse
import base64
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
from pathlib import Path

from course import runner

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "package-lock.json"
PACKAGE = "pyodide"
REGISTRY = "https://registry.npmjs.org"
# What the browser needs of the npm package: the ES module loader, the
# Emscripten glue, the WebAssembly interpreter, the standard library and
# the package index loadPyodide() reads. (No pyodide.js: the worker is a
# module worker; no source maps, type files or demo consoles.)
FILES = (
    "pyodide.mjs",
    "pyodide.asm.mjs",
    "pyodide.asm.wasm",
    "python_stdlib.zip",
    "pyodide-lock.json",
)
SITE_DIR = "assets/pyodide"  # where the built site serves them from
STAMP = "installed.json"  # written last: the version and sha512 installed


class NotInstalled(RuntimeError):
    """The pinned Pyodide is not in the virtual environment."""


def pinned(lock=LOCK):
    """{'version': ..., 'integrity': 'sha512-...'} from the lock file."""
    data = json.loads(Path(lock).read_text(encoding="utf-8"))
    entry = data["packages"][f"node_modules/{PACKAGE}"]
    return {"version": entry["version"], "integrity": entry["integrity"]}


def store(prefix=None):
    """The folder of the runtime files: <venv>/pyodide."""
    return Path(prefix or sys.prefix) / "pyodide"


def check(folder=None, lock=LOCK):
    """The runtime folder, or NotInstalled saying how to get it."""
    folder = Path(folder or store())
    pin = pinned(lock)
    stamp = folder / STAMP
    try:
        have = json.loads(stamp.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        have = None
    missing = [name for name in FILES if not (folder / name).is_file()]
    if have != pin or missing:
        found = have["version"] if have else "none"
        raise NotInstalled(
            f"Pyodide {pin['version']} is not installed in {folder} "
            f"(found: {found}; missing: {missing or 'nothing'}). Run "
            "`make setup` (python -m course.pyodide install)."
        )
    return folder


def _integrity(data):
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


def _tarball_url(version):
    return f"{REGISTRY}/{PACKAGE}/-/{PACKAGE}-{version}.tgz"


def _with_npm(npm, scratch):
    """Install with `npm ci` in `scratch`; return the package folder."""
    for name in ("package.json", "package-lock.json"):
        shutil.copyfile(ROOT / name, scratch / name)
    subprocess.run(
        [
            npm,
            "ci",
            "--ignore-scripts",
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
        ],
        cwd=scratch,
        check=True,
    )
    return scratch / "node_modules" / PACKAGE


def _with_urllib(pin, scratch):
    """Fetch the tarball, check its sha512, unpack the files we ship."""
    url = _tarball_url(pin["version"])
    with urllib.request.urlopen(url, timeout=120) as response:
        data = response.read()
    if _integrity(data) != pin["integrity"]:
        raise RuntimeError(
            f"{url}: sha512 {_integrity(data)} is not the pinned "
            f"{pin['integrity']} (package-lock.json)"
        )
    target = scratch / PACKAGE
    target.mkdir()
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
        for name in (*FILES, "package.json"):
            member = archive.extractfile(f"package/{name}")
            (target / name).write_bytes(member.read())
    return target


def install(folder=None, lock=LOCK, use_npm=True):
    """Install the pinned runtime files into `folder` unless they are
    there already. Returns the folder."""
    folder = Path(folder or store())
    try:
        return check(folder, lock)
    except NotInstalled:
        pass
    pin = pinned(lock)
    npm = shutil.which("npm") if use_npm else None
    how = "npm ci" if npm else "urllib, sha512 checked here"
    print(f"pyodide: installing {pin['version']} into {folder} ({how})")
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        source = _with_npm(npm, scratch) if npm else _with_urllib(pin, scratch)
        shipped = json.loads((source / "package.json").read_text())
        if shipped["version"] != pin["version"]:
            raise RuntimeError(
                f"npm installed {PACKAGE} {shipped['version']}, the lock "
                f"pins {pin['version']}"
            )
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        for name in FILES:
            shutil.copyfile(source / name, folder / name)
    (folder / STAMP).write_text(json.dumps(pin) + "\n", encoding="utf-8")
    return check(folder, lock)


def ensure_node():
    """The tests run Pyodide under Node (tests/test_pyodide.py). Where
    `node` is missing, install Debian's nodejs as root where apt-get
    exists (as course.browser does for Chromium); else say so."""
    if shutil.which("node"):
        return shutil.which("node")
    as_root = hasattr(os, "geteuid") and os.geteuid() == 0
    if as_root and shutil.which("apt-get"):
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        for command in (
            ["apt-get", "update", "-q"],
            ["apt-get", "install", "-y", "-q", "nodejs"],
        ):
            print("pyodide:", *command)
            subprocess.run(command, check=False, env=env)
    if not shutil.which("node"):
        print("pyodide: no `node` found: tests/test_pyodide.py needs it")
    return shutil.which("node")


def copy_runtime(site_dir, folder=None):
    """Copy the runtime files into site_dir/assets/pyodide/."""
    source = check(folder)
    target = Path(site_dir) / SITE_DIR
    target.mkdir(parents=True, exist_ok=True)
    for name in FILES:
        have, want = target / name, source / name
        same = have.is_file() and have.stat().st_size == want.stat().st_size
        if not (same and have.read_bytes() == want.read_bytes()):
            shutil.copyfile(want, have)
    return target


# --- MkDocs hooks ---------------------------------------------------------


def on_pre_build(config):
    check()  # fail before the pages are rendered, not after
    runner.forget()  # a lab may have changed since the last build


def on_post_build(config):
    copy_runtime(config.site_dir)
    runner.write_archive(config.site_dir)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m course.pyodide")
    parser.add_argument("command", choices=["install", "check"])
    parser.add_argument(
        "--no-npm",
        action="store_true",
        help="fetch the tarball with urllib even where npm is installed",
    )
    args = parser.parse_args(argv)
    try:
        if args.command == "install":
            folder = install(use_npm=not args.no_npm)
            ensure_node()
        else:
            folder = check()
    except NotInstalled as error:
        sys.exit(str(error))
    print(f"pyodide {pinned()['version']}: {folder}")


if __name__ == "__main__":
    main()
