"""The course site's own code, never shown to readers:

- course/build/: the MkDocs hook and what it runs (strict execution of
  the blocks, the labs' layout and Run tab data, notebooks, the cache);
- course/charts/: the pages' charts, one module each;
- course/tools/: what a contributor runs (bench, stress, measure).
- course/instruments/: what measures the training script from outside
  it (probes, the recorded results and their reports).

ROOT is the repository's root, for every module that needs a path.
"""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
