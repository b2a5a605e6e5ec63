"""Run in your browser: the browser's Python prints what the page records.

Every executed block of docs/ runs in Pyodide under Node, from the
runtime files the set-up installed and the labs' archive the build
ships, through the same Python side the browser's worker uses
(docs/assets/run/python.js); what each block prints must equal the
output its page records, byte for byte. A block that cannot run in a
browser (it imports something other than the standard library and
snippets/) is not offered, and NOT_OFFERED below names each one.
"""

import hashlib
import io
import json
import shutil
import subprocess
import zipfile

import pytest
from markupsafe import Markup
from sybil import Document

from course import execute, pyodide, runner
from course.fences import ROOT, expand
from tests.docblocks import PAGES, parse

NODE = shutil.which("node")
HARNESS = ROOT / "tests" / "pyodide_blocks.mjs"
NODE_TIMEOUT_S = 300
# The blocks that get no Run tab, per page, by the module that keeps
# them out of the browser: course.figures draws the charts with
# matplotlib, course.notebooks publishes the exercise notebooks,
# and a later block of a session whose first block was kept out is kept
# out too (the torchrun and comms pages read recorded measurements that
# the browser does not have).
NOT_OFFERED = {
    "docs/accumulation.md": ["course.figures"],
    "docs/activations.md": ["course.figures"],
    "docs/comms.md": ["course.figures", "course.figures", "session"],
    "docs/ddp.md": ["course.figures", "course.figures"],
    "docs/exercises/index.md": ["course.notebooks", "course.notebooks"],
    "docs/index.md": ["course.figures"],
    "docs/pipeline.md": ["course.figures"] * 3,
    "docs/planner.md": ["course.figures"],
    "docs/planner-accuracy.md": ["course.figures"],
    "docs/strategy.md": ["course.figures"],
    "docs/torchrun.md": ["course.figures", *["session"] * 9],
    "docs/walls.md": ["course.figures"],
    "docs/zero.md": ["course.figures", "course.figures"],
}
# The edit a reader might make: the ZeRO page's world sizes.
EDITED_PAGE = "docs/zero.md"
EDIT = ("for n in (1, 8, 64):", "for n in (2, 16, 96):")


def _page(block):
    return block.path.relative_to(ROOT).as_posix()


def executed_blocks():
    """(block, code) of every block the build runs, in page order."""
    found = []
    for path in PAGES:
        for example in Document.parse(str(path), parse):
            block = example.parsed
            if not block.executed or block.skip:
                continue
            code = runner.runnable_code(expand(block.source), block.language)
            found.append((block, code))
    return found


