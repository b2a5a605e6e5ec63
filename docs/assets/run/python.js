// The Python side of the runner, shared by worker.js (in the browser)
// and tests/pyodide_blocks.mjs (under Node), so that the tests run the
// blocks exactly as a reader's browser does.

// Where the labs' archive is unpacked; it goes first on sys.path, so
// that `from snippets.units import GB` works as it does in the build.
export const LABS = "/home/pyodide/labs";

// Run once per interpreter: one globals dict per session; print is
// captured as markdown-exec captures it in the build (its arguments
// joined by spaces, then `end`), and so is anything written to
// sys.stdout; an error comes back as traceback text, without the
// frame of _run itself.
const RUNNER = `
import io, linecache, sys, traceback, types

_sessions = {}
_count = 0


def _run(code, session):
    global _count
    _count += 1
    scope = _sessions.setdefault(session, {}) if session else {}
    name = f"_course_block_{_count}"
    scope["__name__"] = name
    sys.modules[name] = types.ModuleType(name)  # what dataclasses expect
    buffer = io.StringIO()

    def _print(*texts, end="\\n", **_):
        buffer.write(" ".join(str(text) for text in texts) + end)

    scope["print"] = _print
    filename = f"<block {_count}>"
    lines = code.splitlines(keepends=True)
    linecache.cache[filename] = (len(code), None, lines, filename)
    stdout, sys.stdout = sys.stdout, buffer
    try:
        exec(compile(code, filename, "exec"), scope)
    except BaseException as error:
        trace = traceback.TracebackException.from_exception(error)
        if trace.stack and trace.stack[0].name == "_run":
            del trace.stack[0]
        return buffer.getvalue(), "".join(trace.format())
    finally:
        sys.stdout = stdout
    return buffer.getvalue(), None
`;

// Load Pyodide with `loadPyodide` from `indexURL`, unpack `archive` (the
// bytes of snippets-<sha>.zip) and return run(code, session), which
// gives {output, error}.
export async function startPython(loadPyodide, indexURL, archive) {
  const pyodide = await loadPyodide({ indexURL, packages: [] });
  pyodide.FS.mkdirTree(LABS);
  pyodide.unpackArchive(archive, "zip", { extractDir: LABS });
  pyodide.FS.chdir(LABS);
  pyodide.runPython(`import sys\nsys.path.insert(0, ${JSON.stringify(LABS)})`);
  pyodide.runPython(RUNNER);
  const run = pyodide.globals.get("_run");
  return (code, session) => {
    const result = run(code, session || null);
    const [output, error] = result.toJs();
    result.destroy();
    return { output, error: error ?? null };
  };
}
