"""Browser helpers for the site tests (not shown to readers).

Finds or installs the Chromium that Playwright drives, serves the built
site/ on 127.0.0.1, lists its pages, measures page weight and takes
screenshots. Command line:

    python -m course.browser install      # get a browser if none is found
    python -m course.browser weight       # page weight table (make bench)
    python -m course.browser screenshots  # every page, both palettes
"""

import argparse
import contextlib
import functools
import gzip
import http.server
import json
import os
import posixpath
import re
import shutil
import subprocess
import sys
import threading
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

from mkdocs.config import load_config
from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parent.parent
# COURSE_SITE points the tests at another build (default: site/).
SITE = Path(os.environ.get("COURSE_SITE") or ROOT / "site")
SCREENSHOTS = ROOT / "screenshots"
MKDOCS_YML = ROOT / "mkdocs.yml"

DEBIAN_CHROMIUM = Path("/usr/bin/chromium")
LAUNCH_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-dev-shm-usage",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
VIEWPORT = {"width": 1280, "height": 800}
WEIGHT_BUDGET = 1_000_000  # bytes per page, search index excluded
# Pages that are not content: 404.html links with absolute site_url paths
# and is only ever served by the host for a missing URL.
NOT_PAGES = {"404.html"}
PALETTES = {"light": "default", "dark": "slate"}


class BrowserMissing(RuntimeError):
    """No Chromium that Playwright can drive was found."""


class SiteMissing(RuntimeError):
    """site/ has not been built."""


# --- the browser ----------------------------------------------------------


def _playwright_chromium(playwright=None):
    """Path of Playwright's own Chromium if it is installed, else None.
    Pass the running Playwright when there is one (the sync API cannot
    be started twice)."""
    if playwright is None:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as p:
            return _playwright_chromium(p)
    path = Path(playwright.chromium.executable_path)
    return path if path.is_file() else None


def find_browser(playwright=None):
    """Debian's /usr/bin/chromium, else Playwright's own build, else None."""
    if DEBIAN_CHROMIUM.is_file() and os.access(DEBIAN_CHROMIUM, os.X_OK):
        return DEBIAN_CHROMIUM
    return _playwright_chromium(playwright)


def install():
    """Install a browser when none is found: Debian's chromium as root
    where apt-get exists, else Playwright's own. Return its path."""
    found = find_browser()
    if not found:
        as_root = hasattr(os, "geteuid") and os.geteuid() == 0
        if as_root and shutil.which("apt-get"):
            commands = [
                ["apt-get", "update", "-q"],
                ["apt-get", "install", "-y", "-q", "chromium"],
            ]
        else:
            commands = [
                [sys.executable, "-m", "playwright", "install", "chromium"]
            ]
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        for command in commands:
            print("browser:", *command)
            subprocess.run(command, check=False, env=env)
        found = find_browser()
        if not found:
            raise BrowserMissing(
                f"no Chromium could be installed: tried {' '.join(command)}"
                f"; install Chromium at {DEBIAN_CHROMIUM} and rerun"
            )
    print(f"browser: {found}")
    return found


def launch(playwright):
    """Launch headless Chromium with the project's flags, or raise."""
    path = find_browser(playwright)
    if path is None:
        raise BrowserMissing(
            "no Chromium found: run `make browser` (as root on Debian it "
            "runs `apt-get install -y chromium`; elsewhere `python -m "
            "playwright install chromium`)"
        )
    executable = str(path) if path == DEBIAN_CHROMIUM else None
    return playwright.chromium.launch(
        executable_path=executable, args=LAUNCH_ARGS, headless=True
    )


# --- the site -------------------------------------------------------------


def require_site(site=SITE):
    site = Path(site)
    if not (site / "index.html").is_file():
        raise SiteMissing(
            f"{site} has no index.html: build the site first "
            "(`make build`; `make test` does it before pytest)"
        )
    return site


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        pass


@contextlib.contextmanager
def serve(directory):
    """Serve `directory` on 127.0.0.1 at a free port; yield the base URL."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@functools.cache
def mkdocs_config(mkdocs_yml=MKDOCS_YML):
    """The site's configuration, as MkDocs loads it."""
    return load_config(str(mkdocs_yml))


def _nav_files(nav):
    for entry in nav or []:
        values = entry.values() if isinstance(entry, dict) else [entry]
        for value in values:
            if isinstance(value, str):
                yield value
            else:
                yield from _nav_files(value)


def nav_pages(mkdocs_yml=MKDOCS_YML):
    """Site paths ('', 'ddp/', 'exercises/') of the Markdown nav entries
    (the notebook pages are found in site/)."""
    config = mkdocs_config(mkdocs_yml)
    return [
        File(
            name,
            config.docs_dir,
            config.site_dir,
            config.use_directory_urls,
        ).url.removeprefix("./")
        for name in _nav_files(config.nav)
        if name.endswith(".md") and "://" not in name
    ]


