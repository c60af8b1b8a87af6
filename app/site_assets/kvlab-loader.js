// kvlab's loading shell for pages built by `kvlab build-site` (see app/site_shell.py, docs/site.md).
//
// The page already shows a pre-rendered view (computed by CPython at build time) while Python loads
// in a web worker. This script adds: a progress bar fed by the worker's status messages, with the
// elapsed time; and, if loading fails, a message saying which step failed, why, and that the view
// is a static preview. It uses no outside resources, so it works even when every CDN is blocked.
(function () {
  "use strict";
  const me = document.currentScript;
  const info = me ? me.dataset : {};
  const STEPS = [
    ["Loading pyodide", "loading Python (Pyodide " + (info.pyodideVersion || "") + ")"],
    ["Unpacking", "unpacking kvlab"],
    ["Installing environment", "installing Panel, Bokeh and numpy"],
    ["Executing code", "running the page"],
  ];
  const started = performance.now();
  let timer = null;

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text) e.textContent = text;
    return e;
  }

  const bar = el("div", "kvlab-banner kvlab-progress");
  bar.setAttribute("role", "status");
  bar.setAttribute("aria-live", "polite");
  const label = el("span", "kvlab-progress-label", "Preview computed when the site was built. Starting Python in your browser…");
  const meter = el("progress", "kvlab-progress-meter");
  meter.max = STEPS.length;
  meter.value = 0;
  const clock = el("span", "kvlab-progress-clock", "");
  bar.append(label, meter, clock);

  function show() {
    if (!bar.isConnected) document.body.prepend(bar);
    if (!timer) timer = setInterval(() => { clock.textContent = ((performance.now() - started) / 1000).toFixed(0) + " s"; }, 500);
  }

  function step(msg) {
    const i = STEPS.findIndex(([prefix]) => msg.startsWith(prefix));
    if (i < 0) return;
    meter.value = i;
    label.textContent = "Preview computed when the site was built. Step " + (i + 1) + " of " + STEPS.length + ": " + STEPS[i][1] + "…";
    bar.dataset.step = String(i + 1);
  }

  function done() {
    clearInterval(timer);
    bar.remove();
    document.body.dataset.kvlabState = "ready";
  }

  const WHAT = {
    pyodide: "Python (Pyodide) could not be downloaded",
    packages: "Python started, but Panel, Bokeh or their dependencies could not be installed",
    python: "Python stopped while starting the page",
    worker: "the page's Python worker could not start",
    bokeh: "the page's JavaScript libraries (BokehJS and Panel) could not be loaded",
  };

  function fail(stage, msg, detail) {
    if (document.body.dataset.kvlabState === "failed") return;
    clearInterval(timer);
    bar.remove();
    document.body.dataset.kvlabState = "failed";
    document.body.classList.remove("pn-loading");
    for (const m of document.querySelectorAll(".pn-loading-msg")) m.remove();
    const box = el("div", "kvlab-banner kvlab-error");
    box.setAttribute("role", "alert");
    box.dataset.stage = stage;
    box.append(el("strong", "", "kvlab could not start: " + (WHAT[stage] || stage) + "."));
    box.append(el("p", "", String(msg || "")));
    const hint = info.pyodideSelfHosted === "true" && stage === "packages"
      ? "This site hosts its own Pyodide: it must be a full Pyodide release (with micropip and numpy), not the npm core package. "
      : "On a network that blocks the CDN, ask for a self-hosted build (kvlab build-site --pyodide-dir …). ";
    box.append(el("p", "", "What you see is a static preview computed when the site was built; the controls will not update it. " +
      "Reload to try again. " + hint + "The same pages also run locally with `kvlab serve`."));
    if (detail) {
      const d = el("details", "");
      d.append(el("summary", "", "Technical details"), el("pre", "", detail));
      box.append(d);
    }
    document.body.prepend(box);
  }

  function attach() {
    if (typeof Bokeh === "undefined") {
      fail("bokeh", "BokehJS did not load" + (info.bokehUrl ? " from " + info.bokehUrl : "") + ".");
      return;
    }
    if (typeof pyodideWorker === "undefined") {  // declared by Panel's handler script above this one
      fail("worker", "Panel's worker handler is missing from this page.");
      return;
    }
    show();
    const onMessage = (data) => {
      const m = data || {};
      if (m.type === "status") step(String(m.msg || ""));
      else if (m.type === "render") setTimeout(done, 0);
      else if (m.type === "kvlab-error") fail(m.stage, m.msg, m.detail);
    };
    const onError = (message) => fail("worker", message || "the worker script failed to load (" + (info.page || "") + ".js)");
    // Replay what the recorder next to Panel's handler caught before this script ran, then go live.
    const early = window.kvlabEvents || [];
    window.kvlabEvents = null;
    for (const [kind, data] of early) (kind === "message" ? onMessage : onError)(data);
    pyodideWorker.addEventListener("message", (event) => onMessage(event.data));
    pyodideWorker.addEventListener("error", (event) => onError(event.message));
  }

  // This script sits at the end of <body>: BokehJS (in <head>) and Panel's handler script have
  // already run, and the worker cannot have posted anything yet that we would miss.
  attach();
})();
