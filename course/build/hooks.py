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
- draws the charts the pages print ahead, in a process pool it owns
  (course/charts/__init__.py, `Ahead`), while it builds from the first
  page: the blocks run in a process of their own (execute.py), so a
  rebuild imports every lab afresh, and a block, a chart or a notebook
  cell past its time limit is stopped with its process;
- gives the notebooks' cells the blocks' time limit (nbclient's
  timeout, course/build/jupyter/jupyter_nbconvert_config.py);
- keeps each block's HTML, the charts and mkdocs-jupyter's pages under
  course/build/cache.py's key, and Jinja's compiled templates, so that a
  serve rebuild after a prose edit runs and compiles nothing;
- copies the npm files the site serves, writes the labs' archive and
  the notebooks' downloads into the site (course/build/vendor.py, runner.py,
  notebooks.py).
"""

import hashlib
import itertools
import json
import os
import re
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
PRE = re.compile(r"<pre\b[^>]*>(.*?)</pre>", re.DOTALL)
NOT_CODE = re.compile(r"<(?!/?code\b)[^>]*>")  # any tag but <code>
SVG = re.compile(r"<svg\b.*?</svg>", re.DOTALL)
STYLE = re.compile(r"<style\b[^>]*>.*?</style>\s*", re.DOTALL)
CELL_ID = re.compile(r'id="cell-id=[^"]*"')
HEADING = re.compile(r"<h[1-6]\b")
CONFIG = ROOT / "mkdocs.yml"
JUPYTER = ROOT / "course" / "build" / "jupyter"  # nbconvert's settings
CODE_BOX = re.compile(r'(<div class="highlight-ipynb[^"]*">)<pre>')


@dataclass
class Block:
    code: str
    session: str | None
    where: str = ""
    limit: float = 0.0  # its time limit, seconds
    ran: bool = True  # False: its HTML came from the cache, unrun


@dataclass
class Build:
    page: object = None  # the page being rendered (mkdocs Page)
    blocks: list = field(default_factory=list)  # its blocks so far
    labs: int = 0  # its labs so far: their ids' prefix
    full: dict = field(default_factory=dict)  # page URL -> its HTML
    archive: str = ""  # the name of the labs' archive
    kept: Path | None = None  # where blocks' HTML is kept (cache on)
    worker: execute.Runner | None = None  # runs the blocks
    ahead: charts.Ahead | None = None  # draws the charts ahead

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
        paths = os.environ.get("JUPYTER_CONFIG_PATH", "").split(os.pathsep)
        if str(JUPYTER) not in paths:  # Jupyter's own way to add settings
            paths.insert(0, str(JUPYTER))
            os.environ["JUPYTER_CONFIG_PATH"] = os.pathsep.join(paths)
        return config

    def on_pre_build(self, config):
        vendor.check()  # before the pages, not after
        self.archive = runner.archive()[0]
        self.kept = None
        if cache.enabled():  # mkdocs.yml's extensions shape the HTML too
            digest = hashlib.sha256(CONFIG.read_bytes()).hexdigest()[:16]
            self.kept = cache.folder("blocks") / digest
            self.kept.mkdir(exist_ok=True)
        self.worker = execute.Runner(setup=(cache.use, cache.store()))

    def on_nav(self, nav, config, files):
        """Start drawing the pages' charts ahead, last page first, while
        this process builds from the first (course/charts/)."""
        names = [
            name
            for file in files.documentation_pages()  # in the build's order
            if file.src_uri.endswith(".md")
            for name in charts.printed(file.content_string)
        ]
        self.ahead = charts.Ahead(names)

    def stop(self):
        """End every process this build started."""
        for owned in (self.ahead, self.worker):
            if owned is not None:
                owned.close()

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
            block = Block(code, session, where, limit)
            self.blocks.append(block)
            limits = [limit, *(b.limit for b in earlier)]
            stored = self.stored(source, language, options, setup, limits)
            if stored and stored.is_file():
                block.ran = False
                if options["source"] == "lab":
                    self.labs += 1
                return Markup(stored.read_text(encoding="utf-8"))
            for skipped in [b for b in earlier if not b.ran]:
                self.run(skipped.code, skipped.where, session=session)
                skipped.ran = True  # the session's globals, as if it had run

            def run(code, **_):
                return self.run(code, where, limit, session)

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
                    # a Run runs the setup again: its limits count too
                    runner=self.runner(code, setup, sum(limits)),
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

    def run(self, code, where, limit=execute.TIME_LIMIT_S, session=None):
        """What the block prints, once the charts it prints are drawn."""
        if self.worker is None:  # a page converted without a build
            self.worker = execute.Runner()
        for name in charts.printed(code):
            if self.ahead is not None:
                try:
                    self.ahead.wait_for(name, limit)
                except TimeoutError as error:
                    raise execute.SnippetError(f"{where}: {error}") from None
        return self.worker.run(code, where=where, limit=limit, session=session)

    def stored(self, source, language, options, setup, limits):
        """Where the HTML of this block is kept under course.build.cache's key
        and mkdocs.yml's digest, or None with the cache off. The name
        holds all else the HTML depends on but the block's line, which
        only an error shows."""
        if self.kept is None:
            return None
        options = dict(options, extra=dict(options["extra"], line=None))
        page = self.page.file.src_uri if self.page else ""
        what = [page, self.labs, language, source, setup]
        text = json.dumps([*what, options, limits], sort_keys=True)
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
        self.stop()

    def on_post_build(self, config):
        self.stop()  # every chart a page printed is drawn
        vendor.copy(config.site_dir)
        runner.write_archive(config.site_dir)
        notebooks.publish(config.site_dir)


build = Build()
on_config = build.on_config
on_pre_build = build.on_pre_build
on_nav = build.on_nav
on_page_markdown = build.on_page_markdown
on_env = build.on_env
on_page_content = build.on_page_content
on_page_context = build.on_page_context
on_build_error = build.on_build_error
on_post_build = build.on_post_build
