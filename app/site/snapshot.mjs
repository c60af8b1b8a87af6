// Makes the static site's Pyodide memory snapshot (run by app/site/snapshot.py at `kvlab build-site`).
//
//   node app/site/snapshot.mjs PYODIDE_DIR OUT_FILE STDLIB_FILE IMPORTS WHEEL...
//
// Boots the npm `pyodide` package in PYODIDE_DIR, unpacks the site's own wheels and imports IMPORTS
// (comma-separated module names: what the worker needs for every kind of page; no page is built),
// and writes to STDLIB_FILE the standard library's zip cut to the modules then imported (the
// snapshot's worker imports no other: tests/site/test_snapshot.py; the whole zip is 2.5 MB, most
// of a slow link's wait for it). Then boots again with that zip as its standard library and
// `_makeSnapshot: true`, does the same, and writes `pyodide.makeMemorySnapshot()` gzip-compressed
// to OUT_FILE: made with the zip it will be restored with (zipimport keeps the zip's table of
// contents in memory). It then restores the snapshot with that zip, as the worker does, gives kvlab
// its data files again (files in Pyodide's in-memory file system are not part of a snapshot; here
// by unpacking the wheels, where the worker writes the same files from the build's data-*.json) and
// evaluates sim's default scenario, so a snapshot that cannot start is never shipped. Prints one
// line of JSON: what the snapshot was made with and what it cost.
//
// `_makeSnapshot`, `_loadSnapshot` and `makeMemorySnapshot` are private Pyodide APIs; a snapshot
// restores only into the Pyodide build that made it (Pyodide checks its BUILD_ID). The build runs
// this script only with the Pyodide release it copies into the site (app/site/).
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import zlib from "node:zlib";

const [pyodideDir, outFile, stdlibFile, imports, ...wheels] = process.argv.slice(2);
const indexURL = pyodideDir.endsWith("/") ? pyodideDir : pyodideDir + "/";
const { loadPyodide, version } = await import(pathToFileURL(path.join(pyodideDir, "pyodide.mjs")).href);
const quiet = { stdout: () => {}, stderr: (t) => process.stderr.write(t + "\n") };
// A Node Buffer is not what unpackArchive expects: hand it a plain Uint8Array.
const wheelBytes = wheels.map((w) => new Uint8Array(fs.readFileSync(w)));
const unpack = (py) => { for (const bytes of wheelBytes) py.unpackArchive(bytes, "wheel"); };
const modules = imports.split(",").filter(Boolean);

// Garbage left in freed heap memory (the wheels' bytes, the sources compiled while importing) is
// copied into the snapshot as it is and compresses badly. Zero it: allocate the free chunks of the
// heap, largest first, never taking memory from the top chunk (so the heap does not grow), fill them
// with zeros and free them again. Only memory this function allocated is written.
// Emscripten's dlmalloc exports; without them the snapshot is just larger (gzip 6.6 MB, not 6.2 MB).
function zeroFreeHeap(module) {
  if (!["_malloc", "_free", "_sbrk", "_mallinfo"].every((f) => typeof module[f] === "function")) return 0;
  const info = module._malloc(64);
  module._mallinfo(info); // struct mallinfo: arena, ordblks, smblks, hblks, hblkhd, usmblks, fsmblks, uordblks, fordblks, keepcost
  const [, , , , , , , , freeBytes, topBytes] = new Int32Array(module.HEAPU8.buffer, info, 10);
  module._free(info);
  const topStart = module._sbrk(0) - topBytes;
  const held = [];
  let zeroed = 0;
  for (let size = 1 << 22; size >= 8; size >>= 1) {
    if (size > freeBytes) continue;
    for (;;) {
      const p = module._malloc(size);
      if (!p) break;
      if (p + size > topStart) { module._free(p); break; } // from the top chunk: no free chunk of this size is left
      module.HEAPU8.fill(0, p, p + size);
      held.push(p);
      zeroed += size;
    }
  }
  for (const p of held) module._free(p);
  return zeroed;
}

