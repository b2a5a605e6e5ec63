"""`python -m course.tools.pdf` (`make pdf`): the whole course as one
PDF, site/course.pdf, printed from the built site by Chromium.

mkdocs-print-site-plugin lays every page in navigation order on one
page, site/print_page/, with a title page and a table of contents. This
module serves the site on 127.0.0.1, opens that page in Debian's
headless Chromium (Playwright, as the browser tests do), readies it for
paper, and prints it:

- the title page says the commit and the date the site was built from;
- every folded block is opened, and the worked answers (the knowledge
  checks' and the ladder's) move to the end of their page, with a link
  from their question;
- docs/assets/print.css keeps the Output tab of each lab (its output
  and the lines that do the work), drops the other tabs, and keeps
  tables, figures and code blocks whole where they fit on a page.

print_page/ is removed once printed: readers get the pages and the PDF.
Nothing is fetched from another host: the page refuses such requests,
as the browser tests do.

    python -m course.tools.pdf               # site/ to site/course.pdf
    python -m course.tools.pdf --site DIR --out FILE
"""

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

from course import ROOT
from course.tools.chromium import ARGS, EXECUTABLE
from course.tools.serve import serve

PRINT_PAGE = "print_page/"
LOAD_MS = 300_000
# Answers and solutions: the admonition kinds the pages fold them in.
ANSWERS = "details.question, details.success"

READY = """([builtFrom, answers]) => {
  const LINK = "The answer is at the end of this page.";
  document.getElementById("print-built-from").textContent = builtFrom;
  const pages = "section.print-page[id]:not(.md-section)";
  let n = 0;
  for (const page of document.querySelectorAll(pages)) {
    const end = document.createElement("div");
    end.className = "print-answers";
    const name = (h) => h.childNodes[0].textContent.trim();
    end.innerHTML = `<h2>Answers: ${name(page.querySelector("h1"))}</h2>`;
    let question = "";
    for (const el of page.querySelectorAll(`h2, h3, ${answers}`)) {
      if (!el.matches(answers)) { question = name(el); continue; }
      const link = document.createElement("p");
      link.className = "print-answer-link";
      el.id = `print-answer-${++n}`;
      link.innerHTML = `<a href="#${el.id}">${LINK}</a>`;
      el.replaceWith(link);
      el.querySelector("summary").textContent = `Answer: ${question}`;
      end.append(el);
    }
    if (end.childElementCount > 1) page.append(end);
  }
  for (const d of document.querySelectorAll("details")) d.open = true;
  return n;
}"""

# Material's type is sized for a screen: 80% of it reads well on A4.
SCALE = 0.8


def built_from(root=ROOT):
    """'Built from commit abc1234 of 2026-12-03', from git; the commit's
    date, not the clock's, so that a commit prints the same text."""
    git = ["git", "-C", str(root), "log", "-1", "--format=%h %cs"]
    done = subprocess.run(git, capture_output=True, text=True)
    if done.returncode or not done.stdout.strip():
        raise RuntimeError(f"{root} is not a git checkout: {done.stderr}")
    commit, date = done.stdout.split()
    dirty = subprocess.run(
        ["git", "-C", str(root), "status", "--porcelain", "--", "docs"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    edits = ", with uncommitted edits to docs/" if dirty else ""
    return f"Built from commit {commit} of {date}{edits}."


def write_pdf(site, out, text):
    """Print site's print page to out; the number of answers moved."""
    if not (site / PRINT_PAGE / "index.html").is_file():
        raise FileNotFoundError(
            f"{site / PRINT_PAGE} is missing: run `make build` first"
        )
    with serve(site) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=EXECUTABLE, args=ARGS)
        try:
            page = browser.new_page()
            # Several MB of HTML: on a busy machine loading and laying it
            # out takes longer than Playwright's default 30 s.
            page.set_default_timeout(LOAD_MS)
            page.route(
                "**/*",
                lambda r: (
                    r.continue_()
                    if r.request.url.startswith((url, "data:", "blob:"))
                    else r.abort()
                ),
            )
            # "load": the whole page parsed (networkidle alone can come
            # while a page of several MB is still being read).
            page.goto(url + PRINT_PAGE, wait_until="load")
            page.wait_for_load_state("networkidle")
            page.emulate_media(media="print")
            moved = page.evaluate(READY, [text, ANSWERS])
            page.pdf(
                path=str(out),
                prefer_css_page_size=True,  # docs/assets/print.css
                scale=SCALE,
                print_background=True,
                outline=True,
                tagged=True,
            )
        finally:
            browser.close()
    # The pages are the site; print_page/ (every page at once, and
    # their ids clashing) was only the PDF's source.
    shutil.rmtree(site / PRINT_PAGE)
    return moved


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m course.tools.pdf")
    p.add_argument("--site", type=Path, default=ROOT / "site")
    p.add_argument("--out", type=Path, help="default: SITE/course.pdf")
    a = p.parse_args(argv)
    out = a.out or a.site / "course.pdf"
    moved = write_pdf(a.site, out, built_from())
    size = out.stat().st_size / 1e6
    print(f"{out}: {size:.1f} MB, {moved} answers at the end of their page")


if __name__ == "__main__":
    sys.exit(main())
