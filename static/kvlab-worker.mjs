// kvlab's web worker for the static site (see app/build_site.py and docs/site.md).
//
// Loads Pyodide's core, unpacks kvlab's two pure wheels served by the site (no micropip, no PyPI,
// no other host), and answers each widget change with one call into kvlab.app.viewlayer.pages:
// the returned patch ({Bokeh model name: {property: value}}) goes back to the page's bridge.
let page = null;
let stage = "start";

function post(message) { self.postMessage(message); }
function progress(step, label) { stage = label; post({ type: "progress", step, of: 3, label }); }

function call(fn) {
  const result = fn();
  try {
    return result.toJs({ dict_converter: Object.fromEntries });
  } finally {
    result.destroy();
  }
}

async function fetchBytes(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return response.arrayBuffer();
}

async function boot(m) {
  const t0 = performance.now();
  try {
    progress(1, "loading Python");
    const wheels = Promise.all(m.wheels.map(fetchBytes)); // downloads overlap Python's start-up
    const { loadPyodide } = await import(m.pyodideUrl + "pyodide.mjs");
    const pyodide = await loadPyodide({ indexURL: m.pyodideUrl, stdout: () => {}, stderr: (t) => console.warn(t) });
    const tPython = performance.now();
    progress(2, "unpacking kvlab");
    for (const bytes of await wheels) pyodide.unpackArchive(bytes, "wheel");
    progress(3, "starting the page");
    const PanelPage = pyodide.pyimport("kvlab.app.viewlayer.pages").PanelPage;
    page = PanelPage(m.page, m.search);
    const out = call(() => page.start());
    post({ type: "ready", patch: out.patch, query: out.query,
           timings: { python_ms: tPython - t0, ready_ms: performance.now() - t0 } });
  } catch (e) {
    post({ type: "error", stage, msg: String((e && e.message) || e) });
  }
}

function change(m) {
  try {
    const out = call(() => page.change(m.name, m.value));
    post({ type: "patch", id: m.id, patch: out.patch, query: out.query, error: out.error });
  } catch (e) {
    post({ type: "error", stage: "python", msg: String((e && e.message) || e) });
  }
}

self.onmessage = (event) => {
  const m = event.data || {};
  if (m.type === "boot") boot(m);
  else if (m.type === "change" && page !== null) change(m);
};