// The standard library's modules the imports load, and no other, into a zip of their own: each
// entry as the full zip holds it (its name, date and bytes), in the full zip's order, but stored,
// not deflated: the build ships the zip gzip-compressed as a whole, with a brotli copy of it, and
// both compress a stored zip better than its entries compressed one by one (0.70 and 0.53 MB
// against 0.74 MB on 4 December).
const CUT_STDLIB_PY = `
import sys, zipfile
src = f"/lib/python{sys.version_info[0]}{sys.version_info[1]}.zip"
origins = {getattr(getattr(m, "__spec__", None), "origin", None) for m in list(sys.modules.values())}
wanted = {o[len(src) + 1:] for o in origins if isinstance(o, str) and o.startswith(src + "/")}
with zipfile.ZipFile(src) as full, zipfile.ZipFile("/tmp/stdlib.zip", "w") as cut:
    for info in full.infolist():
        if info.filename in wanted:
            data = full.read(info.filename)
            info.compress_type = zipfile.ZIP_STORED
            cut.writestr(info, data)
len(wanted)
`;
let t0 = performance.now();
const lister = await loadPyodide({ indexURL, args: ["-OO"], ...quiet });
unpack(lister);
lister.runPython(modules.map((m) => `import ${m}\n`).join(""));
const stdlibModules = lister.runPython(CUT_STDLIB_PY);
fs.writeFileSync(stdlibFile, lister.FS.readFile("/tmp/stdlib.zip"));
const stdlibURL = path.resolve(stdlibFile);
const cutMs = performance.now() - t0;

t0 = performance.now();
// -OO: the interpreter compiles without docstrings (and asserts), here and, restored from the
// snapshot, in every page's worker: about a tenth of the imported modules' heap, which the snapshot
// carries. Nothing the browser runs reads a docstring or relies on assert (tests/test_structure.py).
const py = await loadPyodide({ indexURL, stdLibURL: stdlibURL, _makeSnapshot: true, args: ["-OO"], ...quiet });
const bootMs = performance.now() - t0;
unpack(py);
t0 = performance.now();
py.runPython(modules.map((m) => `import ${m}\n`).join("") + "import gc\ngc.collect()\n");
const importMs = performance.now() - t0;
const heapBytes = py._module.HEAPU8.length;
const zeroedBytes = zeroFreeHeap(py._module);
if (py._module.HEAPU8.length !== heapBytes) throw new Error("zeroing the free heap grew the heap");
const snapshot = py.makeMemorySnapshot();
const gz = zlib.gzipSync(snapshot, { level: 9 });
fs.writeFileSync(outFile, gz);

// The worker's path: restore, then give kvlab its data files (here from the wheels; the worker
// writes them from the build's data-*.json, the same files), run sim once.
t0 = performance.now();
const restored = await loadPyodide({ indexURL, stdLibURL: stdlibURL, _loadSnapshot: new Uint8Array(zlib.gunzipSync(gz)), ...quiet });
unpack(restored);
const check = restored.runPython("import kvlab.sim\nkvlab.sim.evaluate(kvlab.sim.Scenario()).max_sequences");
const restoreMs = performance.now() - t0;
if (!(check > 0)) throw new Error(`the restored snapshot evaluated sim's default scenario to ${check}`);

console.log(JSON.stringify({
  pyodide_version: version, pyodide_build_id: py._api.config.BUILD_ID, imports: modules,
  raw_bytes: snapshot.length, bytes: gz.length, zeroed_free_bytes: zeroedBytes,
  stdlib_modules: stdlibModules, stdlib_bytes: fs.statSync(stdlibFile).size, stdlib_cut_ms: Math.round(cutMs),
  boot_ms: Math.round(bootMs), import_ms: Math.round(importMs), restore_check_ms: Math.round(restoreMs),
}));
