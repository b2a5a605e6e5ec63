"""The site's MkDocs hooks (mkdocs.yml, `hooks:`): one `Build` per build.

MkDocs loads this file afresh for every build, `mkdocs serve`'s
rebuilds included, so what a build learns lives in one object and dies
with it. It

- runs the Python blocks (python, py and pycon fences): markdown-exec
  runs them, course/build/execute.py adds the time limit and stops the
  build on a failure with the page and line; a source="lab" block is
  laid out output first (labs.py) with its Run tab (runner.py);
- hands the search plugin a light copy of each page (code as plain
  text, no inline SVG), which it reads several times faster;
- gives the notebook pages the site's style instead of JupyterLab's
  inlined CSS, and cell ids that do not change between builds;
- draws the pages' charts in a second process as well, last page first
  (course/charts/__init__.py), and renders the notebook pages in a thread from
  the start, so that both cores work: the notebooks' kernels are
  processes of their own;
- keeps each block's HTML, the charts and mkdocs-jupyter's pages under
  course/build/cache.py's key, and Jinja's compiled templates, so that a serve
  rebuild after a prose edit runs and compiles nothing; `make serve`
  (`--dirty`) then rebuilds that page only, and every page after an
  edit anywhere else;
- copies the npm files the site serves, writes the labs' archive and
  the notebooks' downloads into the site (course/build/vendor.py, runner.py,
  notebooks.py).
"""

import hashlib
import itertools
import json
import logging
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import jinja2
from markdown_exec import base_format, validator
from markupsafe import Markup
from mkdocs.plugins import event_priority

from course import ROOT, charts
from course.build import cache, execute, labs, notebooks, runner, vendor
from course.build.fences import number_lines

PYTHON_FENCES = ("python", "py", "pycon")
FRESH = (
    "snippets",
    "course.charts",
    "course.charts._svg",
)  # imported anew per build
PRE = re.compile(r"<pre\b[^>]*>(.*?)</pre>", re.DOTALL)
NOT_CODE = re.compile(r"<(?!/?code\b)[^>]*>")  # any tag but <code>
SVG = re.compile(r"<svg\b.*?</svg>", re.DOTALL)
STYLE = re.compile(r"<style\b[^>]*>.*?</style>\s*", re.DOTALL)
CELL_ID = re.compile(r'id="cell-id=[^"]*"')
HEADING = re.compile(r"<h[1-6]\b")
CONFIG = ROOT / "mkdocs.yml"
SOURCES, COURSE = ROOT / "snippets", ROOT / "course"
CODE_BOX = re.compile(r'(<div class="highlight-ipynb[^"]*">)<pre>')


class DirtyBuildNotice(logging.Filter):
    """Drops MkDocs' warning that a dirty build (`make serve`) may leave
    navigation stale: on_files rebuilds every page after an edit to
    anything they are made from but a page, and the nav's titles are
    mkdocs.yml's. Under strict mode,
    the warning would abort every rebuild."""

    def filter(self, record):
        return not record.getMessage().startswith("A 'dirty' build")


def quiet_the_dirty_build_notice():
    """One DirtyBuildNotice on MkDocs' build logger, however many times
    `mkdocs serve` loads this file."""
    log = logging.getLogger("mkdocs.commands.build")
    for old in list(log.filters):
        if type(old).__name__ == DirtyBuildNotice.__name__:
            log.removeFilter(old)
    log.addFilter(DirtyBuildNotice())


@dataclass
class Block:
    code: str
    session: str | None
    where: str = ""
    ran: bool = True  # False: its HTML came from the cache, unrun


