"""The exercise notebooks: standalone export, download and Colab links.

The notebooks live in git as jupytext percent files,
docs/exercises/ms2_*.py, which import the labs from snippets/.
mkdocs-jupyter executes and renders them at build time (its set-up is
course/jupyter.py). A reader who downloads one has no snippets/
package, so `export()` builds an .ipynb that carries the lab files it
needs (found by following the imports) and writes them next to itself
before the first import.

The build publishes that file as site/exercises/NAME.ipynb: the block
on docs/exercises/index.md that prints the links calls `publish()`,
which writes it into the site being built. The notebook page links to
it from a cell tagged site-only (`links()`), whose code the page hides;
docs/assets/notebooks.css styles the notebook pages.

Colab opens notebooks from GitHub only, so the Colab link points at the
exported copy on the repository's `notebooks` branch, which CI fills
with `python3 -m course.notebooks export DIR`. This module uses the
standard library only.

Command line:

    python3 -m course.notebooks export DIR   # write DIR/*.ipynb
"""

import html
import json
import re
import sys
from pathlib import Path

from course.cache import closure, imported_modules, module_file

ROOT = Path(__file__).resolve().parent.parent
EXERCISES = ROOT / "docs" / "exercises"
NOTEBOOKS = ("ms2_1", "ms2_2")
SITE_ONLY = "site-only"  # cells that only make sense on the site
LAB_DIR = "course_labs"  # where a standalone notebook writes the labs
COLAB_BRANCH = "notebooks"


def _check_name(name):
    if name not in NOTEBOOKS:
        names = ", ".join(repr(n) for n in NOTEBOOKS)
        raise ValueError(f"name must be one of {names}; got {name!r}")


def lab_files(sources):
    """{relative path: text} of every lab the code imports, with the
    labs those labs import, in a stable order."""
    modules = set().union(*(imported_modules(s) for s in sources))
    ours = sorted(m for m in modules if module_file(m))
    for module in ours:
        if not module.startswith("snippets."):
            raise ValueError(
                f"a notebook cell outside {SITE_ONLY!r} imports {module}, "
                "which needs the build tools; import labs only"
            )
    files = closure(*ours)
    for rel in files:
        if not rel.startswith("snippets/"):
            raise ValueError(f"a lab imports {rel}, which is no lab")
    return {rel: text.decode("utf-8") for rel, text in files.items()}


def _literal(text):
    """Python source for the string `text`, readable where possible."""
    if "'''" not in text and not text.endswith("\\"):
        return "r'''" + text + "'''"
    return repr(text)


def _setup_source(files):
    entries = "\n".join(
        f"    {name!r}: {_literal(text)}," for name, text in files.items()
    )
    return (
        "# The course's lab files, carried by this notebook so that it\n"
        f"# runs anywhere: written to ./{LAB_DIR}, then imported from "
        "there.\n"
        "import pathlib\n"
        "import sys\n"
        "\n"
        "LAB_FILES = {\n"
        f"{entries}\n"
        "}\n"
        "for name, text in LAB_FILES.items():\n"
        f'    path = pathlib.Path("{LAB_DIR}", name)\n'
        "    path.parent.mkdir(parents=True, exist_ok=True)\n"
        '    path.write_text(text, encoding="utf-8")\n'
        f'sys.path.insert(0, str(pathlib.Path("{LAB_DIR}").resolve()))\n'
        'print("labs ready:", ", ".join(LAB_FILES))'
    )


CELL = re.compile(r"^# %%(?P<md> \[markdown\])?(?P<meta>.*)$", re.M)