def site_pages(site=SITE):
    """Site paths of the HTML pages in site/ (404.html left out)."""
    site = Path(site)
    if not site.is_dir():
        return []
    found = []
    for path in sorted(site.rglob("*.html")):
        rel = path.relative_to(site).as_posix()
        if rel in NOT_PAGES:
            continue
        found.append(
            rel[: -len("index.html")] if path.name == "index.html" else rel
        )
    return found


def pages(site=SITE, mkdocs_yml=MKDOCS_YML):
    """Nav pages in nav order, then any other page found in site/."""
    ordered = nav_pages(mkdocs_yml)
    return ordered + [p for p in site_pages(site) if p not in ordered]


def page_id(path):
    """Readable test id: '' -> 'home', 'exercises/' -> 'exercises'."""
    return path.strip("/").removesuffix(".html") or "home"


def page_file(site, path):
    """File in site/ that serves the site path, or None."""
    site = Path(site)
    path = unquote(path).lstrip("/")
    target = site / path
    if path == "" or path.endswith("/") or target.is_dir():
        target = target / "index.html"
    return target if target.is_file() else None


# --- static HTML: links, ids, resources -----------------------------------


class PageParser(HTMLParser):
    """Ids, link-like attributes and loaded resources of one HTML page."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids = set()
        self.links = []  # (tag, attribute, value)
        self.resources = []  # URLs the page loads by itself
        self._in_config = False
        self.config = ""

    def handle_starttag(self, tag, attrs):
        a = {k: (v or "") for k, v in attrs}
        for key in ("id", "name"):
            if a.get(key) and (key == "id" or tag == "a"):
                self.ids.add(a[key])
        for key in ("href", "src", "xlink:href", "poster"):
            if a.get(key):
                self.links.append((tag, key, a[key]))
        if a.get("srcset"):
            for part in a["srcset"].split(","):
                if part.strip():
                    self.links.append((tag, "srcset", part.split()[0]))
                    self.resources.append(part.split()[0])
        rel = a.get("rel", "").lower().split()
        if tag == "link" and a.get("href"):
            if {"stylesheet", "icon", "preload", "modulepreload"} & set(rel):
                self.resources.append(a["href"])
        elif tag in ("script", "img", "source", "iframe", "embed") and a.get(
            "src"
        ):
            self.resources.append(a["src"])
        elif tag == "video" and a.get("poster"):
            self.resources.append(a["poster"])
        elif tag == "image" and (a.get("href") or a.get("xlink:href")):
            self.resources.append(a.get("href") or a.get("xlink:href"))
        if tag == "script" and a.get("id") == "__config":
            self._in_config = True

    def handle_data(self, data):
        if self._in_config:
            self.config += data

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_config = False


@functools.lru_cache(maxsize=256)
def _parse_cached(path, mtime):
    parser = PageParser()
    parser.feed(Path(path).read_text(encoding="utf-8", errors="replace"))
    parser.close()
    return parser


def parse(path):
    path = Path(path)
    return _parse_cached(str(path), path.stat().st_mtime_ns)


def resolve(page_path, url, site_url=""):
    """Site path an href points to, or None when it leaves the site.

    `page_path` is the page's own site path ('ddp/'); the result has no
    query and keeps the fragment apart: (path, fragment).
    """
    parts = urlsplit(url)
    if parts.scheme in ("mailto", "tel", "data", "javascript", "blob"):
        return None
    if parts.scheme or parts.netloc:
        home = urlsplit(site_url) if site_url else None
        if not home or (parts.scheme, parts.netloc) != (
            home.scheme,
            home.netloc,
        ):
            return None
        prefix = home.path.rstrip("/") + "/"
        if not (parts.path + "/").startswith(prefix):
            return None
        return parts.path[len(prefix) :], parts.fragment
    if not parts.path:
        return page_path, parts.fragment
    # The page's folder: 'ddp/' -> '/ddp', 'a/b.html' -> '/a'; an
    # absolute path replaces it.
    joined = posixpath.join(posixpath.dirname("/" + page_path), parts.path)
    normal = posixpath.normpath(joined)
    if joined.endswith("/") and not normal.endswith("/"):
        normal += "/"
    return normal.lstrip("/") if normal != "/" else "", parts.fragment


def _config_resources(parser):
    """The search worker that Material's bundle starts on every page."""
    try:
        config = json.loads(parser.config or "{}")
    except ValueError:
        return []
    worker = config.get("search")
    return [worker] if isinstance(worker, str) else []


_CSS_URL = re.compile(r"url\(\s*['\"]?([^'\")]+)['\"]?\s*\)")


def _css_resources(css_file, css_path):
    text = css_file.read_text(encoding="utf-8", errors="replace")
    found = []
    for url in _CSS_URL.findall(text):
        if url.startswith(("data:", "#")):
            continue
        found.append(resolve(css_path, url))
    return found


KINDS = {
    ".html": "html",
    ".css": "css",
    ".js": "js",
    ".mjs": "js",
    ".png": "images",
    ".jpg": "images",
    ".jpeg": "images",
    ".gif": "images",
    ".svg": "images",
    ".webp": "images",
    ".avif": "images",
    ".ico": "images",
}


