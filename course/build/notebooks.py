"""The exercise notebooks, to download or open in Colab.

The notebooks live in git as jupytext percent files,
docs/exercises/ms2_*.py, which import the labs from snippets/;
mkdocs-jupyter runs and renders them in the build. A reader who
downloads one has no snippets/ package, so `export()` makes an .ipynb
that carries the lab files it imports and writes them next to itself
before the first import. The build writes one per notebook into
site/exercises/ (`publish`, from course/build/hooks.py), and the pages link
to them (`links`). Colab opens notebooks from GitHub only: its link
points at the copy on the repository's `notebooks` branch, which CI
fills with `python -m course.build.notebooks export DIR`.
"""

import html
import io
import json
import modulefinder
import re
import sys
from pathlib import Path

from course import ROOT

EXERCISES = ROOT / "docs" / "exercises"
NOTEBOOKS = ("ms2_1", "ms2_2")
SITE_ONLY = "site-only"  # cells that only make sense on the site
LAB_DIR = "course_labs"  # where a downloaded notebook writes the labs
COLAB_BRANCH = "notebooks"


def _check_name(name):
    if name not in NOTEBOOKS:
        names = ", ".join(repr(n) for n in NOTEBOOKS)
        raise ValueError(f"name must be one of {names}; got {name!r}")


def lab_files(code):
    """{path: text} of the lab files `code` imports, directly or not."""
    finder = modulefinder.ModuleFinder(path=[str(ROOT)])
    source = ("", "r", modulefinder._PY_SOURCE)  # a source file
    finder.load_module("__main__", io.StringIO(code), "<notebook>", source)
    files = {}
    for name, module in sorted(finder.modules.items()):
        if name == "__main__" or module.__file__ is None:
            continue
        path = Path(module.__file__).relative_to(ROOT)
        if path.parts[0] != "snippets":
            raise ValueError(
                f"a notebook cell outside {SITE_ONLY!r} imports {name}, "
                "which is no lab; import labs only"
            )
        files[path.as_posix()] = (ROOT / path).read_text(encoding="utf-8")
    return files


def _setup_cell(files):
    entries = "".join(f"    {n!r}: {t!r},\n" for n, t in files.items())
    return (
        "# The course's lab files, carried by this notebook so that it\n"
        f"# runs anywhere: written to ./{LAB_DIR}, then imported from "
        "there.\nimport pathlib\nimport sys\n\n"
        f"LAB_FILES = {{\n{entries}}}\n"
        "for name, text in LAB_FILES.items():\n"
        f'    path = pathlib.Path("{LAB_DIR}", name)\n'
        "    path.parent.mkdir(parents=True, exist_ok=True)\n"
        '    path.write_text(text, encoding="utf-8")\n'
        f'sys.path.insert(0, str(pathlib.Path("{LAB_DIR}").resolve()))\n'
        'print("labs ready:", ", ".join(LAB_FILES))'
    )


def export(name):
    """The downloadable .ipynb text of notebook `name` (deterministic)."""
    import jupytext  # here: the site-only cells import links() only

    _check_name(name)
    notebook = jupytext.read(EXERCISES / f"{name}.py")
    cells = [
        (cell.cell_type, cell.source)
        for cell in notebook.cells
        if SITE_ONLY not in cell.metadata.get("tags", [])
    ]
    code = "\n".join(src for kind, src in cells if kind == "code")
    note = (
        "This copy of the notebook carries the course's lab files: run the "
        f"next cell first. It writes them to `./{LAB_DIR}` and puts that "
        "folder on `sys.path`, so the `from snippets...` imports below "
        "work without the course repository."
    )
    cells[1:1] = [("markdown", note), ("code", _setup_cell(lab_files(code)))]
    out = {
        "cells": [
            {
                "cell_type": kind,
                "id": f"{name.replace('_', '-')}-{i:02d}",
                "metadata": {},
                "source": source.splitlines(keepends=True),
                **(
                    {"execution_count": None, "outputs": []}
                    if kind == "code"
                    else {}
                ),
            }
            for i, (kind, source) in enumerate(cells)
        ],
        "metadata": {
            "kernelspec": {
                "display_name": "Python 3",
                "language": "python",
                "name": "python3",
            },
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return json.dumps(out, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def publish(site_dir):
    """Write every notebook's download into site_dir/exercises/."""
    for name in NOTEBOOKS:
        target = Path(site_dir, "exercises", f"{name}.ipynb")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(export(name), encoding="utf-8")


def colab_url(name):
    _check_name(name)
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    url = re.search(r"^repo_url:\s*https://github\.com/(\S+?)/?$", text, re.M)
    return (
        f"https://colab.research.google.com/github/{url[1]}"
        f"/blob/{COLAB_BRANCH}/{name}.ipynb"
    )


class Links:
    """The download and Colab links; Jupyter shows them as HTML. `base`
    leads from the page to site/exercises/: "" on the exercises page,
    "../" on a notebook's own page (exercises/NAME/)."""

    def __init__(self, name, base="../"):
        _check_name(name)
        self.name, self.base = name, base

    def _repr_html_(self):
        file = f"{self.name}.ipynb"
        return (
            '<p class="notebook-links">'
            f'<a download="{file}" href="{self.base}{file}">'
            f"Download {html.escape(file)}</a> (runs on its own: it "
            "carries the lab files it imports) &middot; "
            f'<a href="{html.escape(colab_url(self.name))}" '
            'rel="noopener">Open in Colab</a></p>'
        )

    __str__ = _repr_html_  # what a page's block prints

    def __repr__(self):
        return f"{self.name}.ipynb: download, or {colab_url(self.name)}"


def links(name, base="../"):
    return Links(name, base)


def main(argv):
    if len(argv) != 2 or argv[0] != "export":
        print(
            "usage: python -m course.build.notebooks export DIR",
            file=sys.stderr,
        )
        return 2
    out = Path(argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for name in NOTEBOOKS:
        (out / f"{name}.ipynb").write_text(export(name), encoding="utf-8")
        print(out / f"{name}.ipynb")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
