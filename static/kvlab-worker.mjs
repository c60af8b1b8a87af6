// kvlab's web worker for the static site (see app/site/ and docs/site.md).
//
// Loads Pyodide's core, unpacks kvlab's two pure wheels served by the site (no micropip, no PyPI,
// no other host; from the snapshot, only their data files), and answers each widget change with one call into kvlab.app.viewlayer.pages:
// the returned patch ({Bokeh model name: {property: value}}) goes back to the page's bridge, with
// the names it should set first when the page gives them (a panel's `first`: its numbers).
// When the page names the site's Pyodide memory snapshot, Python starts from it (kvlab already
// imported) instead of from scratch; if that fails for any reason it starts from scratch, and the
// `timings` of the ready message say which start ran (`boot`: "snapshot" or "plain").
// A reply can say the page is `busy`: the worker then calls `tick()`, posts its patch, and reads
// its messages between ticks, so a new setting or Cancel is answered within one slice. A panel
// is busy for two ticks after a change (its other views, then the swept curve's views); the
// serving lab for a whole run (about 50 ms of simulation per tick).
let page = null;
let stage = "start";
let busy = false;
let looping = false;

function post(message) { self.postMessage(message); }
const errorText = (e) => String((e && e.message) || e); // a thrown value as the page shows it
function progress(step, label) { stage = label; post({ type: "progress", step, of: 3, label }); }

function call(fn) {
  const result = fn();
  try {
    return result.toJs({ dict_converter: Object.fromEntries });
  } finally {
    result.destroy();
  }
}

// A file of the site, or an error naming it and the HTTP status.
async function fetchOk(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return response;
}

const fetchBytes = async (url) => new Uint8Array(await (await fetchOk(url)).arrayBuffer());
const fetchText = async (url) => (await fetchOk(url)).text();

// A zero-delay yield to the worker's message queue (setTimeout is clamped to 4 ms when nested).
const channel = new MessageChannel();
const resumers = [];
channel.port1.onmessage = () => { const r = resumers.shift(); if (r) r(); };
const yieldToMessages = () => new Promise((resolve) => { resumers.push(resolve); channel.port2.postMessage(0); });

async function runLoop() {
  if (looping) return;
  looping = true;
  try {
    while (busy) {
      await yieldToMessages();
      if (!busy) break;
      const out = call(() => page.tick());
      busy = Boolean(out.busy);
      post({ type: "tick", patch: out.patch, first: out.first, query: out.query, busy });
    }
  } catch (e) {
    busy = false;
    post({ type: "error", stage: "python", msg: errorText(e) });
  } finally {
    looping = false;
  }
}

// Once the page has shown its first patch (the bridge says "warm": BokehJS has built the page, so
// the warm-up does not take a core from it) and nothing has been asked of it for WARM_UP_QUIET_MS
// (a step would delay a move that comes at once), the worker calls the page's warm_up() a step at
// a time: a panel warms Pyodide's WebAssembly up (PanelPage.warm_up: rounds of moves of every
// slider on a copy of the page, whose patches are converted as a reply would be, then dropped).
// Each step waits behind any message that came meanwhile; a change pauses the warm-up, which goes
// on from where it was once the page has been quiet for WARM_UP_QUIET_MS again (a student who
// tried one slider at once still gets the others' paths warmed). A warm-up that ran to its end is
// reported ("warmed", with its steps, starts and time) for tests and benchmarks, and so is each
// start ("warming").
// (Work a page needs before it can answer, the serving lab's opening run when the site's copy of
// it cannot be used, is not a warm-up: its start says busy, and it runs in ticks at once.)
const WARM_UP_QUIET_MS = 250;
let warmUpWanted = false; // the bridge asked for it, and it has not run to its end
let warming = false;
let warmUpTimer = 0;
const warmedUp = { steps: 0, starts: 0, python_ms: 0, startedAt: 0 };

function warmUpWhenQuiet() {
  clearTimeout(warmUpTimer);
  warmUpTimer = 0;
  if (!warmUpWanted) return;
  warmUpTimer = setTimeout(() => {
    warmUpTimer = 0;
    if (busy) warmUpWhenQuiet(); // a run or a move's other views are still coming: wait for quiet again
    else if (!warming) warmUp();
  }, WARM_UP_QUIET_MS);
}

