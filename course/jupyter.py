"""Build set-up for the exercise notebooks (mkdocs-jupyter).

mkdocs.yml calls `cache()` and `cache_dir()` through
`!!python/object/apply:` each time it loads its configuration: once per
build, and once per rebuild under `make serve`.

- `cache()`: whether mkdocs-jupyter keeps the rendered notebooks for the
  next build; course.cache decides (CI=true turns it off).
- `cache_dir()`: the plugin keys each page on the notebook's own text
  and its options, not on the labs the notebook imports. So the folder
  it caches in is named after course.cache's key of every exercise
  notebook and what they import, and of the packages that execute and
  render them: an edited lab starts an empty folder.
- Cell ids: jupytext gives the cells of a percent file random ids
  (nbformat draws them from uuid4) and nbconvert writes them into the
  page, so two builds would differ. Importing this module makes nbformat
  number new cells in the order the build creates them instead; the
  count restarts with every configuration load.
"""

import itertools
from pathlib import Path

import nbformat.v4.nbbase

import course.cache

EXERCISES = Path(__file__).resolve().parent.parent / "docs" / "exercises"
RENDERERS = ("mkdocs-jupyter", "nbconvert", "jupytext", "ipykernel")

_numbers = itertools.count(1)


def _numbered_cell_id():
    return f"cell-{next(_numbers):04d}"


nbformat.v4.nbbase.random_cell_id = _numbered_cell_id


def cache():
    """False under CI, True elsewhere; restarts the cell ids."""
    global _numbers
    _numbers = itertools.count(1)
    return course.cache.enabled()


def cache_dir():
    """.cache/mkdocs-jupyter/KEY; folders with other keys are removed."""
    notebooks = sorted(EXERCISES.glob("*.py"))
    return course.cache.directory(
        "mkdocs-jupyter", roots=notebooks, packages=RENDERERS
    )
