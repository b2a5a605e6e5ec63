"""Run in your browser: what the site ships so a reader can run a lab.

Three things, all made here and written into the site at build time by
course/pyodide.py (a MkDocs hook):

- the labs' Python as ONE archive, assets/run/snippets-<sha>.zip: every
  .py file under snippets/, entries sorted, timestamps and permissions
  fixed, so the same sources give the same bytes and the name (the
  archive's sha256) says which sources it holds (`archive`,
  `check_site` finds a stale one);
- the decision whether a block can run in the browser at all: code that
  imports anything other than the standard library and snippets/
  (course.figures, torch, the torchrun measurement) cannot, and is not
  offered (`not_offered` says why), nor are the later blocks of its
  session, which may use what it defined (`refused`);
- the data one block hands to the page's runner (`block_html`): a
  <script type="application/json" data-course-runner> element with the
  block's source, session, page and the archive's name. The layout
  calls `mountRunner(element, data)` from docs/assets/run/run.js with
  that data, or `mountAll()` mounts every such element of a page.
"""

import functools
import hashlib
import io
import json
import sys
import zipfile
from pathlib import Path

from markupsafe import Markup

from course.cache import closure, imported_modules, module_file

ROOT = Path(__file__).resolve().parent.parent
SNIPPETS = "snippets"
RUN_DIR = "assets/run"  # in the site: run.js, worker.js and the archive
ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # the oldest time a zip entry can hold
# Standard-library modules that Pyodide's core does not provide or that
# cannot work in a browser tab (no processes, threads, sockets or a
# terminal); a block that needs one is not offered.
NOT_IN_BROWSER = frozenset(
    {
        "concurrent",
        "curses",
        "ctypes",
        "lzma",
        "multiprocessing",
        "readline",
        "socket",
        "sqlite3",
        "ssl",
        "subprocess",
        "threading",
        "tkinter",
        "turtle",
        "webbrowser",
    }
)


class StaleArchive(RuntimeError):
    """The site's archive does not hold the current snippets/."""


# --- the archive ----------------------------------------------------------


def archive_files(root=ROOT):
    """{'snippets/ddp/allreduce.py': bytes} for every lab file, sorted."""
    base = Path(root)
    found = sorted((base / SNIPPETS).rglob("*.py"))
    return {
        p.relative_to(base).as_posix(): p.read_bytes()
        for p in found
        if "__pycache__" not in p.parts
    }


def build_archive(root=ROOT):
    """The zip of snippets/, byte for byte the same for the same files."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in archive_files(root).items():
            entry = zipfile.ZipInfo(name, ZIP_TIME)
            entry.external_attr = 0o644 << 16
            entry.create_system = 3  # unix, whatever builds it
            entry.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(entry, data, compresslevel=9)
    return buffer.getvalue()


def archive_name(data):
    """snippets-<first 16 hex digits of the archive's sha256>.zip"""
    return f"snippets-{hashlib.sha256(data).hexdigest()[:16]}.zip"


@functools.cache
def _archive(root):
    data = build_archive(root)
    return archive_name(data), data


def archive(root=ROOT):
    """(name, bytes) of the archive of snippets/ under `root`, made once
    per build: the hook calls `forget()` before each (mkdocs serve
    rebuilds in the same process when a lab changes)."""
    return _archive(str(Path(root)))


def forget():
    """Drop the archive made so far: snippets/ may have changed."""
    _archive.cache_clear()


def write_archive(site_dir, root=ROOT):
    """Write the archive into site_dir/assets/run/, remove older ones,
    and return its path."""
    name, data = archive(root)
    folder = Path(site_dir) / RUN_DIR
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("snippets-*.zip"):
        if old.name != name:
            old.unlink()
    path = folder / name
    if not path.is_file() or path.read_bytes() != data:
        path.write_bytes(data)
    return path


