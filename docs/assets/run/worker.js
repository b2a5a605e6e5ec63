// The Python of the "Run in your browser" tab: a module worker that
// run.js starts on a page's first Run. It loads Pyodide from the site's
// own files (assets/pyodide/), unpacks the labs' archive
// (assets/run/snippets-<sha>.zip) and runs blocks. No other host is
// ever asked for anything.
//
// In:  {id, code, setup, pyodideURL, archiveURL}
// Out: {id, type: "loading"}   first run only, before loading
//      {id, type: "started"}   the block's code starts now
//      {id, type: "done", output, error}
// `output` is what the block printed, `error` null or the traceback's
// text. run.js ends a block that runs too long by terminating this
// worker.

// As markdown-exec runs a block in the build: fresh globals (the setup
// blocks run in them first, their output dropped), print captured (its
// arguments joined by spaces, then `end`), sys.stdout too; an error
// comes back as its traceback, without the frame of _run.
const RUNNER = `
import io, linecache, sys, traceback, types


def _run(setup, code):
    scope = {"__name__": "_course_block"}
    sys.modules["_course_block"] = types.ModuleType("_course_block")
    for n, text in enumerate([*setup, code]):
        buffer = io.StringIO()

        def _print(*texts, end="\\n", **_):
            buffer.write(" ".join(str(t) for t in texts) + end)

        scope["print"] = _print
        filename = f"<block {n}>"
        lines = text.splitlines(keepends=True)
        linecache.cache[filename] = (len(text), None, lines, filename)
        stdout, sys.stdout = sys.stdout, buffer
        try:
            exec(compile(text, filename, "exec"), scope)
        except BaseException as error:
            trace = traceback.TracebackException.from_exception(error)
            del trace.stack[0]  # _run's own frame
            why = "".join(trace.format())
            if n < len(setup):
                why = "An earlier block of this session failed:\\n" + why
            return buffer.getvalue(), why
        finally:
            sys.stdout = stdout
    return buffer.getvalue(), None
`;

const LABS = "/home/pyodide/labs"; // first on sys.path, as in the build
let ready = null; // a promise of the _run function, made on first use

async function start(pyodideURL, archiveURL) {
  const [{ loadPyodide }, response] = await Promise.all([
    import(new URL("pyodide.mjs", pyodideURL).href),
    fetch(archiveURL),
  ]);
  if (!response.ok) throw new Error(`${archiveURL}: HTTP ${response.status}`);
  const pyodide = await loadPyodide({ indexURL: pyodideURL, packages: [] });
  pyodide.FS.mkdirTree(LABS);
  pyodide.unpackArchive(await response.arrayBuffer(), "zip", {
    extractDir: LABS,
  });
  pyodide.FS.chdir(LABS);
  pyodide.runPython(`import sys\nsys.path.insert(0, ${JSON.stringify(LABS)})`);
  pyodide.runPython(RUNNER);
  return pyodide.globals.get("_run");
}

self.onmessage = async (event) => {
  const { id, code, setup, pyodideURL, archiveURL } = event.data;
  let run;
  try {
    if (ready === null) {
      self.postMessage({ id, type: "loading" });
      ready = start(pyodideURL, archiveURL).catch((error) => {
        ready = null; // the next Run tries again
        throw error;
      });
    }
    run = await ready;
  } catch (error) {
    const why = error?.message ?? String(error);
    self.postMessage({
      id,
      type: "done",
      output: "",
      error: `The browser's Python could not start: ${why}`,
    });
    return;
  }
  self.postMessage({ id, type: "started" });
  const result = run(setup, code);
  const [output, error] = result.toJs();
  result.destroy();
  self.postMessage({ id, type: "done", output, error: error ?? null });
};
