"""Seconds the build spends on figures and on notebooks.

    python -m snippets.figures.bench

Does the same work as a cold `mkdocs build`: imports matplotlib and
draws every chart once, then renders each exercise notebook the way
mkdocs-jupyter does with `execute: true` and no cache (a warm `mkdocs
serve` rebuild pays neither: charts are remembered in-process and
notebooks come from the mkdocs-jupyter cache). Timings depend on the
machine; nothing else reads them.
"""

import os
import time


def bench_figures():
    start, cpu = time.perf_counter(), time.process_time()
    from snippets.figures import plots

    imported = time.perf_counter()
    for name in plots.FIGURES:
        plots.figure(name)
    done = time.perf_counter()
    cpu = time.process_time() - cpu
    return len(plots.FIGURES), imported - start, done - start, cpu


def bench_notebooks():
    from mkdocs_jupyter import convert

    from snippets.figures.notebooks import EXERCISES, NOTEBOOKS

    start = time.perf_counter()
    for name in NOTEBOOKS:
        convert.nb2html(
            str(EXERCISES / f"{name}.py"),
            execute=True,
            kernel_name="python3",
            allow_errors=False,
            remove_tag_config={"remove_input_tags": ["site-only"]},
        )
    return len(NOTEBOOKS), time.perf_counter() - start


def main():
    load = os.getloadavg()[0]
    count, imported, total, cpu = bench_figures()
    print(
        f"figures:   {total:5.2f} s for {count} charts "
        f"(matplotlib import {imported:.2f} s; CPU {cpu:.2f} s)"
    )
    count, total = bench_notebooks()
    print(f"notebooks: {total:5.2f} s for {count} notebooks, executed")
    print(f"(load average {load:.1f} on {os.cpu_count()} CPUs at the start)")


if __name__ == "__main__":
    main()
