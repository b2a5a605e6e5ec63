"""`python -m course.tools.measure` (`make measure`): run every launch the
pages show and record what it measured.

Each launch of course/instruments/results.py's LAUNCHES runs under
torchrun on the CPU (gloo, one thread per rank) and leaves its result in
course/instruments/results/NAME.json, beside the digest of the sources
and flags it ran with and the torch version. The site build only reads
those files, and refuses one whose digest does not match the code;
tests/test_train.py trains the runs again and compares.

    python -m course.tools.measure                # every launch
    python -m course.tools.measure ranks2 solo    # some of them
"""

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from course.instruments import results
from course.tools.stress import launch_command, run, what_failed


def measure(name, timeout=900):
    """Run launch `name`; (its result as the results file holds it, the
    seconds it took)."""
    entry, nproc, args = results.LAUNCHES[name]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.json"
        began = time.perf_counter()
        done = run(launch_command(entry, nproc, args, out), timeout=timeout)
        seconds = time.perf_counter() - began
        if done.returncode:
            failed = what_failed(done.stderr)
            code = done.returncode
            raise RuntimeError(f"{name}: exit status {code}\n{failed}")
        found = json.loads(out.read_text())
    if entry == "collectives":
        torch, body = found["torch"], {"rows": found["rows"]}
    else:
        for run_ in found:  # where this launch wrote: a temporary folder
            run_["measuring"]["json"] = None
        torch, body = found[0]["torch"], {"runs": found}
    return {"digest": results.digest(name), "torch": torch, **body}, seconds


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m course.tools.measure")
    p.add_argument("names", nargs="*", help=", ".join(results.LAUNCHES))
    names = p.parse_args(argv).names or list(results.LAUNCHES)
    unknown = sorted(set(names) - set(results.LAUNCHES))
    if unknown:
        p.error(f"no launch named {unknown}; one of {list(results.LAUNCHES)}")
    results.FOLDER.mkdir(exist_ok=True)
    for name in names:
        data, seconds = measure(name)
        path = results.FOLDER / f"{name}.json"
        path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        print(f"{name}: {seconds:.1f} s -> {path}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
