"""One cache for what the build computes: charts, notebook pages and the
torchrun measurement.

A value is stored under a key that digests
- the source of every module under snippets/ and course/ that the
  computation runs, found by following its import statements from the
  modules it starts in (`closure`), so an edited lab changes the key of
  everything that imports it, directly or not;
- the arguments, as JSON;
- the versions of the packages that shape the result, and Python's.

Imports are read from the source with `ast`, so `importlib` calls with
a computed name are not followed; the site's code has none.

Values are JSON, in .cache/NAMESPACE/LABEL-KEY.json; storing one
removes the older values of the same label. CI=true (or 1, yes) turns
the cache off: every value is computed afresh and nothing is stored.
"""

import ast
import functools
import hashlib
import json
import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OURS = ("snippets", "course")  # top-level packages whose source is keyed
STORE = ROOT / ".cache"  # where values live


def enabled():
    """False when the environment says CI=true, True otherwise."""
    return os.environ.get("CI", "").strip().lower() not in {"true", "1", "yes"}


def module_file(name, root=None):
    """The source file of module `name` under snippets/ or course/, or
    None (another package's module, or a name that is no file)."""
    if name.split(".")[0] not in OURS:
        return None
    base = (root or ROOT).joinpath(*name.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


@functools.lru_cache(maxsize=512)  # a rebuild re-reads unchanged files
def imported_modules(source, package=""):
    """Names of the modules a piece of code imports: for `from a import
    b`, both `a` and `a.b` (b may be a submodule), and for every name its
    parent packages. `package` resolves relative imports."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # from . import x: relative to `package`
                parts = package.split(".")
                parts = parts[: len(parts) + 1 - node.level]
                base = ".".join(filter(None, [*parts, base]))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return frozenset(found) | {
        name.rsplit(".", k)[0]
        for name in found
        for k in range(1, name.count(".") + 1)
    }


def _package_of(path, root):
    """'snippets.ddp' for snippets/ddp/x.py and snippets/ddp/__init__.py"""
    return ".".join(path.relative_to(root).parent.parts)


def closure(*roots, root=None):
    """{path relative to the root: source bytes} of `roots` (module names,
    or files such as a notebook) and of every snippets/ and course/
    module they import, directly or through each other; sorted."""
    root = root or ROOT
    todo = []
    for start in roots:
        path = start if isinstance(start, Path) else module_file(start, root)
        if path is None:
            raise ValueError(f"{start!r} is not a module of {OURS}")
        todo.append(path)
    files = {}
    while todo:
        path = todo.pop()
        rel = path.relative_to(root).as_posix()
        if rel in files:
            continue
        files[rel] = path.read_bytes()
        package = _package_of(path, root)
        for name in sorted(imported_modules(files[rel], package)):
            found = module_file(name, root)
            if found is not None:
                todo.append(found)
    return dict(sorted(files.items()))


def key(*roots, args=None, packages=(), root=None):
    """16 hex digits that change when the source `closure(*roots)` finds
    changes, or `args` (JSON), or a version in `packages` or Python's."""
    digest = hashlib.sha256()
    for rel, source in closure(*roots, root=root).items():
        digest.update(rel.encode() + b"\0" + hashlib.sha256(source).digest())
    digest.update(json.dumps(args, sort_keys=True).encode())
    for name in sorted(packages):
        digest.update(f"\0{name}=={_version(name)}".encode())
    digest.update(f"\0python {sys.version_info[:3]}".encode())
    return digest.hexdigest()[:16]


@functools.cache  # the version this process imported, if it did
def _version(package):
    from importlib.metadata import version  # 16 ms: only when keying

    return version(package)


def location(namespace, label, *, roots, args=None, packages=()):
    """The file that holds the value `cached` keeps for these inputs."""
    digest = key(*roots, args=args, packages=packages)
    return STORE / namespace / f"{label}-{digest}.json"


def cached(namespace, label, compute, *, roots, args=None, packages=()):
    """`compute()`, or the value it returned in an earlier run with the
    same key (see `key`). The value must survive a JSON round trip."""
    if not enabled():
        return compute()
    keyed = {"roots": roots, "args": args, "packages": packages}
    path = location(namespace, label, **keyed)
    folder = path.parent
    if path.is_file():
        return json.loads(path.read_text(encoding="utf-8"))
    value = compute()
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob(f"{label}-*.json"):
        if old.name.rsplit("-", 1)[0] == label:
            old.unlink(missing_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(json.dumps(value, indent=1) + "\n", encoding="utf-8")
    partial.replace(path)
    return value


def directory(namespace, *, roots, packages=()):
    """.cache/NAMESPACE/KEY for a tool that keeps its own cache in a
    folder (mkdocs-jupyter); folders with another key are removed."""
    folder = STORE / namespace
    current = folder / key(*roots, packages=packages)
    if folder.is_dir():
        for old in folder.iterdir():
            if old.is_dir() and old != current:
                shutil.rmtree(old, ignore_errors=True)
    return str(current)