def read_percent(path):
    """The cells of a jupytext percent file, as (kind, source, tags).

    The notebooks use a small part of the format: `# %%` code cells,
    `# %% [markdown]` cells and `tags=[...]`. Reading it here keeps
    jupytext and nbformat out of the kernel that renders the page
    (about a second per notebook); tests/test_notebooks.py checks that
    jupytext reads the same cells.
    """
    text = Path(path).read_text(encoding="utf-8")
    marks = list(CELL.finditer(text))
    cells = []
    for mark, after in zip(marks, [*marks[1:], None], strict=True):
        body = text[mark.end() : after.start() if after else len(text)]
        lines = body.strip("\n").split("\n")
        kind = "markdown" if mark["md"] else "code"
        if kind == "markdown":
            lines = [ln[2:] if ln.startswith("# ") else ln[1:] for ln in lines]
        tags = re.search(r"tags=\[([^\]]*)\]", mark["meta"])
        tags = re.findall(r'"([^"]+)"', tags.group(1)) if tags else []
        cells.append((kind, "\n".join(lines), tags))
    return cells


def _cell(name, i, kind, source):
    cell = {
        "cell_type": kind,
        "id": f"{name.replace('_', '-')}-{i:02d}",
        "metadata": {},
        "source": source.splitlines(keepends=True),
    }
    if kind == "code":
        cell.update(execution_count=None, outputs=[])
    return cell


def export(name):
    """The standalone .ipynb text of notebook `name` (deterministic)."""
    _check_name(name)
    cells = [
        (kind, source)
        for kind, source, tags in read_percent(EXERCISES / f"{name}.py")
        if SITE_ONLY not in tags
    ]
    files = lab_files(src for kind, src in cells if kind == "code")
    note = (
        "markdown",
        "This copy of the notebook carries the course's lab files: run the "
        f"next cell first. It writes them to `./{LAB_DIR}` and puts that "
        "folder on `sys.path`, so the `from snippets...` imports below "
        "work without the course repository.",
    )
    cells[1:1] = [note, ("code", _setup_source(files))]  # after the task
    nb = {
        "cells": [_cell(name, i, *cell) for i, cell in enumerate(cells)],
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
    return json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def repo_slug():
    """'owner/repo' from repo_url in mkdocs.yml."""
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    url = re.search(r"^repo_url:\s*(\S+)", text, re.M).group(1)
    match = re.fullmatch(r"https://github\.com/([\w.-]+/[\w.-]+?)/?", url)
    if not match:
        raise ValueError(f"repo_url must be a GitHub repository, got {url}")
    return match.group(1)


def colab_url(name):
    _check_name(name)
    return (
        f"https://colab.research.google.com/github/{repo_slug()}"
        f"/blob/{COLAB_BRANCH}/{name}.ipynb"
    )


def _site_dir_being_built():
    """site_dir of the MkDocs build that runs this code, or None: the
    build's hooks (course/hooks.py) name it in course.execute."""
    try:
        from course import execute
    except ImportError:  # not building: a reader's or a notebook's Python
        return None
    building = execute.building
    return Path(building.config.site_dir) if building else None


def publish(name, site_dir=None):
    """Write the standalone notebook into the site being built, as
    site/exercises/NAME.ipynb, and return the links to it for the
    exercises page. Outside a build nothing is written and the same
    HTML comes back, so the page's recorded output holds either way."""
    _check_name(name)
    site_dir = site_dir or _site_dir_being_built()
    if site_dir is not None:
        target = Path(site_dir) / "exercises" / f"{name}.ipynb"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(export(name), encoding="utf-8")
    return Links(name, base="")._repr_html_()


class Links:
    """Shown by Jupyter as HTML: the download and Colab links.

    `base` is the way from the page to site/exercises/: the notebook
    pages are exercises/NAME/ (MkDocs' directory URLs), hence "../".
    """

    def __init__(self, name, base="../"):
        _check_name(name)
        self.name = name
        self.base = base

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

    def __repr__(self):
        return f"{self.name}.ipynb: download, or {colab_url(self.name)}"


def links(name):
    return Links(name)


def main(argv):
    if len(argv) != 2 or argv[0] != "export":
        print(__doc__.strip().rsplit("\n\n", 1)[-1], file=sys.stderr)
        return 2
    out = Path(argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for name in NOTEBOOKS:
        (out / f"{name}.ipynb").write_text(export(name), encoding="utf-8")
        print(out / f"{name}.ipynb")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
