// The Python of the "Run in your browser" tab: a module worker that
// run.js starts on the first Run click of a page. It loads Pyodide from
// the site's own files (assets/pyodide/), unpacks the labs' archive
// (assets/run/snippets-<sha>.zip) into its file system, and runs blocks
// with python.js. No other host is ever asked for anything.
//
// Messages in:  {id, code, session, pyodideURL, archiveURL}
// Messages out: {id, type: "loading"}   first run only, before loading
//               {id, type: "started"}   the block's code starts now
//               {id, type: "done", output, error}
// `output` is what the block printed; `error` is null, or the Python
// traceback's text. A block that never returns is ended by run.js,
// which terminates this worker and starts a fresh one.

import { startPython } from "./python.js";

let ready = null; // a promise of run(code, session), made on first use

async function sha256Hex(bytes) {
  const digest = await crypto.subtle.digest("SHA-256", bytes);
  return Array.from(new Uint8Array(digest), (b) =>
    b.toString(16).padStart(2, "0"),
  ).join("");
}

async function fetchArchive(archiveURL) {
  const response = await fetch(archiveURL);
  if (!response.ok) {
    throw new Error(`${archiveURL}: HTTP ${response.status}`);
  }
  const bytes = await response.arrayBuffer();
  // The archive is named after its sha256: a file that does not match
  // its name is not the one the page was built with. (crypto.subtle
  // exists on https and on 127.0.0.1, where the site is read.)
  const named = archiveURL.match(/snippets-([0-9a-f]{16})\.zip$/);
  if (named && self.crypto && crypto.subtle) {
    const actual = (await sha256Hex(bytes)).slice(0, 16);
    if (actual !== named[1]) {
      throw new Error(`${archiveURL}: its sha256 starts ${actual}`);
    }
  }
  return bytes;
}

async function start(pyodideURL, archiveURL) {
  const [{ loadPyodide }, archive] = await Promise.all([
    import(new URL("pyodide.mjs", pyodideURL).href),
    fetchArchive(archiveURL),
  ]);
  return startPython(loadPyodide, pyodideURL, archive);
}

self.onmessage = async (event) => {
  const { id, code, session, pyodideURL, archiveURL } = event.data;
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
    const why = error && error.message ? error.message : String(error);
    self.postMessage({
      id,
      type: "done",
      output: "",
      error: `The browser's Python could not start: ${why}`,
    });
    return;
  }
  self.postMessage({ id, type: "started" });
  const { output, error } = run(code, session);
  self.postMessage({ id, type: "done", output, error });
};
