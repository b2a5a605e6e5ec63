"""Find the Python fences of a page and expand their snippet includes.

Shared by the build (to name the line of a failing block) and the tests
(to count fences independently of sybil's lexer).
"""

import re
from dataclasses import dataclass
from pathlib import Path

import markdown

ROOT = Path(__file__).resolve().parent.parent
PYTHON_LANGUAGES = ("python", "py", "pycon")

# Must match pymdownx.snippets in mkdocs.yml; tests/test_site_config.py checks.
SNIPPETS_CONFIG = {
    "base_path": ["."],
    "check_paths": True,
    "dedent_subsections": True,
}

FENCE_RE = re.compile(
    r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$"
)


@dataclass
class Fence:
    line: int  # 1-based line of the opening fence
    indent: str
    language: str
    info: str  # the whole info string, language included
    body: str  # as written, indentation removed

    @property
    def attrs(self):
        return dict(re.findall(r'(\w+)="([^"]*)"', self.info))

    @property
    def executed(self):
        return self.attrs.get("exec", "").lower() in {"on", "1", "true", "yes"}


def fences(text):
    """Every fenced block of a Markdown text, in order (nested ones too)."""
    lines = text.split("\n")
    found, i = [], 0
    while i < len(lines):
        m = FENCE_RE.match(lines[i])
        if not m or not m["info"].strip() and m["fence"][0] == "~":
            i += 1
            continue
        indent, fence, info = m["indent"], m["fence"], m["info"].strip()
        body, j = [], i + 1
        while j < len(lines):
            close = FENCE_RE.match(lines[j])
            if (
                close
                and close["fence"][0] == fence[0]
                and len(close["fence"]) >= len(fence)
                and not close["info"].strip()
            ):
                break
            body.append(
                lines[j][len(indent) :]
                if lines[j].startswith(indent)
                else lines[j].lstrip()
            )
            j += 1
        language = info.split()[0].split("{")[0] if info else ""
        found.append(Fence(i + 1, indent, language, info, "\n".join(body)))
        i = j + 1
    return found


def python_fences(text):
    return [f for f in fences(text) if f.language in PYTHON_LANGUAGES]


def expand(body, root=ROOT):
    """Resolve `--8<--` include lines exactly as pymdownx.snippets does."""
    config = dict(SNIPPETS_CONFIG, base_path=[str(root)])
    md = markdown.Markdown(
        extensions=["pymdownx.snippets"],
        extension_configs={"pymdownx.snippets": config},
    )
    return "\n".join(md.preprocessors["snippet"].run(body.split("\n")))
