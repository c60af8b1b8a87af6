// kvlab's page shell for the static site (see app/site/ and docs/site.md).
//
// Every page: the theme the link asks for (PAGE.html or PAGE.dark.html) and the pre-rendered view
// shown at once (embed mode is the page template's: app/templates/embed.js). Live pages
// (data-bridge="panel") then start kvlab-worker.mjs, and each widget change becomes one call into
// Python whose patch is applied to the Bokeh models found by name.
(function () {
  "use strict";
  const me = document.currentScript;
  const info = me.dataset;
  const openedWith = window.location.search; // the link's state, before anything on the page rewrites it
  const params = new URLSearchParams(openedWith);

  // ---- theme: each page is built in both; follow the link --------------------------------------
  const wantDark = params.get("theme") === "dark";
  if (wantDark !== (info.theme === "dark")) {
    window.location.replace("./" + info.page + (wantDark ? ".dark.html" : ".html") + window.location.search + window.location.hash);
    return;
  }

  const waiters = [];
  const idleWaiters = [];
  // For tests and benchmarks: `await kvlabBridge.nextPatch()` resolves once the next patch is applied;
  // `busy` is true while the serving lab's worker is running something, and `runs` counts the times
  // it went idle again (`await kvlabBridge.idle()` waits for that); `warmUpStarts` counts the
  // times the worker's warm-up started (or went on after a move), and `warmed` holds its figures
  // once it has run to its end; `quietViews` counts the views that stopped watching their size
  // (watchChartsOnly, below).
  const state = { patches: 0, latencies: [], missing: [], ready: false, busy: false, runs: 0, ticks: 0, warmUpStarts: 0, warmed: null, quietViews: 0,
                  nextPatch: () => new Promise((resolve) => waiters.push(resolve)),
                  idle: () => (state.busy ? new Promise((resolve) => idleWaiters.push(resolve)) : Promise.resolve(state.runs)) };
  window.kvlabBridge = state;
  const setState = (s) => { document.body.dataset.kvlabState = s; };

  // ---- progress and failure ---------------------------------------------------------------------
  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text) e.textContent = text;
    return e;
  }
  const startedAt = performance.now();
  const bar = el("div", "kvlab-banner kvlab-progress");
  bar.setAttribute("role", "status");
  bar.setAttribute("aria-live", "polite");
  const label = el("span", "kvlab-progress-label", "Showing the default state. Starting the simulator in your browser\u2026");
  // What the banner says once a control has moved before the simulator is ready.
  const HELD = "Starting the simulator in your browser\u2026 Your change is kept and shown as soon as it is ready.";
  const meter = el("progress", "kvlab-progress-meter");
  meter.max = 3;
  meter.value = 0;
  bar.append(label, meter);

  function fail(stage, msg) {
    bar.remove();
    setState("failed");
    const box = el("div", "kvlab-banner kvlab-error");
    box.setAttribute("role", "alert");
    box.dataset.stage = stage;
    box.append(el("strong", "", "The simulator could not start in this browser (" + stage + ")."));
    box.append(el("p", "", String(msg || "")));
    box.append(el("p", "", "The numbers shown are the default state, computed when the site was built; the controls will " +
      "not update them. Reload to try again, or run the same pages locally with `kvlab serve`."));
    document.body.prepend(box);
  }

  // A lesson's live views (data-bridge="lesson") are read far more than moved: the page is ready at
  // once, and the worker starts at the first move of one of their controls (that move is answered
  // when Python is up; the bar shows the start meanwhile).
  const lazy = info.bridge === "lesson";
  const lesson = info.group === "lesson";
  const ready = () => {
    state.ready = true;
    setState("ready");
  };
  if (info.bridge !== "panel" && !lazy) {
    // A lesson is ready once the answers its link carries are re-applied; other pages at once.
    if (lesson) whenBokeh((d) => lessonAnswers(d).then(ready));
    else ready();
    return;
  }
  const fromFile = () => {
    fail("file", "This page was opened from a file. Browsers do not run web workers or load WebAssembly from file:// " +
      "pages: serve the folder over HTTP (python -m http.server) and open it from there.");
  };
  if (lazy) {
    // ready once the link's answers are re-applied (below, when Bokeh's document exists)
  } else if (window.location.protocol === "file:") {
    fromFile();
    return;
  } else {
    document.body.prepend(bar);
  }

  function whenBokeh(then) {
    const tick = () => {
      const docs = window.Bokeh && window.Bokeh.documents;
      if (docs && docs.length) then(docs[0]);
      else setTimeout(tick, 20);
    };
    tick();
  }

  // ---- BokehJS's size watch -----------------------------------------------------------------------
  // BokehJS watches the size of every layout, pane and widget, and each layout also the sizes of its
  // children; any change lays the whole page out again, every chart measured anew (its axes and
  // labels). A notice that appears, or numbers that wrap onto one more line, cost 5-9 ms of a
  // move's frame on the phases panel here (docs/benchmarks/2026-12-01-site.md, session 8). Panel lays these
  // pages out with CSS, so only a chart has to tell BokehJS its size, and each chart keeps its own
  // watch: a chart whose size changes (the window resized, a phone turned) still lays the page
  // out. The others stop watching once the page is first laid out.
  function watchChartsOnly(d) {
    const index = window.Bokeh.index;
    if (!index || typeof index.query !== "function") return;
    const { LayoutDOM: Layout } = window.Bokeh.require("models/layouts/layout_dom");
    const { Plot } = window.Bokeh.require("models/plots/plot");
    const quiet = () => {
      for (const view of index.query((v) => v.model instanceof Layout && !(v.model instanceof Plot))) {
        if (view._resize_observer instanceof ResizeObserver) {
          view._resize_observer.disconnect();
          state.quietViews += 1;
        }
      }
    };
    if (d.is_idle) quiet();
    else d.idle.connect(quiet);
  }

  // ---- a lesson's answers -------------------------------------------------------------------------
  // The server's lesson re-applies the answers its link carries (?a1-llama=1: step key, choice
  // index) and shows the recap once every step is answered. Here each choice button is named
  // answer:<key>:<index> (app/site/) and carries the script that locks the step, explains
  // the pick, shows the reveal and writes the pick into the address bar; a link's answer runs that
  // script. A value that names no choice is ignored, as on the server. A numeric step's estimate
  // (?a1-bytes=150000) runs its button's script with the value.
  // ?step=<key> shows that step alone (its question, choices and reveal; with embed=1, for an
  // iframe), as the server's LessonBody does: every other part of the lesson's column is hidden.
  // A key that names no step shows the whole lesson. Returns whether one step is shown alone.
  function onlyStep(d) {
    const step = params.has("step") ? d.get_model_by_name("step:" + params.get("step")) : null;
    const body = d.get_model_by_name("lesson:body");
    if (!step || !body) return false;
    for (const part of body.children) part.visible = part === step;
    return true;
  }

  function lessonAnswers(d) {
    const steps = new Map(); // step key -> its choice buttons
    for (const model of d.all_models) {
      const m = /^answer:(.+):\d+$/.exec(model.name || "");
      if (m) steps.set(m[1], (steps.get(m[1]) || []).concat([model]));
    }
    if (!steps.size) return Promise.resolve();
    const alone = onlyStep(d);
    const recap = d.get_model_by_name("lesson:recap");
    const showRecap = () => {
      if (alone || !recap || recap.visible) return;
      if ([...steps.values()].every((buttons) => buttons.some((b) => b.disabled))) recap.visible = true;
    };
    for (const buttons of steps.values()) for (const b of buttons) b.connect(b.properties.disabled.change, showRecap);
    // A numeric step's one button is tagged kv-estimate (lessons/render.py, EstimateView): a link's value
    // (?a1-bytes=150000) is the estimate, handed to the button's script as its data, which checks it as a
    // typed one (a value it refuses leaves the step unanswered, as on the server).
    const chosen = [];
    for (const [key, value] of params) {
      const estimate = (steps.get(key) || []).find((b) => (b.tags || []).includes("kv-estimate"));
      const button = estimate || (steps.has(key) && /^\d+$/.test(value) ? d.get_model_by_name("answer:" + key + ":" + Number(value)) : null);
      if (button) chosen.push([button, estimate ? { estimate: value } : {}]);
    }
    const click = async ([button, data]) => {
      const callbacks = button.js_event_callbacks;
      for (const cb of (callbacks instanceof Map ? callbacks.get("button_click") : callbacks.button_click) || []) {
        await cb.execute(button, data);
      }
    };
    return chosen.reduce((done, chosen) => done.then(() => click(chosen)), Promise.resolve())
      .catch((e) => console.error("kvlab bridge: a lesson answer could not be re-applied: " + String((e && e.message) || e)))
      .then(showRecap);
  }

  // ---- the live bridge --------------------------------------------------------------------------

  let doc = null;
  let worker = null;
  let applying = false;
  let inflight = null;
  const pending = new Map();
  let nextId = 1;

  // Each patch names its models; BokehJS looks a name up by walking every model of the document,
  // and the static site's documents never gain or lose a model, so each name is looked up once.
  const byName = new Map();
  function modelNamed(name) {
    let model = byName.get(name);
    if (model === undefined) {
      model = doc.get_model_by_name(name);
      if (model) byName.set(name, model);
    }
    return model;
  }

  // A patch is set in two steps. What a move is shown in first (a panel's reply names it: the
  // widgets, the notices and the page's numbers; without a list, every page element: HTML panes
  // and widgets) is set at once. The rest (what the charts draw: data sources, ranges, spans; on
  // a panel also its other panes: chart titles, legends, formula, engine log, chart summaries, which
  // come in the worker's next message, whose list is empty) is set in a task after the browser
  // has rendered the frame that shows those numbers. BokehJS repaints
  // a chart whole when any of its data changes (axes measured again, every renderer drawn), 3-10 ms
  // a chart in Chromium here; set in one step, every chart of the page was repainted before the
  // frame with the new numbers could be drawn, and each pane's new text is styled, laid out and
  // painted in the frame after it is set (docs/benchmarks/2026-12-01-site.md, sessions 4 and 5). The
  // rest follows one frame later. A newer patch's values replace any not yet set, so every model
  // ends at the latest state; `nextPatch()` resolves once a patch's second part is set too.
  let LayoutDOM = null;
  let charts = null; // Map: model -> props waiting for the next frame
  const chartsDone = [];
  const channel = new MessageChannel();
  channel.port1.onmessage = setCharts;

  function setModel(model, props) {
    const values = {};
    for (const [k, v] of Object.entries(props)) values[k] = v === undefined ? null : v;
    applying = true;
    try { model.setv(values); } finally { applying = false; }
  }

  // `whole`: every model at once (the worker's first patch, which the page's start waits for).
  // `first`: the names to set at once, when the reply lists them.
  function apply(patch, whole, first) {
    LayoutDOM = LayoutDOM || window.Bokeh.require("models/layouts/layout_dom").LayoutDOM;
    const now = first ? new Set(first) : null;
    for (const [name, props] of Object.entries(patch || {})) {
      const model = modelNamed(name);
      if (!model) { state.missing.push(name); console.error("kvlab bridge: no model named " + name); continue; }
      const waiting = charts && charts.get(model);
      if (whole || (now ? now.has(name) : model instanceof LayoutDOM)) {
        if (waiting) for (const key of Object.keys(props)) delete waiting[key]; // older values must not follow
        setModel(model, props);
        continue;
      }
      if (charts === null) charts = new Map();
      charts.set(model, waiting ? Object.assign(waiting, props) : Object.assign({}, props));
    }
  }

  // For benchmarks (benchmarks/site_load.py): when the last reply to a change set the page's
  // elements (`appliedAt`), and when the frame that drew them began (`frameAt`) and was rendered
  // (`shownAt`).
  let marking = false;

  // Runs `then` after the next frame, once the charts of every patch applied so far are set.
  function afterCharts(then) {
    if (!chartsDone.length) requestAnimationFrame((frameAt) => { if (marking) state.frameAt = frameAt; channel.port2.postMessage(0); });
    chartsDone.push(then);
  }

  function setCharts() {
    if (marking) { state.shownAt = performance.now(); marking = false; }
    const waiting = charts;
    charts = null;
    for (const [model, props] of waiting || []) setModel(model, props);
    for (const then of chartsDone.splice(0)) then();
  }

  // The address bar and the nav's links follow the state through the nav (app/shell/share.py, AddressBar),
  // which writes them once the moves pause, or at once on a click or a key that may read them
  // (the served app's rule: one place for both). The bridge hands it every reply's query: setting
  // an equal one changes nothing. Writing on every move took a fifth of a slider move's main-thread
  // time in Chromium (docs/benchmarks/2026-12-01-site.md, sessions 3 and 4), and Chromium ignores history updates beyond 200 in 10 s.
  state.addressPending = () => document.body.dataset.kvAddressPending === "1";

  function setQuery(query) {
    if (query === undefined || query === null) return; // a lesson keeps its own link (the answers)
    const nav = modelNamed("nav");
    if (nav && nav.data) nav.data.query = query;
  }

  let started = false;
  let workerReady = false;

  const queued = []; // clicks and uploads made before the worker was ready
  function later(message) {
    if (workerReady) worker.postMessage(message);
    else { queued.push(message); if (lazy && !started) start(); }
  }

  function pump() {
    if (lazy && !started) { start(); return; }
    if (!workerReady || inflight || !pending.size) return;
    const [name, value] = pending.entries().next().value;
    pending.delete(name);
    inflight = { id: nextId++, t0: performance.now() };
    worker.postMessage({ type: "change", id: inflight.id, name, value });
  }

  // A reply that leaves the worker with nothing more to send completes a patch: a panel's change
  // is answered in two messages when it needs a new curve (the numbers, then the curve views), the
  // lab's in one per slice of its run. `patches` counts completed ones; `nextPatch()` waits for one.
  function settled(busy) {
    if (!busy) {
      state.patches += 1;
      for (const resolve of waiters.splice(0)) resolve(state.patches);
    }
    setBusy(Boolean(busy));
  }

  // Every reply that leaves the worker idle counts as one finished run (a short one finishes in
  // the change's own reply; a longer one in its last tick).
  function setBusy(busy) {
    state.busy = busy;
    const flag = busy ? "1" : "0";
    if (document.body.dataset.kvlabBusy !== flag) document.body.dataset.kvlabBusy = flag;
    if (!busy) {
      state.runs += 1;
      for (const resolve of idleWaiters.splice(0)) resolve(state.runs);
    }
  }

  function watch() {
    for (const model of doc.all_models) {
      const name = model.name;
      if (!name || !/^(lv\d+:)?w\./.test(name)) continue; // w.<setting>, or lv<i>:w.<setting> in a lesson's live view
      if (typeof model.on_click === "function" && !("value" in model.properties) && !("active" in model.properties)) {
        // A button (the lab's Cancel and "Run the sweep"): one click is one call.
        model.on_click(() => later({ type: "click", id: nextId++, name }));
        continue;
      }
      if ("filename" in model.properties && "mime_type" in model.properties) {
        // A file box (the lab's trace upload): Bokeh holds the chosen file as base64 text.
        model.connect(model.properties.value.change, () => {
          const value = model.value;
          if (typeof value !== "string" || !value) return;
          later({ type: "upload", id: nextId++, name, filename: String(model.filename || "trace"), value });
        });
        continue;
      }
      // Inputs, sliders and selects hold `value`; button groups and checkboxes hold `active`.
      const prop = "value" in model.properties ? "value" : "active";
      if (!(prop in model.properties)) continue;
      model.connect(model.properties[prop].change, () => {
        if (applying) return;
        pending.delete(name);
        pending.set(name, model[prop]);
        if (!workerReady && !lazy) label.textContent = HELD;
        pump();
      });
    }
  }

  const early = []; // replies that came before Bokeh's document existed (the worker starts first)
  function onMessage(event) {
    const m = event.data || {};
    if (!doc && m.type !== "progress" && m.type !== "error") { early.push(event); return; }
    if (m.type === "progress") {
      meter.value = m.step - 1;
      const step = "step " + m.step + " of " + m.of + " (" + m.label + ")";
      label.textContent = pending.size ? HELD.replace("\u2026", ": " + step + ".") :
        "Showing the default state. Starting the simulator in your browser: " + step + "\u2026";
    } else if (m.type === "ready") {
      // A lesson's views already show their starting state, and a move is waiting. On a panel, a
      // control moved while Python started keeps the student's value: the worker's first patch
      // (the state the page opened with) leaves it alone, and pump() sends the move next.
      if (!lazy) apply(Object.fromEntries(Object.entries(m.patch || {}).filter(([name]) => !pending.has(name))), true);
      setQuery(m.query);
      bar.remove();
      state.ready = true;
      workerReady = true;
      state.timings = Object.assign({ page_ms: performance.now() - startedAt }, m.timings);
      setBusy(Boolean(m.busy));
      setState("ready");
      for (const message of queued.splice(0)) worker.postMessage(message);
      pump();
      if (!lazy) worker.postMessage({ type: "warm" }); // kvlab-worker.mjs: warm up while the student reads
    } else if (m.type === "patch") {
      apply(m.patch, false, m.first);
      state.appliedAt = performance.now();
      marking = true;
      setQuery(m.query);
      if (m.error) console.warn("kvlab bridge: " + m.error);
      if (inflight && m.id === inflight.id) {
        state.latencies.push(performance.now() - inflight.t0);
        inflight = null;
      }
      afterCharts(() => settled(m.busy));
      pump();
    } else if (m.type === "tick") {
      apply(m.patch, false, m.first);
      setQuery(m.query);
      afterCharts(() => {
        state.ticks += 1;
        settled(m.busy);
      });
    } else if (m.type === "warming") {
      state.warmUpStarts = m.starts;
    } else if (m.type === "warmed") {
      state.warmed = { steps: m.steps, starts: m.starts, python_ms: m.python_ms, wall_ms: m.wall_ms };
    } else if (m.type === "error") {
      fail(m.stage, m.msg);
    }
  }

  function start() {
    started = true;
    if (window.location.protocol === "file:") { fromFile(); return; }
    document.body.prepend(bar);
    const onError = (e) => fail("worker", e.message || "kvlab-worker.mjs could not start");
    // kvlab-boot.js (in the page's <head>) started a live panel's worker already; a lesson's starts now.
    const early = window.kvlabWorker ? window.kvlabWorker.adopt() : null;
    try {
      if (!window.kvlabWorker) throw new Error("kvlab-boot.js did not load");
      worker = early ? early.worker : window.kvlabWorker.start(openedWith, info.live);
    } catch (e) {
      fail("worker", String(e.message || e));
      return;
    }
    worker.onmessage = onMessage;
    worker.onerror = onError;
    for (const e of early ? early.events : []) (e.type === "error" ? onError : onMessage)(e);
  }

  // A live page starts its worker now, as BokehJS begins to lay the page out, so Pyodide's start-up
  // overlaps that work instead of following it; what the worker says before the document exists
  // waits for it. A lesson starts its worker at the first move.
  if (!lazy) start();
  whenBokeh((d) => {
    doc = d;
    watchChartsOnly(d);
    // Every control answers from the first paint: a move made before Python is ready waits in
    // `pending` (the last value of each control wins) and is sent the moment the worker is ready.
    watch();
    if (lazy) lessonAnswers(d).then(ready);
    else for (const event of early.splice(0)) onMessage(event);
  });
})();
