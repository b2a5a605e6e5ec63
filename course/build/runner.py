"""Run in your browser: what the build hands the reader's browser.

- The labs' Python as one archive, assets/run/snippets-<sha>.zip: every
  .py file under snippets/, entries sorted, times and modes fixed, so
  the same sources give the same bytes and the name says which (`archive`).
- For each lab block, the data its runner needs (`element`): the code,
  the code of the earlier blocks of its session (a block may use what
  they defined; the runner runs them first, as the page did), the time
  limit, the page and the archive. docs/assets/run/run.js reads it; it
  decides nothing itself.

A block is offered when it and the blocks before it in its session
import only the standard library and the labs (`offered`). The labs
themselves import only the standard library: ruff's banned-api rule
(pyproject.toml) holds them to it, bar snippets/torchrun/.
"""

import ast
import hashlib
import io
import json
import sys
import zipfile
from pathlib import Path

from markupsafe import Markup

from course import ROOT

RUN_DIR = "assets/run"  # in the site: run.js, worker.js and the archive
ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # the oldest time a zip entry can hold
NEEDS_TORCH = "snippets.torchrun"


def archive(root=ROOT):
    """(name, bytes) of the zip of snippets/*.py under `root`."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zipped:
        for path in sorted(Path(root, "snippets").rglob("*.py")):
            entry = zipfile.ZipInfo(
                path.relative_to(root).as_posix(), ZIP_TIME
            )
            entry.external_attr = 0o644 << 16
            entry.create_system = 3  # unix, whatever builds it
            entry.compress_type = zipfile.ZIP_DEFLATED
            zipped.writestr(entry, path.read_bytes(), compresslevel=9)
    data = buffer.getvalue()
    return f"snippets-{hashlib.sha256(data).hexdigest()[:16]}.zip", data


def write_archive(site_dir, root=ROOT):
    """Write the archive into site_dir/assets/run/, alone there."""
    name, data = archive(root)
    folder = Path(site_dir) / RUN_DIR
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("snippets-*.zip"):
        old.unlink()
    (folder / name).write_bytes(data)
    return name


def _imports(code):
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level:
            yield node.module


def offered(*codes):
    """Whether the browser's Python can run these blocks, in order."""
    try:
        names = {name for code in codes for name in _imports(code)}
    except SyntaxError:
        return False
    return all(
        name.split(".")[0] in sys.stdlib_module_names
        or name.split(".")[0] == "snippets"
        and not name.startswith(NEEDS_TORCH)
        for name in names
    )


def element(code, *, setup, limit, page, archive_name):
    """The runner's data: a JSON <script> element that run.js mounts.
    Markup, as markdown-exec's own HTML is."""
    data = {
        "source": code,
        "setup": list(setup),
        "limit": limit,
        "page": page,
        "archive": archive_name,
    }
    text = json.dumps(data, ensure_ascii=True, sort_keys=True)
    # no "</script>" or "<!--" may end the element early
    text = text.replace("<", "\\u003c").replace(">", "\\u003e")
    tag = '<script type="application/json" data-course-runner>'
    return Markup(f"{tag}{text}</script>")
