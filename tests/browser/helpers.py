"""What the browser tests share besides fixtures (tests/browser/conftest.py
holds those): the built site, its pages, the two window sizes, the
runners of a page, and axe-core's serious findings."""

import json
import re
from pathlib import Path

from axe_playwright_python.sync_playwright import Axe
from mkdocs.utils.yaml import yaml_load

from course import ROOT

SITE = ROOT / "site"
LAPTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}


def site_pages(site=SITE):
    """Site paths of the built pages: '' (home), 'zero/', ..."""
    # (print_page/ is every page at once, the source of course.pdf that
    # tests/test_pdf.py checks; readers browse the pages themselves)
    found = sorted(Path(site).rglob("index.html"))
    found = [p for p in found if p.parent.name != "print_page"]
    paths = [p.parent.relative_to(site).as_posix() + "/" for p in found]
    return ["" if p == "./" else p for p in paths]


def lesson_pages():
    """The home page, the Lesson section of the nav and torchrun: each
    shows at least one figure."""
    with open(ROOT / "mkdocs.yml", "rb") as file:
        nav = yaml_load(file)["nav"]
    lesson = next(e["Lesson"] for e in nav if "Lesson" in e)
    files = [next(iter(e.values())) for e in lesson] + ["torchrun.md"]
    return {""} | {f.removesuffix(".md") + "/" for f in files}


RUNNER = re.compile(
    r'<script type="application/json" data-course-runner>(.*?)</script>'
)


def runners(path, site=SITE):
    """The runner data of a built page, in page order."""
    html = (Path(site) / path / "index.html").read_text(encoding="utf-8")
    return [json.loads(m) for m in RUNNER.findall(html)]


def open_runner(page, n):
    """The n-th runner of the page, shown as a reader shows it: the
    answers it sits in opened, then its tab."""
    box = page.locator(".course-runner").nth(n)
    for fold in box.locator("xpath=ancestor::details").all():
        if fold.get_attribute("open") is None:
            fold.locator(":scope > summary").click()
    tabs = box.locator(
        "xpath=ancestor::div[contains(@class, 'tabbed-set')][1]"
    )
    tabs.locator(
        ".tabbed-labels > label", has_text="Run in your browser"
    ).click()
    return box


def watch(page, base_url):
    """What goes wrong on `page`, as a list it keeps filling: requests
    to another host (aborted), console errors, uncaught exceptions and
    HTTP errors. Kept on 127.0.0.1: `base_url`, data: and blob: only."""
    problems = []

    def route(route):
        url = route.request.url
        if url.startswith((base_url, "data:", "blob:")):
            return route.continue_()
        problems.append(f"request to another host: {url}")
        return route.abort()

    page.context.route("**/*", route)
    page.on(
        "console",
        lambda m: m.type == "error" and problems.append(f"console: {m.text}"),
    )
    page.on("pageerror", lambda e: problems.append(f"uncaught: {e}"))
    page.on(
        "response",
        lambda r: r.status >= 400 and problems.append(f"{r.status} {r.url}"),
    )
    return problems


def serious_axe(page, context):
    """axe-core's serious and critical findings in `context` (a CSS
    selector): each element, and axe's summary with its colours."""
    found = Axe().run(page, context=context).response
    return [
        f"{v['id']}: {n['target']} {n['failureSummary']}"
        for v in found["violations"]
        if v["impact"] in ("serious", "critical")
        for n in v["nodes"]
    ]