@dataclass
class Build:
    page: object = None  # the page being rendered (mkdocs Page)
    blocks: list = field(default_factory=list)  # its blocks so far
    labs: int = 0  # its labs so far: their ids' prefix
    full: dict = field(default_factory=dict)  # page URL -> its HTML
    archive: str = ""  # the name of the labs' archive
    kept: Path | None = None  # where blocks' HTML is kept (cache on)
    drawing: subprocess.Popen | None = None  # drawing charts ahead
    rendering: dict = field(default_factory=dict)  # notebook -> Future

    def on_config(self, config):
        """Python fences run through `self.format`; notebook cache."""
        fences = config.mdx_configs.setdefault("pymdownx.superfences", {})
        fences.setdefault("custom_fences", []).extend(
            {
                "name": name,
                "class": "pycon" if name == "pycon" else "python",
                "validator": validator,
                "format": self.format,
            }
            for name in PYTHON_FENCES
        )
        if "mkdocs-jupyter" in config.plugins:  # its cache: .cache/, or
            jupyter = config.plugins["mkdocs-jupyter"].config  # with CI=true
            jupyter["cache"] = True  # this build's own folder (cache.py)
            jupyter["cache_dir"] = str(cache.folder("notebooks"))
        quiet_the_dirty_build_notice()
        return config

    def on_pre_build(self, config):
        vendor.check()  # before the pages, not after
        self.archive = runner.archive()[0]
        self.kept = None
        if cache.enabled():  # mkdocs.yml's extensions shape the HTML too
            digest = hashlib.sha256(CONFIG.read_bytes()).hexdigest()[:16]
            self.kept = cache.folder("blocks") / digest
            self.kept.mkdir(exist_ok=True)
        # Under `mkdocs serve`, one Python builds again and again: the
        # blocks and the charts must import a lab (or a chart) edited
        # since the last build afresh, not from sys.modules.
        for name in [n for n in sys.modules if n.startswith(FRESH)]:
            del sys.modules[name]

    def on_files(self, files, config):
        """`mkdocs serve --dirty` rebuilds a page when its source is
        newer than its built copy. The pages also run the labs, include
        files and are built by course/ and mkdocs.yml: an edit to any of
        those rebuilds them all."""
        pages = files.documentation_pages()
        built = [f for f in pages if os.path.isfile(f.abs_dest_path)]
        if not built:  # a clean build: every page is built anyway
            return files
        used = [CONFIG, *SOURCES.rglob("*"), *COURSE.rglob("*")]
        used += [
            Path(f.abs_src_path) for f in files.media_files() if f.abs_src_path
        ]
        newest = max(
            path.stat().st_mtime
            for path in used
            if path.is_file() and "__pycache__" not in path.parts
        )
        stale = [
            f for f in built if os.path.getmtime(f.abs_dest_path) < newest
        ]
        for file in stale:  # older than its source: MkDocs rebuilds it
            os.utime(file.abs_dest_path, (0, 0))
        search = config.plugins.get("material/search")
        if stale and search is not None:  # it would keep the old copies
            search.search_index_prev = None
        return files

    def on_nav(self, nav, config, files):
        """Start drawing the pages' charts in a second process, last
        page first, while this one builds from the first (course/charts/),
        and the notebooks in a thread if their cache is empty."""
        names = [
            name
            for file in files.documentation_pages()  # in the build's order
            if file.src_uri.endswith(".md")
            for name in charts.printed(file.content_string)
        ]
        self.drawing = charts.ahead(names)
        self.rendering = self.render_ahead(config, files)

    def render_ahead(self, config, files):
        """Render the notebook pages now, in a thread: their kernels run
        on the other core while this thread builds the pages before
        them. When the build reaches one, mkdocs-jupyter finds it in its
        cache (on_config). Not when that cache holds any page: a warm
        rebuild would only read it twice, and after one notebook's edit
        that one renders in its turn, as without this thread."""
        plugin = config.plugins.get("mkdocs-jupyter")
        if plugin and any(Path(plugin.config["cache_dir"]).glob("*.json")):
            return {}
        pages = [
            file.page
            for file in files.documentation_pages()
            if plugin and file.page and plugin.should_include(file)
        ]
        if not pages:
            return {}

        def render(page):
            plugin.on_pre_page(page, config=config, files=files)
            page.render(config, files)

        pool = ThreadPoolExecutor(max_workers=1)
        rendering = {p.file.src_uri: pool.submit(render, p) for p in pages}
        pool.shutdown(wait=False)  # it renders them all, then ends
        return rendering

    @event_priority(100)  # before mkdocs-jupyter's
    def on_pre_page(self, page, config, files):
        """A notebook page waits for its render ahead (its cache entry)."""
        rendering = self.rendering.pop(page.file.src_uri, None)
        if rendering is not None:
            rendering.result()  # done, or its error stops the build
        return page

    def stop_drawing(self, wait):
        if self.drawing is not None:
            if not wait:
                self.drawing.kill()
            try:
                self.drawing.wait(timeout=charts.WAIT_S)
            except subprocess.TimeoutExpired:
                self.drawing.kill()
                self.drawing.wait()
            self.drawing = None

    def on_page_markdown(self, markdown, page, config, files):
        self.page, self.blocks, self.labs = page, [], 0
        whole = page.file.content_string  # the body follows front matter
        front = (
            whole.removesuffix(markdown) if whole.endswith(markdown) else ""
        )
        return number_lines(markdown, first_line=front.count("\n") + 1)

    def where(self, line):
        """'docs/page.md:LINE' of the page being built."""
        page = f"docs/{self.page.file.src_uri}" if self.page else "<page>"
        return f"{page}:{line}" if line else page

    def session_prefix(self):
        """What the page's sessions are named after: its file's stem,
        or its folder's for an index.md."""
        path = Path(self.page.file.src_uri if self.page else "page.md")
        if path.stem == "index" and path.parent.name:
            return path.parent.name
        return path.stem

    def format(self, source, language, css_class, options, md, **kwargs):
        """Superfences formatter of the Python fences: run the block,
        stop the build when it fails."""
        extra = dict(options["extra"])
        where = self.where(extra.pop("line", None))
        try:
            limit = execute.time_limit(extra.pop("timeout", None), where)
            session = self.session(options["session"], where)
            code, shown = (
                execute.pycon(source) if language == "pycon" else (source,) * 2
            )
            earlier = execute.session_setup(self.blocks, session)
            setup = [b.code for b in earlier]
            block = Block(code, session, where)
            self.blocks.append(block)
            stored = self.stored(source, language, options, setup, limit)
            if stored and stored.is_file():
                block.ran = False
                if options["source"] == "lab":
                    self.labs += 1
                return Markup(stored.read_text(encoding="utf-8"))
            for skipped in [b for b in earlier if not b.ran]:
                execute.run(skipped.code, where=skipped.where, session=session)
                skipped.ran = True  # the session's globals, as if it had run

            def run(code, **_):
                return execute.run(
                    code, where=where, limit=limit, session=session
                )

            if options["source"] == "lab":
                lab = labs.Lab(
                    language=language,
                    source=code,
                    code=shown,
                    session=session,
                    output=run(code),
                    html=options["html"],
                    result=options["result"],
                    idea=labs.idea(shown, labs.pick(extra.get("idea"))),
                    runner=self.runner(code, setup, limit),
                    stash={},
                )
                self.labs += 1
                html = labs.render(md, lab, id_prefix=f"lab{self.labs}-")
                return self.store(stored, f'<div class="lab">{html}</div>')
            return self.store(
                stored,
                base_format(
                    language=language,
                    run=run,
                    code=source,
                    md=md,
                    transform_source=execute.pycon
                    if language == "pycon"
                    else None,
                    **{**options, "extra": extra},
                ),
            )
        except execute.SnippetError:
            raise
        except Exception as error:  # superfences would print it as code
            raise execute.SnippetError(f"{where}: {error!r}") from error

    def stored(self, source, language, options, setup, limit):
        """Where the HTML of this block is kept under course.build.cache's key
        and mkdocs.yml's digest, or None with the cache off. The name
        holds all else the HTML depends on but the block's line, which
        only an error shows."""
        if self.kept is None:
            return None
        options = dict(options, extra=dict(options["extra"], line=None))
        page = self.page.file.src_uri if self.page else ""
        what = [page, self.labs, language, source, setup]
        text = json.dumps([*what, options, limit], sort_keys=True)
        name = hashlib.sha256(text.encode()).hexdigest()[:32]
        return self.kept / f"{name}.html"

    def store(self, path, html):
        """`html`, kept at `path` (if any) unless it holds a heading:
        markdown-exec adds those to the page's table of contents as the
        block is converted, which a kept copy would not."""
        if path and not HEADING.search(html):
            path.write_text(html, encoding="utf-8")
        return Markup(html)

    def session(self, name, where):
        """The block's session (None for none), named after its page:
        markdown-exec shares a session's globals across pages."""
        prefix = self.session_prefix()
        if name and not re.fullmatch(rf"{re.escape(prefix)}(-[\w-]+)?", name):
            raise execute.SnippetError(
                f"{where}: session {name!r}: name it after its page, "
                f"{prefix!r} or {prefix!r}-something (markdown-exec shares "
                "a session's globals across pages)"
            )
        return name or None

    def runner(self, code, setup, limit):
        """The lab's Run tab data, or "" when the browser cannot run it."""
        if not runner.offered(*setup, code):
            return ""
        return runner.element(
            code,
            setup=setup,
            limit=limit,
            page=self.page.file.src_uri if self.page else "",
            archive_name=self.archive,
        )

    def on_env(self, env, config, files):
        """Jinja keeps the theme's compiled templates (it checks their
        source): a rebuild need not compile them again."""
        if cache.enabled():
            folder = cache.STORE / "templates"
            folder.mkdir(parents=True, exist_ok=True)
            env.bytecode_cache = jinja2.FileSystemBytecodeCache(str(folder))
        return env

    @event_priority(-100)  # after every other plugin's on_page_content
    def on_page_content(self, html, page, config, files):
        uri = page.file.src_uri
        if uri.startswith("exercises/") and uri.endswith(".py"):  # notebook
            html = STYLE.sub("", html)  # JupyterLab's 590 KB of CSS
            numbers = itertools.count(1)
            html = CELL_ID.sub(lambda m: f'id="cell-id={next(numbers)}"', html)
            # code boxes scroll sideways: reachable by keyboard
            html = CODE_BOX.sub(r'\1<pre tabindex="0">', html)
        self.full[page.url] = html
        html = SVG.sub("", html)
        return PRE.sub(lambda m: f"<pre>{NOT_CODE.sub('', m[1])}</pre>", html)

    @event_priority(-100)  # after the search plugin's on_page_context
    def on_page_context(self, context, page, config, nav):
        page.content = self.full.pop(page.url)
        return context

    def on_build_error(self, error):
        self.stop_drawing(wait=False)

    def on_post_build(self, config):
        self.stop_drawing(wait=True)  # every chart is drawn: it ends
        vendor.copy(config.site_dir)
        runner.write_archive(config.site_dir)
        notebooks.publish(config.site_dir)


build = Build()
on_config = build.on_config
on_pre_build = build.on_pre_build
on_files = build.on_files
on_nav = build.on_nav
on_pre_page = build.on_pre_page
on_page_markdown = build.on_page_markdown
on_env = build.on_env
on_page_content = build.on_page_content
on_page_context = build.on_page_context
on_build_error = build.on_build_error
on_post_build = build.on_post_build
