"""List the lesson's labs: one file per page section, stdlib only."""

# --8<-- [start:model]
import ast
from pathlib import Path

LESSON = (
    "walls",
    "parallelism",
    "ddp",
    "zero",
    "activations",
    "pipeline",
    "context",
    "experts",
    "accumulation",
    "comms",
    "fp8",
    "strategy",
    "planner",
)


def labs(root="snippets"):
    """(page, module, first sentence of its docstring) for every lab of
    the lesson; a package that runs with `-m` counts as one lab."""
    found = []
    for page in LESSON:
        folder = Path(root, page)
        if (folder / "__main__.py").is_file():
            paths = [folder / "__init__.py"]
        else:
            paths = sorted(set(folder.glob("*.py")) - {folder / "__init__.py"})
        for path in paths:
            doc = ast.get_docstring(ast.parse(path.read_text()))
            parts = path.with_suffix("").parts
            module = ".".join(parts[:-1] if path.stem == "__init__" else parts)
            first = " ".join(doc.split(". ")[0].split())
            if not first.endswith(("?", "!", ".")):
                first += "."
            found.append((page, module, first))
    return found


# --8<-- [end:model]


if __name__ == "__main__":
    # --8<-- [start:demo]
    print("| page | what the lab computes | run it from the repository |")
    print("| --- | --- | --- |")
    for page, module, summary in labs():
        print(f"| {page} | {summary} | `python3 -m {module}` |")
    # --8<-- [end:demo]
