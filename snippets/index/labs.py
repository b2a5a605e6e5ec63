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
    "accumulation",
    "comms",
    "strategy",
    "planner",
)


def labs(root="snippets"):
    """(page, module, first docstring line) for every lab of the lesson."""
    found = []
    for page in LESSON:
        for path in sorted(Path(root, page).glob("*.py")):
            doc = ast.get_docstring(ast.parse(path.read_text()))
            module = ".".join(path.with_suffix("").parts)
            found.append((page, module, doc.splitlines()[0]))
    return found


# --8<-- [end:model]


if __name__ == "__main__":
    # --8<-- [start:demo]
    print("| page | what the lab computes | run it from the repository |")
    print("| --- | --- | --- |")
    for page, module, summary in labs():
        print(f"| {page} | {summary} | `python3 -m {module}` |")
    # --8<-- [end:demo]
