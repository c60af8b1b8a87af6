// Starts a live page's web worker (kvlab-worker.mjs) as soon as the page starts loading.
//
// Loaded in the <head> of every page that runs Python (app/site/), before BokehJS: the
// browser parses and runs about 2.5 MB of BokehJS and Panel before kvlab-bridge.js (at the end of
// the body) runs, and a worker started here fetches the snapshot and Pyodide's WebAssembly and
// starts Python meanwhile, on another core. kvlab-bridge.js adopts that worker with every message
// it sent so far (`kvlabWorker.adopt()`); a lesson starts its worker at the first move of one of
// its live views (`kvlabWorker.start(search, live)`). The boot message is written here only.
(function () {
  "use strict";
  const me = document.currentScript;
  const info = me.dataset;
  const abs = (u) => new URL(u, window.location.href).href;

  // The serving lab's opening run, as the build computed it, serves only the default page: a link
  // with settings of its own runs its own (the shell's keys, data-shell-keys, are not settings).
  const shellKeys = (info.shellKeys || "").split(" ");
  const own = (search) => [...new URLSearchParams(search).keys()].some((k) => !shellKeys.includes(k));

  function start(search, live) {
    const worker = new Worker(new URL("./kvlab-worker.mjs", me.src), { type: "module" });
    worker.postMessage({ type: "boot", page: info.page, search, pyodideUrl: abs(info.pyodideUrl),
                         wheels: info.wheels.split(" ").map(abs), live: live || null,
                         opening: info.opening && !own(search) ? abs(info.opening) : null,
                         snapshot: info.snapshot ? { url: abs(info.snapshot), pyodide: info.snapshotPyodide,
                                                     stdlib: info.snapshotStdlib ? abs(info.snapshotStdlib) : null,
                                                     data: abs(info.snapshotData) } : null });
    return worker;
  }

  // A live panel starts now, unless the bridge will send the browser to the other theme's page
  // (?theme=) or the page is a file (where workers do not run; the bridge says so).
  let early = null;
  const wantDark = new URLSearchParams(window.location.search).get("theme") === "dark";
  if (info.bridge === "panel" && window.location.protocol !== "file:" && wantDark === (info.theme === "dark")) {
    try {
      const worker = start(window.location.search, null);
      const events = [];
      worker.onmessage = (e) => events.push(e);
      worker.onerror = (e) => events.push(e);
      early = { worker, events };
    } catch (e) {
      early = null; // the bridge starts it, and reports what fails
    }
  }
  window.kvlabWorker = { start, adopt: () => { const e = early; early = null; return e; } };
})();
