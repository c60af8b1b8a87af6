// Run one Python function inside real Pyodide under Node, offline.
//
//   node run_python.mjs PYODIDE_DIR SCRIPT.py FUNCTION INPUT_FILE OUTPUT_FILE WHEEL...
//
// Loads the Pyodide build in PYODIDE_DIR (an npm `pyodide` package folder), unpacks each pure
// wheel into site-packages, executes SCRIPT.py, calls FUNCTION(text of INPUT_FILE) and writes the
// string it returns to OUTPUT_FILE. Timings go to stderr as one JSON line so callers can report them.
import { readFile, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const [pyodideDir, script, func, input, output, ...wheels] = process.argv.slice(2);
if (!output) {
  console.error("usage: node run_python.mjs PYODIDE_DIR SCRIPT.py FUNCTION INPUT_FILE OUTPUT_FILE WHEEL...");
  process.exit(2);
}
const t0 = performance.now();
const { loadPyodide } = await import(pathToFileURL(join(resolve(pyodideDir), "pyodide.mjs")).href);
const py = await loadPyodide({ indexURL: resolve(pyodideDir) + "/" });
const tLoaded = performance.now();
// Into site-packages, where micropip would put them (unpackArchive's default is the cwd).
const sitePackages = py.runPython("import sysconfig; sysconfig.get_paths()['purelib']");
for (const whl of wheels) {
  // unpackArchive wants a Uint8Array: a Node Buffer is rejected.
  py.unpackArchive(new Uint8Array(await readFile(whl)), "wheel", { extractDir: sitePackages });
}
py.runPython(await readFile(script, "utf8"));
// performance.now() counts from process start: this is the cold start of Pyodide + wheels + script.
const readyS = performance.now() / 1e3;
const fn = py.globals.get(func);
const tStart = performance.now();
const result = fn(await readFile(input, "utf8"));
const tEnd = performance.now();
await writeFile(output, result);
console.error(JSON.stringify({ pyodide_s: (tLoaded - t0) / 1e3, ready_s: readyS, call_s: (tEnd - tStart) / 1e3, version: py.version }));
