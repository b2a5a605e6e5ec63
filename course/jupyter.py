"""Build set-up for the exercise notebooks (mkdocs-jupyter).

mkdocs.yml calls `cache()` and `cache_dir()` through
`!!python/object/apply:` each time it loads its configuration: once per
build, and once per rebuild under `make serve`.

- `cache()`: mkdocs-jupyter caches each rendered notebook, which keeps
  rebuilds fast. CI=true turns the cache off, so CI always executes the
  notebooks afresh.
- `cache_dir()`: the plugin keys its cache on the notebook's own text,
  so a notebook whose lab changed would be served stale. The directory
  is named after a digest of every file in snippets/, so editing a lab
  starts a fresh cache (older ones are removed).
- Cell ids: jupytext gives the cells of a percent file random ids
  (nbformat draws them from uuid4) and nbconvert writes them into the
  page, so two builds would differ. Importing this module makes nbformat
  number new cells in the order the build creates them instead; the
  count restarts with every configuration load.
"""

import hashlib
import itertools
import os
import shutil
from pathlib import Path

import nbformat.v4.nbbase

ROOT = Path(__file__).resolve().parent.parent
CACHE_ROOT = ROOT / ".cache" / "mkdocs-jupyter"

_numbers = itertools.count(1)


def _numbered_cell_id():
    return f"cell-{next(_numbers):04d}"


nbformat.v4.nbbase.random_cell_id = _numbered_cell_id


def cache():
    """False under CI, True elsewhere."""
    global _numbers
    _numbers = itertools.count(1)
    return os.environ.get("CI", "").strip().lower() not in {"true", "1", "yes"}


def cache_dir():
    """.cache/mkdocs-jupyter/<digest of snippets/>; other digests go."""
    digest = hashlib.sha256()
    for path in sorted((ROOT / "snippets").rglob("*.py")):
        digest.update(path.relative_to(ROOT).as_posix().encode())
        digest.update(path.read_bytes())
    current = CACHE_ROOT / digest.hexdigest()[:16]
    if CACHE_ROOT.is_dir():
        for old in CACHE_ROOT.iterdir():
            if old.is_dir() and old != current:
                shutil.rmtree(old, ignore_errors=True)
    return str(current)
