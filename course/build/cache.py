"""The build's one cache key, for what a serve rebuild should not redo.

The HTML of each executed block (course/build/hooks.py), the charts
(course/charts/__init__.py) and the notebook pages (mkdocs-jupyter) are kept in
.cache/NAME/KEY/, where KEY digests every file under
snippets/ and course/: any edit there starts afresh, a prose edit
reuses them. Jinja keeps the theme's compiled templates in
.cache/templates/ by its own key, each template's source. CI=true (or
1, yes) turns the cache off: nothing is kept for a later build. The
charts and notebook pages a build makes still go to a folder, its
process's own, removed when it exits; the processes the build starts
`use` the build's (course/build/hooks.py).

`kept` keeps a slow computation's value, the planner's fits with each
source held out say, under a narrower key: the sources of the module
that computes it and of every module of ours it imports.
"""

import atexit
import functools
import hashlib
import os
import pickle
import shutil
import tempfile
from pathlib import Path

from course import ROOT
from course.instruments.results import closure, source

STORE = ROOT / ".cache"
_used = None  # the store of the build that started this process


def use(store):
    """Keep things in `store` (a build's `store()`), in this process."""
    global _used
    _used = Path(store)


def enabled():
    return os.environ.get("CI", "").strip().lower() not in {"true", "1", "yes"}


@functools.cache
def _own_store():
    path = Path(tempfile.mkdtemp(prefix="course-build-"))
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def store():
    """.cache/, or with the cache off this process's own folder."""
    if _used is not None:
        return _used
    return STORE if enabled() else _own_store()


def key(root=ROOT):
    """16 hex digits of the sha256 of snippets/ and course/, by path."""
    digest = hashlib.sha256()
    for folder in ("snippets", "course"):
        for path in sorted(Path(root, folder).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                digest.update(path.relative_to(root).as_posix().encode())
                digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:16]


def folder(name, digest=None):
    """.cache/NAME/KEY for the current sources (or KEY `digest`); other
    keys are removed. With the cache off, NAME/KEY in this process's
    own folder."""
    current = store() / name / (digest or key())
    if current.parent.is_dir():
        for old in current.parent.iterdir():
            if old != current:
                shutil.rmtree(old, ignore_errors=True)
    current.mkdir(parents=True, exist_ok=True)
    return current


def closure_key(module):
    """16 hex digits of the sha256 of `module`'s sources: its file and
    those of every module of this repository it imports, at any depth
    (found by reading their imports, as a launch's record is keyed)."""
    digest = hashlib.sha256()
    for name in closure(module):
        digest.update(name.encode() + b"\0")
        digest.update(hashlib.sha256(source(name).read_bytes()).digest())
    return digest.hexdigest()[:16]


def kept(name, compute):
    """compute()'s value, made once for each content of the sources of
    the module that defines `compute` (`closure_key`), and kept, pickled,
    in `folder(name, ...)`: other processes of this build or of a later
    one read it back."""
    digest = closure_key(compute.__module__)
    path = folder(name, digest) / "value.pickle"
    if path.is_file():
        return pickle.loads(path.read_bytes())
    value = compute()
    partial = path.with_name(f"{os.getpid()}.partial")
    partial.write_bytes(pickle.dumps(value))
    partial.replace(path)  # whole, even with another process at it
    return value