def check_site(site_dir, root=ROOT):
    """Raise StaleArchive unless site_dir holds exactly one archive, named
    after its own digest, and it holds the current snippets/ of `root`."""
    folder = Path(site_dir) / RUN_DIR
    found = sorted(folder.glob("snippets-*.zip"))
    if len(found) != 1:
        names = [p.name for p in found]
        raise StaleArchive(f"{folder}: expected one archive, found {names}")
    path = found[0]
    data = path.read_bytes()
    if archive_name(data) != path.name:
        raise StaleArchive(f"{path.name}: its name is not its sha256")
    data_now = build_archive(root)
    name = archive_name(data_now)
    if name == path.name:
        return path
    with zipfile.ZipFile(io.BytesIO(data)) as shipped:
        old = {i.filename: shipped.read(i) for i in shipped.infolist()}
    new = archive_files(root)
    changed = sorted(
        n for n in old.keys() | new.keys() if old.get(n) != new.get(n)
    )
    raise StaleArchive(
        f"{path.name} does not hold the current snippets/ (they make "
        f"{name}); changed since it was built: {', '.join(changed)}. "
        "Rebuild the site (`make build`)."
    )


# --- which blocks can run in the browser ----------------------------------


def _top(name):
    return name.split(".")[0]


def not_offered(code, root=ROOT):
    """None when `code` can run in the browser, else why not: the first
    module it imports, directly or through a lab, that the browser's
    Python lacks (anything outside the standard library and snippets/)."""
    try:
        names = imported_modules(code)
    except SyntaxError as error:
        return f"does not parse: {error}"
    labs = sorted(n for n in names if module_file(n, Path(root)))
    sources = [code.encode()]
    if labs:
        sources += list(closure(*labs, root=Path(root)).values())
    for source in sources:
        names = imported_modules(source)
        for name in sorted(names):
            top = _top(name)
            if top == SNIPPETS:
                continue
            if top == "course":  # the build's own code, not shipped
                ours = [n for n in names if _top(n) == top]
                name = max(
                    (n for n in ours if module_file(n, Path(root))),
                    key=len,
                    default=top,
                )
                return f"imports {name}, the build's code, not shipped"
            if top not in sys.stdlib_module_names:
                return f"imports {top}, which the browser's Python lacks"
            if top in NOT_IN_BROWSER:
                return f"imports {top}, which cannot work in a browser tab"
    return None


def refused(code, session=None, sessions=None):
    """`not_offered(code)`, or why a block is refused for its session:
    a block may use what an earlier block of its session defined, so
    after one block of a session is refused the later ones are too.
    `sessions` holds the page's refused sessions so far, and gains this
    block's session when it is refused."""
    if sessions is None:
        sessions = set()
    if session and session in sessions:
        return f"in session {session!r}, after a block not offered"
    why = not_offered(code)
    if why is not None and session:
        sessions.add(session)
    return why


def runnable_code(source, language):
    """The Python a block runs: a pycon transcript's >>> lines."""
    if language == "pycon":
        from course.execute import pycon_code

        return pycon_code(source)
    return source


# --- the hook for the page layout -----------------------------------------


def block_data(source, language="python", session=None, page=None):
    """What the runner of one block needs, or None when the block is not
    offered for running."""
    from course import execute

    built = execute.building
    code = runnable_code(source, language)
    sessions = built.refused_sessions if built is not None else None
    if refused(code, session, sessions) is not None:
        return None
    if page is None:
        page = built.page.file.src_uri if built is not None else ""
    name, _ = archive()
    return {
        "source": code,
        "session": session or None,
        "page": page,
        "archive": name,
    }


def block_html(source, language="python", session=None, page=None):
    """The HTML to put next to a block: a JSON <script> element that
    run.js's mountAll() finds, or "" when the block is not offered.
    `source` is the block's code after its --8<-- lines are expanded
    (what the build runs); `page` defaults to the page being built.
    It is Markup, as markdown-exec's own HTML is: Markup + str would
    escape the str."""
    data = block_data(source, language, session, page)
    if data is None:
        return Markup("")
    text = json.dumps(data, ensure_ascii=True, sort_keys=True)
    # no "</script>" or "<!--" may end the element early
    text = text.replace("<", "\\u003c").replace(">", "\\u003e")
    element = '<script type="application/json" data-course-runner>'
    return Markup(f"{element}{text}</script>")