def run_in_node(blocks, tmp_path):
    """[{id, output, error}] for [{id, code, session}], run by Pyodide
    under Node in one interpreter; and the seconds it took to load."""
    assert NODE, "node is not installed: the browser runner's tests need it"
    archive = tmp_path / "labs.zip"
    archive.write_bytes(runner.archive()[1])
    job, results = tmp_path / "job.json", tmp_path / "results.json"
    job.write_text(
        json.dumps(
            {
                "pyodide": str(pyodide.check()),
                "archive": str(archive),
                "blocks": blocks,
            }
        )
    )
    done = subprocess.run(
        [NODE, str(HARNESS), str(job), str(results)],
        capture_output=True,
        text=True,
        timeout=NODE_TIMEOUT_S,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads(results.read_text())
    return data["results"], data["loadSeconds"]


# Code whose output in Pyodide must equal CPython's (course.execute.run,
# as in the build): print as markdown-exec captures it.
PRINTS = (
    'print("a", 1, 2.5, None, sep=",", end="!\\n")\n'
    "print()\n"
    "print(*range(3), end='')\n"
)


@pytest.fixture(scope="module")
def node_run(tmp_path_factory):
    """Every offered block, then the probes (the edited ZeRO block and
    PRINTS), in one run: (offered, refused, results, probes), where
    probes is {id: (code, result)}."""
    offered, refused, sessions = [], {}, {}
    for block, code in executed_blocks():
        session = block.options.get("session")
        page_sessions = sessions.setdefault(_page(block), set())
        why = runner.refused(code, session, page_sessions)
        if why is not None:
            refused.setdefault(_page(block), []).append((block.id, why))
            continue
        offered.append(
            {
                "id": block.id,
                "code": code,
                # one interpreter plays every page: its sessions apart
                "session": session and f"{_page(block)}:{session}",
                "record": block.record,
            }
        )
    edited = next(b for b in offered if b["id"].startswith(EDITED_PAGE + ":"))
    assert EDIT[0] in edited["code"], f"{edited['id']} no longer has {EDIT[0]}"
    probes = {"edited": edited["code"].replace(*EDIT), "prints": PRINTS}
    jobs = [{k: b[k] for k in ("id", "code", "session")} for b in offered]
    jobs += [{"id": k, "code": c, "session": None} for k, c in probes.items()]
    results, load_s = run_in_node(jobs, tmp_path_factory.mktemp("node"))
    print(f"\nPyodide under Node: loaded in {load_s:.1f} s")
    assert [r["id"] for r in results] == [j["id"] for j in jobs]
    found = {r["id"]: (probes[r["id"]], r) for r in results[len(offered) :]}
    return offered, refused, results[: len(offered)], found


def recorded(output, block):
    """What the page records for `output`: an HTML output as its
    digest, as tests/docblocks.py records it."""
    output = output.rstrip("\n")
    if (block["record"] or "").startswith("html sha256:") and output:
        data = output.encode()
        digest = hashlib.sha256(data).hexdigest()
        return f"html sha256:{digest} ({len(data)} bytes)"
    return output


def test_every_offered_block_prints_its_record_in_pyodide(node_run):
    offered, _, results, _ = node_run
    assert len(offered) >= 30, f"only {len(offered)} blocks offered"
    wrong = []
    for block, result in zip(offered, results, strict=True):
        if result["error"]:
            wrong.append(
                f"{block['id']}: raised in Pyodide\n{result['error']}"
            )
        elif recorded(result["output"], block) != (block["record"] or ""):
            wrong.append(
                f"{block['id']}: Pyodide printed\n{result['output']!r}\n"
                f"the page records\n{block['record']!r}"
            )
    assert not wrong, "\n".join(wrong)


def test_the_blocks_not_offered_are_the_listed_ones(node_run):
    """A block that stops being runnable in the browser loses its Run
    tab: that must be a decision in NOT_OFFERED, never a surprise."""
    _, refused, _, _ = node_run
    found = {
        page: sorted(why.split()[1].rstrip(",") for _, why in items)
        for page, items in refused.items()
    }
    detail = "\n".join(
        f"{block_id}: {why}"
        for items in refused.values()
        for block_id, why in items
    )
    assert found == NOT_OFFERED, f"not offered for running:\n{detail}"


def _in_cpython(code):
    return execute.run(
        code, limit=60, where=lambda: "probe", session=None, title="probe"
    )


@pytest.mark.parametrize("probe", ["edited", "prints"])
def test_pyodide_prints_what_cpython_prints(node_run, probe):
    code, result = node_run[3][probe]
    assert result["error"] is None, result["error"]
    assert result["output"] == _in_cpython(code)


def test_the_edit_changes_the_output(node_run):
    offered, _, _, probes = node_run
    record = next(b for b in offered if b["id"].startswith(EDITED_PAGE))
    edited = probes["edited"][1]["output"]
    assert edited.rstrip("\n") != record["record"], (
        "the edit changed nothing: it proves nothing"
    )


def test_errors_come_back_as_the_python_message(tmp_path):
    blocks = [
        {"id": "define", "code": "x = 2\nprint(x)", "session": "s"},
        {"id": "see", "code": "print(x * 3)", "session": "s"},
        {"id": "alone", "code": "print(x)", "session": None},
        {
            "id": "raise",
            "code": "from snippets.checks import count\n"
            "count('world_size', 0)",
            "session": None,
        },
    ]
    results, _ = run_in_node(blocks, tmp_path)
    by_id = {r["id"]: r for r in results}
    assert by_id["define"] == {"id": "define", "output": "2\n", "error": None}
    assert by_id["see"]["output"] == "6\n"
    assert by_id["alone"]["error"].endswith(
        "NameError: name 'x' is not defined\n"
    )
    error = by_id["raise"]["error"]
    assert error.startswith("Traceback (most recent call last):")
    assert "_run" not in error  # the runner's own frame is left out
    assert error.splitlines()[-1].startswith("ValueError: world_size")


# --- the archive ---


def _project(tmp_path):
    project = tmp_path / "project"
    shutil.copytree(
        ROOT / "snippets",
        project / "snippets",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    return project


def test_the_archive_is_deterministic_and_holds_every_lab(tmp_path):
    data = runner.build_archive()
    assert data == runner.build_archive(_project(tmp_path))
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        entries = archive.infolist()
    names = [e.filename for e in entries]
    assert names == sorted(names)
    assert set(names) == {
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "snippets").rglob("*.py")
        if "__pycache__" not in p.parts
    }
    assert {e.date_time for e in entries} == {runner.ZIP_TIME}


def test_a_stale_archive_fails_the_check(tmp_path):
    project, site = _project(tmp_path), tmp_path / "site"
    written = runner.write_archive(site, root=project)
    assert runner.check_site(site, root=project) == written
    lab = project / "snippets" / "zero" / "memory.py"
    lab.write_text(lab.read_text().replace("(1, 8, 64)", "(1, 8, 128)"))
    with pytest.raises(runner.StaleArchive, match="snippets/zero/memory.py"):
        runner.check_site(site, root=project)
    # a rebuild writes the new archive and removes the old one
    runner.write_archive(site, root=project)  # cached: still the old one
    runner.forget()
    fresh = runner.write_archive(site, root=project)
    assert fresh != written and not written.exists()
    assert runner.check_site(site, root=project) == fresh


def test_an_archive_that_is_not_its_name_fails_the_check(tmp_path):
    project, site = _project(tmp_path), tmp_path / "site"
    written = runner.write_archive(site, root=project)
    written.write_bytes(written.read_bytes() + b"\0")
    with pytest.raises(runner.StaleArchive, match="not its sha256"):
        runner.check_site(site, root=project)


def test_the_built_site_ships_the_runtime_and_current_archive():
    site = ROOT / "site"
    assert (site / "index.html").is_file(), "build the site: `make build`"
    runner.check_site(site)
    shipped = site / pyodide.SITE_DIR
    assert sorted(p.name for p in shipped.iterdir()) == sorted(pyodide.FILES)
    for name in pyodide.FILES:
        assert (shipped / name).read_bytes() == (
            pyodide.check() / name
        ).read_bytes()


# --- which blocks are offered, and the data the layout gets ---


@pytest.mark.parametrize(
    ("code", "why"),
    [
        ("import math\nprint(math.pi)", None),
        ("from snippets.zero.memory import memory_per_gpu", None),
        ("import torch", "imports torch"),
        ("from course.figures import figure", "imports course.figures"),
        # snippets.torchrun.activations imports torch itself
        ("from snippets.torchrun.activations import record", "torch"),
        ("import threading", "imports threading"),
        ("import subprocess as sp", "imports subprocess"),
    ],
)
def test_not_offered_follows_imports_through_the_labs(code, why):
    found = runner.not_offered(code)
    if why is None:
        assert found is None
    else:
        assert found is not None and why in found


def test_a_refused_block_refuses_the_rest_of_its_session():
    """The torchrun page's measurement is not offered, so neither is the
    later block of its session that reads it; other sessions, and
    blocks without one, are decided on their own code."""
    sessions = set()
    assert runner.refused("x = 1", "s", sessions) is None
    assert "torch" in runner.refused("import torch", "s", sessions)
    assert "session 's'" in runner.refused("print(x)", "s", sessions)
    assert runner.refused("print(2)", "other", sessions) is None
    assert runner.refused("print(3)", None, sessions) is None
    assert sessions == {"s"}


def test_block_html_is_one_json_element_or_nothing():
    code = 'print("</script><!-- x")'
    html = runner.block_html(code, session="zero", page="zero.md")
    assert html.startswith('<script type="application/json" data-course-')
    body = html.split(">", 1)[1].removesuffix("</script>")
    assert "<" not in body and ">" not in body
    data = json.loads(body)
    assert data == {
        "source": code,
        "session": "zero",
        "page": "zero.md",
        "archive": runner.archive()[0],
    }
    assert runner.block_html("import torch", session="x", page="p") == ""
    # next to markdown-exec's HTML (Markup), it stays HTML
    assert str(Markup("<div></div>") + html).endswith(html)
    pycon = ">>> print(1 + 1)\n2\n"
    data = runner.block_data(pycon, "pycon", page="p")
    assert data["source"].strip() == "print(1 + 1)"


# --- the install ---


def test_the_install_is_the_pinned_version():
    folder = pyodide.check()
    pin = pyodide.pinned()
    shipped = json.loads((ROOT / "package.json").read_text())
    assert shipped["dependencies"] == {"pyodide": pin["version"]}
    assert json.loads((folder / pyodide.STAMP).read_text()) == pin


def test_a_tarball_that_is_not_the_pinned_one_is_refused(
    tmp_path, monkeypatch
):
    lock = tmp_path / "package-lock.json"
    pin = {"version": "314.0.7", "integrity": pyodide._integrity(b"pinned")}
    lock.write_text(
        json.dumps({"packages": {"node_modules/pyodide": pin}}),
    )

    class Response(io.BytesIO):
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    fetched = []

    def urlopen(url, timeout):
        fetched.append(url)
        return Response(b"something else")

    monkeypatch.setattr(pyodide.urllib.request, "urlopen", urlopen)
    with pytest.raises(RuntimeError, match="is not the pinned"):
        pyodide.install(tmp_path / "store", lock=lock, use_npm=False)
    assert fetched == [
        "https://registry.npmjs.org/pyodide/-/pyodide-314.0.7.tgz"
    ]
    assert not (tmp_path / "store").exists()
    with pytest.raises(pyodide.NotInstalled, match="make setup"):
        pyodide.check(tmp_path / "store", lock=lock)