async function warmUp() {
  warming = true;
  warmedUp.startedAt = warmedUp.startedAt || performance.now();
  warmedUp.starts += 1;
  post({ type: "warming", starts: warmedUp.starts });
  try {
    while (warming) {
      await yieldToMessages();
      if (!warming || busy) break;
      const t = performance.now();
      const more = call(() => page.warm_up()).more;
      warmedUp.python_ms += performance.now() - t;
      if (!more) {
        warmUpWanted = false;
        post({ type: "warmed", steps: warmedUp.steps, starts: warmedUp.starts, python_ms: warmedUp.python_ms,
               wall_ms: performance.now() - warmedUp.startedAt });
        break;
      }
      warmedUp.steps += 1;
    }
  } catch (e) {
    warmUpWanted = false;
    console.warn(`kvlab worker: warming up failed (${errorText(e)}); the page works without it`);
  } finally {
    warming = false;
  }
}

function answer(type, id, out) {
  busy = Boolean(out.busy);
  post({ type, id, patch: out.patch, first: out.first, query: out.query, error: out.error, busy });
  if (busy) runLoop();
}

// A gzip-compressed file of the site, decompressed as it arrives. A host that serves the site's
// precompressed copies (app/site/compress.py) may send the snapshot's brotli copy, which holds its
// content itself: the browser has decoded it, and the first bytes say so (a gzip file starts 1f 8b).
async function fetchGzip(url) {
  const response = await fetchOk(url);
  const reader = response.body.getReader();
  const head = [];
  let seen = 0;
  while (seen < 2) {
    const { done, value } = await reader.read();
    if (done) break;
    head.push(value);
    seen += value.length;
  }
  const first = (i) => { for (const c of head) { if (i < c.length) return c[i]; i -= c.length; } return -1; };
  const gzipped = first(0) === 0x1f && first(1) === 0x8b;
  const body = new ReadableStream({
    start(controller) { for (const c of head) controller.enqueue(c); },
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) controller.close(); else controller.enqueue(value);
    },
    cancel(reason) { return reader.cancel(reason); },
  });
  return new Response(gzipped ? body.pipeThrough(new DecompressionStream("gzip")) : body);
}

// The site's Pyodide memory snapshot (app/site/snapshot.py): Python's memory with kvlab already
// imported, gzip-compressed (or decoded by the browser from the host's brotli copy). Restoring it replaces Python's start-up and kvlab's imports.
const fetchSnapshot = async (url) => new Uint8Array(await (await fetchGzip(url)).arrayBuffer());

// The standard library the snapshot was made with (app/site/snapshot.py): a zip of stored entries,
// gzip-compressed (or decoded by the browser from the host's brotli copy), handed to Pyodide as a
// blob: URL of the zip itself.
const fetchStdlib = async (url) => URL.createObjectURL(await (await fetchGzip(url)).blob());

// The serving lab's opening run as the build computed it (lab_page.opening_json): the page takes
// it instead of running it again when it is the run of the page's state. Without it (any failure)
// the page runs it.
async function fetchOpening(url) {
  try {
    return await (await fetchGzip(url)).text();
  } catch (e) {
    console.warn(`kvlab worker: the lab's opening run could not be read (${errorText(e)}); running it`);
    return null;
  }
}

// A start without the snapshot unpacks the wheels with zipfile into the working directory, which
// is on sys.path: where unpackArchive(bytes, "wheel") puts them, without its other steps (it took 3
// times as long); it imports kvlab after.
const UNPACK_PY = `
import os, zipfile
for path in paths:
    with zipfile.ZipFile(path) as wheel:
        wheel.extractall(os.getcwd())
    os.remove(path)
`;

// Runs `code` with `names` as its globals, then returns kvlab's page_for (the worker's one entry).
function runThenPageFor(pyodide, code, names) {
  const scope = pyodide.toPy(names);
  try {
    pyodide.runPython(code, { globals: scope });
  } finally {
    scope.destroy();
  }
  return pyodide.pyimport("kvlab.app.viewlayer.sessions").page_for;
}

function unpack(pyodide, wheels) {
  const paths = wheels.map((bytes, i) => {
    const path = `/tmp/kvlab-wheel-${i}.whl`;
    pyodide.FS.writeFile(path, bytes);
    return path;
  });
  return runThenPageFor(pyodide, UNPACK_PY, { paths });
}

// A start from the snapshot has every module it imports in memory already, but not sim's data files
// (a snapshot holds no files): the build gathers them into one JSON file (app/site/snapshot.py,
// {path in the wheel: text}), written here into the folder kvlab was imported from. Imports need
// no cache invalidation: no module is imported from these files.
const WRITE_DATA_PY = `
import json, os, sys
dest = os.path.dirname(os.path.dirname(sys.modules["kvlab"].__file__))
for name, text in json.loads(data).items():
    path = os.path.join(dest, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
if not os.path.isdir(os.path.join(dest, "kvlab", "sim", "data")):
    raise RuntimeError(f"sim's data files are not in {dest}")
`;

