"""Set-up of the MkDocs process for the exercise notebooks.

mkdocs.yml reads NOTEBOOK_CACHE from here (`!!python/name:`); that is
what imports this module, into the build and nowhere else. Importing it
does two things:

- NOTEBOOK_CACHE: mkdocs-jupyter caches a rendered notebook by its text,
  so an edited lab would not show until the notebook changes. Fine
  while writing; wrong in CI, where CI=true turns the cache off.
- Cell ids: jupytext gives the cells of a percent file random ids
  (nbformat draws them from uuid4) and nbconvert writes them into the
  page (`id="cell-id=..."`), so two builds of the same notebooks would
  differ. From here on nbformat numbers new cells instead, in the order
  the build makes them, which is the same in every build.
"""

import itertools
import os

import nbformat.v4.nbbase

NOTEBOOK_CACHE = os.environ.get("CI", "").strip().lower() not in {
    "true",
    "1",
    "yes",
}

_numbers = itertools.count(1)


def numbered_cell_id():
    return f"cell-{next(_numbers):04d}"


nbformat.v4.nbbase.random_cell_id = numbered_cell_id
