// Run lab blocks under Node with the site's runtime, as the browser
// does: tests/test_pyodide.py writes a job (JSON) and reads the results.
//
//   node tests/pyodide_blocks.mjs JOB.json RESULTS.json
//
// JOB: {pyodide: folder of the runtime files, archive: path of the
// labs' zip, blocks: [{id, code, session}]}. RESULTS: [{id, output,
// error}] in the same order, and the seconds Pyodide took to load.

import { readFileSync, writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

import { startPython } from "../docs/assets/run/python.js";

const [jobPath, resultsPath] = process.argv.slice(2);
const job = JSON.parse(readFileSync(jobPath, "utf8"));
const folder = job.pyodide.endsWith("/") ? job.pyodide : `${job.pyodide}/`;
const { loadPyodide } = await import(
  pathToFileURL(`${folder}pyodide.mjs`).href
);
const started = performance.now();
const run = await startPython(loadPyodide, folder, new Uint8Array(readFileSync(job.archive)));
const loadSeconds = (performance.now() - started) / 1000;
const results = job.blocks.map(({ id, code, session }) => ({
  id,
  ...run(code, session),
}));
writeFileSync(resultsPath, JSON.stringify({ loadSeconds, results }));