const writeData = (pyodide, text) => runThenPageFor(pyodide, WRITE_DATA_PY, { data: text });

async function boot(m) {
  const t0 = performance.now();
  const timings = { boot: "plain" };
  try {
    progress(1, "loading Python");
    // Downloads overlap Python's start-up: from the snapshot, sim's data files only (the wheels'
    // modules are in it; the build writes the data file with every snapshot); without it, or if it
    // fails, the wheels.
    const fetchWheels = () => Promise.all(m.wheels.map(fetchBytes));
    const wheels = m.snapshot ? null : fetchWheels();
    const data = m.snapshot ? fetchText(m.snapshot.data) : null;
    data?.catch(() => {}); // a failure is handled where the data is used
    const opening = m.opening ? fetchOpening(m.opening) : null;
    // Fetched and decompressed while Pyodide fetches and compiles its WebAssembly.
    let snapshot = m.snapshot ? fetchSnapshot(m.snapshot.url) : null;
    snapshot?.catch(() => {}); // a failure is handled where the snapshot is used
    const stdlib = m.snapshot?.stdlib ? fetchStdlib(m.snapshot.stdlib) : null;
    stdlib?.catch(() => {});
    const { loadPyodide, version } = await import(m.pyodideUrl + "pyodide.mjs");
    const options = { indexURL: m.pyodideUrl, stdout: () => {}, stderr: (t) => console.warn(t) };
    let pyodide = null;
    let pageFor = null;
    if (snapshot) {
      // A private, version-locked Pyodide API: use it only with the release the snapshot was made
      // with (Pyodide itself refuses another build). Any failure falls back to the plain start.
      try {
        if (version !== m.snapshot.pyodide) throw new Error(`it was made with Pyodide ${m.snapshot.pyodide}, this is ${version}`);
        // With the standard library it was made with: the modules it holds imported, not the whole zip.
        const cut = stdlib ? { stdLibURL: await stdlib } : {};
        try {
          pyodide = await loadPyodide({ ...options, ...cut, _loadSnapshot: snapshot });
        } finally {
          if (cut.stdLibURL) URL.revokeObjectURL(cut.stdLibURL); // Pyodide holds its own copy of the zip
        }
        timings.python_ms = performance.now() - t0;
        progress(2, "unpacking kvlab");
        pageFor = writeData(pyodide, await data);
        timings.boot = "snapshot";
      } catch (e) {
        timings.snapshot_error = errorText(e);
        console.warn(`kvlab worker: the Pyodide memory snapshot could not be used (${timings.snapshot_error}); ` +
                     "starting Python without it");
        pyodide = null;
      }
      snapshot = null; // 30 MB: let it go
    }
    if (pyodide === null) {
      const unpacked = wheels || fetchWheels(); // a failed snapshot's start fetches them now
      pyodide = await loadPyodide(options);
      timings.python_ms = performance.now() - t0;
      progress(2, "unpacking kvlab");
      pageFor = unpack(pyodide, await unpacked);
    }
    progress(3, "starting the page");
    page = pageFor(m.page, m.search, m.live, opening ? await opening : null);
    const out = call(() => page.start());
    if (m.opening) timings.opening = page.opening_source;
    busy = Boolean(out.busy);
    timings.ready_ms = performance.now() - t0;
    post({ type: "ready", patch: out.patch, query: out.query, busy, timings });
    if (busy) runLoop();
  } catch (e) {
    post({ type: "error", stage, msg: errorText(e) });
  }
}

function guarded(m, fn) {
  try {
    answer("patch", m.id, call(fn));
  } catch (e) {
    post({ type: "error", stage: "python", msg: errorText(e) });
  }
}

self.onmessage = (event) => {
  const m = event.data || {};
  if (m.type === "boot") { boot(m); return; }
  if (page === null) return;
  if (m.type === "warm") {
    warmUpWanted = typeof page.warm_up === "function";
    warmUpWhenQuiet();
    return;
  }
  warming = false; // the student's move first; the warm-up goes on once they pause
  if (m.type === "change") guarded(m, () => page.change(m.name, m.value));
  else if (m.type === "click") guarded(m, () => page.click(m.name));
  else if (m.type === "upload") guarded(m, () => page.upload(m.filename, m.value));
  warmUpWhenQuiet();
};