def page_resources(site, path):
    """{site path of each file the page loads: kind}, the page included.

    Static: the page's stylesheets, scripts, images and icons, Material's
    search worker, and what the stylesheets pull in with url(). The search
    index (search/search_index.json) is left out, as are files on other
    hosts (the browser tests forbid those).
    """
    site = Path(site)
    own = page_file(site, path)
    if own is None:
        raise FileNotFoundError(f"no file in {site} serves /{path}")
    loaded = {own.relative_to(site).as_posix(): "html"}
    parser = parse(own)
    queue = [
        resolve(path, url)
        for url in parser.resources + _config_resources(parser)
    ]
    while queue:
        target = queue.pop()
        if target is None:
            continue
        file = page_file(site, target[0])
        if file is None:
            continue
        rel = file.relative_to(site).as_posix()
        if rel in loaded or rel == "search/search_index.json":
            continue
        loaded[rel] = KINDS.get(file.suffix.lower(), "other")
        if file.suffix.lower() == ".css":
            queue.extend(_css_resources(file, rel))
    return loaded


def page_weight(site, path):
    """Bytes per kind (html, css, js, images, other), total and gzip."""
    site = Path(site)
    weight = dict.fromkeys(("html", "css", "js", "images", "other"), 0)
    gz = 0
    for rel, kind in page_resources(site, path).items():
        data = (site / rel).read_bytes()
        weight[kind] += len(data)
        gz += len(gzip.compress(data, compresslevel=6, mtime=0))
    weight["total"] = sum(weight.values())
    weight["gzip"] = gz
    return weight


def weight_table(site=SITE, budget=WEIGHT_BUDGET):
    """Text table of every page's weight, in kB (1 kB = 1000 bytes)."""
    site = require_site(site)
    cols = ("html", "css", "js", "images", "other", "total", "gzip")
    lines = [
        f"{'page':<24}" + "".join(f"{c:>9}" for c in cols) + "  budget",
    ]
    over = []
    for path in pages(site):
        if page_file(site, path) is None:
            lines.append(f"{page_id(path):<24}  (not built)")
            continue
        w = page_weight(site, path)
        status = "ok" if w["total"] <= budget else "OVER"
        if status == "OVER":
            over.append(page_id(path))
        lines.append(
            f"{page_id(path):<24}"
            + "".join(f"{w[c] / 1000:>9.1f}" for c in cols)
            + f"  {status}"
        )
    lines.append(
        f"kB = 1000 bytes; budget {budget / 1000:.0f} kB per page "
        "(uncompressed, search index excluded); gzip: the same files "
        "compressed"
    )
    return "\n".join(lines), over


# --- screenshots ------------------------------------------------------------


def screenshot_page(browser, base_url, path, out, scheme):
    """Full-page PNG of one page in one palette ('light' or 'dark')."""
    context = browser.new_context(
        viewport=VIEWPORT,
        color_scheme=scheme,
        reduced_motion="reduce",
    )
    try:
        context.route(
            "**/*",
            lambda route: (
                route.continue_()
                if route.request.url.startswith(base_url)
                else route.abort()
            ),
        )
        page = context.new_page()
        page.goto(base_url + path, wait_until="load")
        page.wait_for_function(
            "s => document.body.dataset.mdColorScheme === s",
            arg=PALETTES[scheme],
            timeout=5000,
        )
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        name = page_id(path).replace("/", "-")
        target = out / f"{name}-{scheme}.png"
        page.screenshot(path=str(target), full_page=True)
        return target
    finally:
        context.close()


def screenshots(site=SITE, out=SCREENSHOTS, only=None):
    from playwright.sync_api import sync_playwright

    site = require_site(site)
    written = []
    with sync_playwright() as p, serve(site) as base_url:
        browser = launch(p)
        try:
            for path in pages(site):
                if only and page_id(path) not in only:
                    continue
                for scheme in PALETTES:
                    written.append(
                        screenshot_page(browser, base_url, path, out, scheme)
                    )
        finally:
            browser.close()
    return written


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m course.browser")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("install", help="get Chromium if none is found")
    weight = sub.add_parser("weight", help="print every page's weight")
    weight.add_argument("--site", default=str(SITE))
    shots = sub.add_parser("screenshots", help="every page, both palettes")
    shots.add_argument("--site", default=str(SITE))
    shots.add_argument("--out", default=str(SCREENSHOTS))
    shots.add_argument("pages", nargs="*", help="page ids (default: all)")
    args = parser.parse_args(argv)
    try:
        if args.command == "install":
            install()
        elif args.command == "weight":
            table, over = weight_table(args.site)
            print(table)
            if over:
                print(f"over budget: {', '.join(over)}")
                return 1
        elif args.command == "screenshots":
            for path in screenshots(args.site, args.out, args.pages):
                print(
                    path.relative_to(ROOT)
                    if path.is_relative_to(ROOT)
                    else path
                )
    except (BrowserMissing, SiteMissing) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
