"""The built site in real headless Chromium, served from 127.0.0.1 with every other host blocked.

One build and one browser for the whole module (CI has two cores): `_visit_site` drives every
check in one Playwright session and returns plain data the tests assert on. For every page: it
boots with no console error and no request leaving 127.0.0.1; the live panels become interactive,
and after each control is moved the Bokeh models hold exactly what CPython's view layer (over
CPython's `sim.evaluate`) gives for that state. Themes, copy-embed and an embed from a second
local origin that resizes its iframe are checked too.
"""

from __future__ import annotations

import base64
import gzip
import html
import http.server
import json
import time
from pathlib import Path
from urllib.parse import unquote

import pytest
from kvlab.app.site.compress import original_files
from kvlab.app.site.discover import DEFAULT_PAGE_GLOBS, discover_pages
from kvlab.app.viewlayer.lab_page import LabPage
from kvlab.app.viewlayer.lab_settings import lab_config, lab_defaults
from kvlab.app.viewlayer.lesson_page import LessonPage
from kvlab.app.viewlayer.pages import PanelPage
from kvlab.sim import Scenario, evaluate
from kvlab.sim.engine import parse_trace, simulate

from devtools import pyodide as harness
from tests.browser.axe import AXE_JS, LESSON_READY, READY, describe, run_axe
from tests.browser.support import DEEP_ACTIVE, DEEP_ALL, H1_TEXTS_JS, faint_controls, h1_texts, host_page

pytestmark = [pytest.mark.browser, pytest.mark.slow]

BOOT_TIMEOUT_MS = 180_000  # Pyodide's start is CPU-bound: minutes on a loaded two-core machine
# (page, widget model name, new property value) in order; each is one move a student makes.
MOVES = {
    "admission": [("w.prompt_tokens", 15.0), ("w.kv_dtype", 2), ("w.gpu", "a100-80"), ("w.concurrency-exact", 64),
                  ("w.tp", 1), ("w.engine", 1), ("w.force_mha", True), ("w.gpu_memory_utilization", 0.8),
                  ("w.allocation", 1), ("w.model", "qwen3-32b"), ("w.output_tokens", 10.0), ("w.weight_dtype", "fp8"),
                  ("w.profile", "h100-published"), ("w.block_size_tokens", 32), ("w.max_num_seqs", 16)],
    "phases": [("w.prompt_tokens", 7.0), ("w.concurrency", 8.0), ("w.gpu", "h200"), ("w.model", "qwen3-14b"),
               ("w.engine", 2), ("w.mem_fraction_static", 0.8), ("w.kv_dtype", 2), ("w.tp", 2), ("w.max_model_len", 8192)],
}
PANEL_PAGES = ("admission", "phases")
LESSON = "lesson_a1"  # its first step has "try this" links and a live view
LESSON_MOVE = ("lv0:w.kv_dtype", 2)  # the first live view's KV cache precision: fp8
LAB = "serving_lab"
# axe-core on representative pages of the built site, in both themes (every page in both themes is
# checked on the served app by tests/browser/test_a11y.py; this checks the site's own shell too).
AXE_PAGES = ("index", "admission", "phases", LAB, LESSON)
LAB_MOVE = ("w.lab-seed", 2)  # a new 600-request run (and its 600-request comparison) of the default workload
RESULT_FILE = Path(__file__).parents[1] / "engine" / "data" / "vllm_append_result_l40s.jsonl"  # a real --save-result file
SECOND_RUN = "Run 2: 900 requests, 30 per second"  # its second run, as the lab's chooser lists it
TRACE_CSV = "arrival_s,prompt_tokens,output_tokens\n" + "".join(f"{i * 0.2:.1f},{500 + i},{20 + i}\n" for i in range(40))
READ_MODELS_JS = """(wanted) => { const d = Bokeh.documents[0]; const out = {};
    for (const [name, props] of Object.entries(wanted)) { const m = d.get_model_by_name(name);
      if (!m) continue; const p = {};
      for (const k of props) { let v = m[k];
        if (k === 'data') { v = {}; for (const [c, a] of Object.entries(m.data)) v[c] = Array.from(a); }
        p[k] = v; }
      out[name] = p; }
    return JSON.stringify(out); }"""


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


NAV_HREFS_JS = "() => {" + DEEP_ALL + " return deepAll('nav.kv-nav a').map((a) => a.getAttribute('href')); }"


def _looks(page) -> dict:
    """What a page shows its reader beyond axe's checks: its theme, where its nav links go, any
    control whose outline is below 3:1 (tests/browser/support.py, faint_controls), and its <h1>s."""
    return {"theme": page.evaluate("document.documentElement.dataset.bsTheme || 'light'"),
            "nav": page.evaluate(NAV_HREFS_JS), "faint": faint_controls(page), "h1": h1_texts(page)}


def _lesson_answer_links() -> tuple[list, list[dict[str, int]]]:
    """Lesson A1's predictions, and two links' answers as the server writes them (?<step key>=<choice>, or
    the estimate of a numeric step): every step answered (the first one wrongly), then the first step
    answered rightly and the last one with a value it does not take (ignored, as on the server)."""
    from kvlab.lessons import course

    steps = [s.prediction for s in course.lesson("A1").steps]
    every = {p.key: _estimate(p) if p.numeric else next(i for i, c in enumerate(p.choices) if (c.label != p.answer) == (n == 0))
             for n, p in enumerate(steps)}
    # The last step is A1's estimate: 0 is refused there, as on the server, and leaves it unanswered.
    partial = {steps[0].key: next(i for i, c in enumerate(steps[0].choices) if c.label == steps[0].answer),
               steps[-1].key: 0 if steps[-1].numeric else 99}
    return steps, [every, partial]


def _estimate(p) -> str:
    """An estimate of a numeric step as a link writes it (JavaScript's String(number)): three times sim's figure."""
    return f"{p.figure * 3:.15g}"


def _read_lesson_steps(page) -> dict:
    steps = page.locator(".kv-predict")
    return {"disabled": [[b.is_disabled() for b in steps.nth(i).locator("button").all()] for i in range(steps.count())],
            "why": [steps.nth(i).locator(".kv-why").first.inner_text() if steps.nth(i).locator(".kv-why").first.is_visible()
                    else None for i in range(steps.count())],
            "revealed": [r.is_visible() for r in page.locator(".kv-reveal").all()],
            "recap": page.locator(".kv-recap").first.is_visible(), "url": page.url}


def _drive_estimate(open_page) -> dict:
    """Lesson A1's estimate in the built site: "abc" and Enter (refused), then three times sim's figure and the
    button; what the step shows after each, and after a reload of the link it wrote."""
    from kvlab.lessons import course

    steps = [s.prediction for s in course.lesson("A1").steps]
    p = steps[-1]
    # The estimate's question shows once the step before it is answered: the link answers the others.
    earlier = "&".join(f"{q.key}=0" for q in steps[:-1])
    page, errors, _ = open_page(f"{LESSON}.html?{earlier}")
    step = page.locator(".kv-predict").last
    step.get_by_role("textbox").wait_for(timeout=BOOT_TIMEOUT_MS)
    box = step.get_by_role("textbox")
    box.fill("abc")
    box.press("Enter")
    step.locator(".kv-refused").first.wait_for(timeout=10_000)
    out = {"refused": step.locator(".kv-refused").first.inner_text(), "kept": box.input_value(),
           "revealed_refused": page.locator(".kv-reveal").last.is_visible()}
    box.fill(_estimate(p))
    step.get_by_role("button", name="Check my estimate").click()
    step.locator(".kv-why").first.wait_for(timeout=10_000)
    out.update(why=step.locator(".kv-why").first.inner_text(), revealed=page.locator(".kv-reveal").last.is_visible(),
               peek=page.locator(".kv-reveal").last.locator(".kv-peek").first.inner_text(), url=page.url)
    page.reload()
    page.locator(".kv-predict").last.locator(".kv-why").first.wait_for(timeout=BOOT_TIMEOUT_MS)
    out.update(why_reloaded=page.locator(".kv-predict").last.locator(".kv-why").first.inner_text(),
               box_reloaded=page.locator(".kv-predict").last.get_by_role("textbox").input_value(), errors=errors)
    page.close()
    return out


def _cpython_lab() -> list[tuple[LabPage, dict]]:
    """CPython's LabPage through the same three states the browser test visits."""
    page = LabPage()
    page.start()
    page.finish()
    states = [page.models()]
    page.change(*LAB_MOVE)
    page.finish()
    states.append(page.models())
    page.upload("trace.csv", base64.b64encode(TRACE_CSV.encode()).decode())
    page.finish()
    states.append(page.models())
    page.upload(RESULT_FILE.name, base64.b64encode(RESULT_FILE.read_bytes()).decode())
    page.finish()
    states.append(page.models())
    page.change("w.lab-bench-run", SECOND_RUN)
    page.finish()
    states.append(page.models())
    return states


def _cpython_lesson(specs: list[dict]) -> dict:
    """CPython's LessonPage for the page's live views, after LESSON_MOVE."""
    lesson = LessonPage(specs)
    lesson.start()
    lesson.change(*LESSON_MOVE)
    return lesson.models()


def _drive_lab(page, site: Path) -> dict:
    """The serving lab in the built site: its opening run, one setting changed (timed, with the progress
    bar watched), and a trace uploaded through the file box; the lab's models read back after each."""
    wanted = {n: sorted(props) for n, props in _cpython_lab()[0].items()}
    out: dict = {}
    page.wait_for_function("!window.kvlabBridge.busy", timeout=BOOT_TIMEOUT_MS)
    # Open every card of the sidebar: a collapsed card hides its widgets (model.visible false) and
    # shows them as the view layer says once opened; read the widgets as a student sees them opened.
    page.evaluate("for (const m of Bokeh.documents[0].all_models) if ('collapsed' in m.properties) m.collapsed = false;")
    out["lab_models"] = [json.loads(page.evaluate(READ_MODELS_JS, wanted))]
    run = page.evaluate("""async ([name, value]) => {
        const b = window.kvlabBridge, d = Bokeh.documents[0], bar = d.get_model_by_name('w.lab-progress');
        const seen = []; bar.connect(bar.properties.value.change, () => seen.push(bar.value));
        const ticks = b.ticks, runs = b.runs, t0 = performance.now();
        d.get_model_by_name(name).value = value;
        await new Promise((r) => { const w = () => (b.runs > runs ? r() : setTimeout(w, 5)); w(); });
        return { ms: performance.now() - t0, ticks: b.ticks - ticks, progress: seen }; }""", list(LAB_MOVE))
    out["lab_run"] = run
    out["lab_models"].append(json.loads(page.evaluate(READ_MODELS_JS, wanted)))
    trace = site.parent / "trace.csv"
    trace.write_text(TRACE_CSV, encoding="utf-8")
    runs = page.evaluate("window.kvlabBridge.runs")
    page.locator(".kv-w-lab-trace input[type=file]").first.set_input_files(str(trace))
    page.wait_for_function(f"window.kvlabBridge.runs > {runs} && !window.kvlabBridge.busy", timeout=60_000)
    out["lab_models"].append(json.loads(page.evaluate(READ_MODELS_JS, wanted)))
    page.wait_for_function("!window.kvlabBridge.addressPending()", timeout=10_000)
    out["lab_url"] = page.url
    runs = page.evaluate("window.kvlabBridge.runs")
    page.locator(".kv-w-lab-trace input[type=file]").first.set_input_files(str(RESULT_FILE))
    page.wait_for_function(f"window.kvlabBridge.runs > {runs} && !window.kvlabBridge.busy", timeout=60_000)
    out["lab_models"].append(json.loads(page.evaluate(READ_MODELS_JS, wanted)))
    runs = page.evaluate("window.kvlabBridge.runs")
    page.locator(".kv-w-lab-bench-run select").first.select_option(label=SECOND_RUN)  # the file's second run
    page.wait_for_function(f"window.kvlabBridge.runs > {runs} && !window.kvlabBridge.busy", timeout=60_000)
    out["lab_models"].append(json.loads(page.evaluate(READ_MODELS_JS, wanted)))
    return out


def _panel_moves(page, name: str, moves: list) -> list[dict]:
    """Each move made in the page, and the models read back after its patch: exactly the properties
    CPython's view layer sets on each named model."""
    out = []
    wanted = {n: sorted(props) for n, props in PanelPage(name).models().items()}
    for widget, value in moves:
        before = page.evaluate("window.kvlabBridge.patches")
        page.evaluate("([n, v]) => { const m = Bokeh.documents[0].get_model_by_name(n);"
                      " m[('value' in m.properties) ? 'value' : 'active'] = v; }", [widget, value])
        page.wait_for_function(f"window.kvlabBridge.patches > {before}", timeout=20_000)
        models = page.evaluate(READ_MODELS_JS, wanted)
        # The address bar follows once the moves pause (static/kvlab-bridge.js).
        page.wait_for_function("!window.kvlabBridge.addressPending()", timeout=10_000)
        out.append({"widget": widget, "value": value, "models": json.loads(models), "url": page.url,
                    "max_sequences": page.locator('[data-kv="max_sequences"]').first.inner_text() if name == "admission" else None})
    return out


# The admission panel's collapsed card: the build defers its contents until it is first opened
# (app/site/, defer_collapsed_cards). Opened from the keyboard, a field in it is typed into.
CARD = ("Engine limits and price", "max_num_seqs", 24)
DEEPEST_FOCUS_JS = f"""() => {{ {DEEP_ACTIVE} const a = deepActive();
    return a ? {{ tag: a.tagName.toLowerCase(), cls: a.className }} : null; }}"""


def _open_card_from_the_keyboard(page) -> dict:
    title, setting, value = CARD
    page.locator("button.card-header", has_text=title).first.focus()
    page.keyboard.press("Enter")
    field = page.locator(f".kv-w-{setting} input").first
    field.wait_for(state="visible", timeout=10_000)
    # The title is drawn in the header's own shadow root, not the button's text: of the panel's two
    # cards, "Engine limits and price" comes first, "Speculative decoding" second.
    out = {"focused": page.evaluate(DEEPEST_FOCUS_JS), "cards": page.locator("button.card-header").count()}
    before = page.evaluate("window.kvlabBridge.patches")
    field.fill(str(value))
    field.press("Enter")
    page.wait_for_function(f"window.kvlabBridge.patches > {before}", timeout=20_000)
    wanted = {n: sorted(props) for n, props in PanelPage("admission").models().items()}
    out["models"] = json.loads(page.evaluate(READ_MODELS_JS, wanted))
    return out


def _quiet(page, still_ms: int = 1_000, timeout_ms: int = 30_000) -> None:
    """Wait until no patch has arrived for `still_ms`: a drag is several moves, the first answered while
    the last waits in the bridge (the last value wins), so the first patch is not the last one."""
    deadline = time.monotonic() + timeout_ms / 1000
    seen = page.evaluate("window.kvlabBridge.patches")
    while True:
        page.wait_for_timeout(still_ms)
        now = page.evaluate("window.kvlabBridge.patches")
        if now == seen and not page.evaluate("window.kvlabBridge.busy"):
            return
        assert time.monotonic() < deadline, f"patches still arriving after {timeout_ms} ms"
        seen = now


def _move_the_handles(page) -> list[dict]:
    """The HBM bar's utilisation edge moved with the keyboard, then the fit curve's prompt dragged with the
    mouse (app/templates/drag.js): each sets its slider's model, which the bridge sends to Python as a move
    of the slider itself. Each: the slider's new value and the models read back after its patch."""
    from kvlab.app.viewlayer.fit_curve import PROMPT_LABEL
    from kvlab.app.viewlayer.hbm_bar import EDGE_LABEL

    wanted = {n: sorted(props) for n, props in PanelPage("admission").models().items()}
    out = []
    for label, move in ((EDGE_LABEL, "key"), (PROMPT_LABEL, "drag")):
        handle = page.get_by_role("slider", name=label)
        before = page.evaluate("window.kvlabBridge.patches")
        if move == "key":
            handle.focus()
            page.keyboard.press("ArrowRight")  # 0.01 more of the card for the engine (the edge moves left)
        else:
            box = handle.bounding_box()
            x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] - 12
            page.mouse.move(x, y)
            page.mouse.down()
            page.mouse.move(x + 45, y, steps=3)
            page.mouse.up()
        page.wait_for_function(f"window.kvlabBridge.patches > {before}", timeout=20_000)
        _quiet(page)
        models = json.loads(page.evaluate(READ_MODELS_JS, wanted))
        name = "w.gpu_memory_utilization" if move == "key" else "w.prompt_tokens"
        out.append({"widget": name, "value": float(handle.get_attribute("aria-valuenow")), "models": models,
                    "max_sequences": page.locator('[data-kv="max_sequences"]').first.inner_text()})
    return out


# A panel's reply names what a move is shown in first (PanelPage.change's `first`: its numbers and
# widgets); the bridge sets those at once and the other panes one frame later. Read in the page:
# the animation frame in which each pane's text was set, for one move made after the card's.
WARMED_PAGE = "phases"
ORDER_MOVE = ("w.prompt_tokens", 11.0)
ORDER_PANES = ("admission_numbers.pane", "hbm_bar.legend", "kv_formula.pane", "engine_log.pane")
SET_ORDER_JS = """async ([[widget, value], names]) => {
    const d = Bokeh.documents[0], b = window.kvlabBridge, seen = {};
    let frame = 0, counting = true;
    const count = () => { frame += 1; if (counting) requestAnimationFrame(count); };
    requestAnimationFrame(count);
    for (const n of names) {
      const m = d.get_model_by_name(n);
      m.connect(m.properties.text.change, () => { if (!(n in seen)) seen[n] = frame; });
    }
    await new Promise(requestAnimationFrame);
    const done = b.nextPatch(); d.get_model_by_name(widget).value = value; await done;
    counting = false;
    return seen; }"""


# BokehJS lays the whole page out again (every chart measured) when an element it watches changes
# size; on the static site only the charts watch their own (static/kvlab-bridge.js, watchChartsOnly).
# Read in the page: the notices pane's height before and after a move that makes a notice appear,
# and the views told of a new size by then (two frames later); then the same once the window is as
# narrow as a phone, with each chart's width as BokehJS holds it and as the page draws it.
NOTICE_MOVE = ("w.prompt_tokens", 14.0)  # 16,384 tokens: longer than the 8,192 of MOVES' last state
SIZE_WATCH_JS = """async ([widget, value]) => {
    const d = Bokeh.documents[0], b = window.kvlabBridge, LayoutDOM = Bokeh.require("models/layouts/layout_dom").LayoutDOM;
    window.kvResized = [];
    for (const v of Bokeh.index.query((v) => v.model instanceof LayoutDOM)) {
      const own = v.after_resize.bind(v);
      v.after_resize = () => { window.kvResized.push(v.model.type); return own(); };
    }
    const frames = async () => { await new Promise(requestAnimationFrame); await new Promise(requestAnimationFrame); };
    const pane = Bokeh.index.query_one((v) => v.model.name === "notices.pane").el;
    const out = { quiet_views: b.quietViews, before_px: pane.getBoundingClientRect().height, charts_wide: CHARTS() };
    const done = b.nextPatch(); d.get_model_by_name(widget).value = value; await done; await frames();
    Object.assign(out, { after_px: pane.getBoundingClientRect().height, resized_after_move: window.kvResized.splice(0) });
    return out; }"""
AFTER_NARROWING_JS = """async () => {
    for (let i = 0; i < 4; i++) await new Promise(requestAnimationFrame);
    return { charts_narrow: CHARTS(), resized_after_narrowing: window.kvResized.splice(0) }; }"""
# each chart: [its width as BokehJS holds it, as the page draws it]
CHARTS_JS = '[...Bokeh.index.query((v) => v.model.type === "Figure")].map((v) => [v.bbox.width, v.el.getBoundingClientRect().width])'
SIZE_WATCH_JS, AFTER_NARROWING_JS = (js.replace("CHARTS()", CHARTS_JS) for js in (SIZE_WATCH_JS, AFTER_NARROWING_JS))


def _size_watch(page) -> dict:
    out = page.evaluate(SIZE_WATCH_JS, list(NOTICE_MOVE))
    page.set_viewport_size({"width": 390, "height": 844})
    out.update(page.evaluate(AFTER_NARROWING_JS))
    page.set_viewport_size({"width": 1300, "height": 900})
    return out


# The snapshot's URL answered with a 404 or with a gzip file that is no Pyodide snapshot: the page
# must start Python without it (a console warning, no error) and answer as CPython does.
SNAPSHOT_FAULTS = {"missing": {"status": 404, "body": "not found"},
                   "corrupt": {"status": 200, "body": gzip.compress(b"not a Pyodide memory snapshot " * 4096, mtime=0),
                               "content_type": "application/octet-stream"}}
FALLBACK_PAGE = "admission"


def _fault_route(snapshot_url: str, answer: dict, outside: list):
    """A route handler (one argument: Playwright passes a second one, the request, to a handler that takes two)."""
    def route(r):
        url = r.request.url
        if url.split("?")[0] == snapshot_url:
            r.fulfill(**answer)
        elif url.startswith(("http://127.0.0.1", "data:", "blob:")):
            r.continue_()
        else:
            outside.append(url)
            r.abort()
    return route


def _snapshot_fallbacks(browser, base: str, snapshot_file: str, outside: list, requested: set) -> dict:
    """The fallback page opened once per fault, in its own context (the faults are the only HTTP
    errors there), both at once (each start is one core's work); each page makes the first
    admission move. `requested` gets the paths the pages requested."""
    out = {}
    context = browser.new_context(viewport={"width": 1300, "height": 900})
    context.on("request", lambda r: requested.add(unquote(r.url.removeprefix(base).split("?")[0])))
    try:
        opened = {}
        for fault, answer in SNAPSHOT_FAULTS.items():
            page = context.new_page()
            page.route("**/*", _fault_route(base + snapshot_file, answer, outside))
            errors: list[str] = []
            warnings: list[str] = []
            page.on("console", lambda m, errors=errors, warnings=warnings: (errors if m.type == "error" else warnings).append(m.text)
                    if m.type in ("error", "warning") else None)
            page.on("pageerror", lambda e, errors=errors: errors.append(str(e)))
            page.goto(f"{base}{FALLBACK_PAGE}.html")
            opened[fault] = (page, errors, warnings)
        for fault, (page, errors, warnings) in opened.items():
            page.wait_for_function("['ready', 'failed'].includes(document.body.dataset.kvlabState)", timeout=BOOT_TIMEOUT_MS)
            seen = {"state": page.evaluate("document.body.dataset.kvlabState"), "errors": errors, "warnings": warnings,
                    "timings": page.evaluate("window.kvlabBridge.timings || null")}
            if seen["state"] == "ready":
                seen["moves"] = _panel_moves(page, FALLBACK_PAGE, MOVES[FALLBACK_PAGE][:1])
            out[fault] = seen
            page.close()
    finally:
        context.close()
    return out


@harness.in_own_thread
def _visit_site(site: Path, pages: list[str], snapshot_file: str | None = None) -> dict:
    from playwright.sync_api import sync_playwright

    # "seconds": what the lab's and axe's checks take inside the one visit (reported, not asserted)
    out: dict = {"pages": {}, "outside": [], "bad_status": [], "axe": {}, "looks": {}, "requested": set(), "encodings": {},
                 "seconds": {"lab": 0.0, "axe": 0.0, "lesson": 0.0, "answers": 0.0, "fallback": 0.0}}
    with harness.serve_directory(site) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=harness.CHROMIUM, args=harness.CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": 1300, "height": 900})

            def route(r):
                url = r.request.url
                if url.startswith(("http://127.0.0.1", "data:", "blob:")):
                    r.continue_()
                else:
                    out["outside"].append(url)
                    r.abort()
            context.route("**/*", route)
            context.on("request", lambda r: out["requested"].add(unquote(r.url.removeprefix(base).split("?")[0])))
            context.on("response", lambda r: out["bad_status"].append(f"{r.status} {r.url}") if r.status >= 400 else None)
            # How the host sent each file (devtools/static_host.py serves the build's precompressed copies).
            context.on("response", lambda r: out["encodings"].setdefault(unquote(r.url.removeprefix(base).split("?")[0]),
                                                                        r.headers.get("content-encoding")))

            def open_page(path: str):
                page = context.new_page()
                errors: list[str] = []
                page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
                page.on("pageerror", lambda e: errors.append(str(e)))
                t0 = time.monotonic()
                page.goto(base + path)
                page.wait_for_function("['ready', 'failed'].includes(document.body.dataset.kvlabState)", timeout=BOOT_TIMEOUT_MS)
                return page, errors, time.monotonic() - t0

            for name in pages:
                page, errors, boot_s = open_page(f"{name}.html")
                seen = {"state": page.evaluate("document.body.dataset.kvlabState"), "boot_s": boot_s, "errors": errors,
                        "alert": page.evaluate("(document.querySelector('[role=alert]') || {}).textContent || ''")}
                if name == LAB and seen["state"] == "ready":
                    t_lab = time.monotonic()
                    seen.update(_drive_lab(page, site))
                    out["seconds"]["lab"] = time.monotonic() - t_lab
                if seen["state"] == "ready":
                    seen["timings"] = page.evaluate("window.kvlabBridge.timings || null")  # which start ran
                if name in PANEL_PAGES and seen["state"] == "ready":
                    if name == WARMED_PAGE:
                        # A move made while the worker warms up pauses it; left alone, it goes on to its end.
                        page.wait_for_function("window.kvlabBridge.warmUpStarts > 0", timeout=60_000)
                        seen["moves"] = _panel_moves(page, name, MOVES[name][:1])
                        page.wait_for_function("window.kvlabBridge.warmed !== null", timeout=60_000)
                        seen["warmed"] = page.evaluate("window.kvlabBridge.warmed")
                        seen["moves"] += _panel_moves(page, name, MOVES[name][1:])
                        seen["size_watch"] = _size_watch(page)
                    else:
                        seen["moves"] = _panel_moves(page, name, MOVES[name])
                    seen["latencies_ms"] = page.evaluate("window.kvlabBridge.latencies")
                    if name == "admission":
                        seen["card"] = _open_card_from_the_keyboard(page)
                        seen["order"] = page.evaluate(SET_ORDER_JS, [list(ORDER_MOVE), list(ORDER_PANES)])
                        seen["handles"] = _move_the_handles(page)
                if name in AXE_PAGES and AXE_JS.is_file():
                    t_axe = time.monotonic()
                    out["axe"][f"{name} light"] = run_axe(page)
                    out["looks"][f"{name} light"] = _looks(page)
                    out["seconds"]["axe"] += time.monotonic() - t_axe
                out["pages"][name] = seen
                page.close()

            # A lab link with settings of its own runs its own opening run: the build's copy is not fetched.
            fetched: list[str] = []  # the worker's requests come to the context (the route keeps the cache off)

            def opening_requests(r):
                if "lab-opening" in r.url:
                    fetched.append(r.url)
            context.on("request", opening_requests)
            page, errors, _ = open_page(f"{LAB}.html?seed=3")
            page.wait_for_function("window.kvlabBridge.ready && !window.kvlabBridge.busy", timeout=BOOT_TIMEOUT_MS)
            context.remove_listener("request", opening_requests)
            out["lab_link"] = {"timings": page.evaluate("window.kvlabBridge.timings"), "fetched": fetched, "errors": errors,
                               "seed": page.evaluate("Bokeh.documents[0].get_model_by_name('w.lab-seed').value")}
            page.close()
            # The shell's own keys (embed mode, the theme) are no settings: such a link still takes the build's copy.
            page, errors, _ = open_page(f"{LAB}.html?embed=1")
            page.wait_for_function("window.kvlabBridge.ready && !window.kvlabBridge.busy", timeout=BOOT_TIMEOUT_MS)
            out["lab_embed"] = {"timings": page.evaluate("window.kvlabBridge.timings"), "errors": errors}
            page.close()

            # A lesson: predict (the first choice of the first step), then the reveal, then "try this".
            page, errors, _ = open_page(f"{LESSON}.html")
            step = page.locator(".kv-predict").first
            out["lesson"] = {"reveal_before": page.locator(".kv-reveal").first.is_visible(),
                             "choice": step.locator("button").first.inner_text()}
            step.locator("button").first.click()
            page.locator(".kv-reveal").first.wait_for(state="visible", timeout=10_000)
            out["lesson"].update(why=step.locator(".kv-why").first.inner_text(),
                                 disabled=[b.is_disabled() for b in step.locator("button").all()],
                                 try_links=[a.get_attribute("href") for a in page.locator(".kv-reveal").first.locator(".kv-try a").all()])
            # The revealed live view answers its controls: the worker starts at the first move.
            specs = json.loads(page.evaluate("document.querySelector('script[data-live]').dataset.live"))
            wanted = {n: sorted(p) for n, p in _cpython_lesson(specs).items()}
            t_lesson = time.monotonic()
            page.evaluate("([n, v]) => { Bokeh.documents[0].get_model_by_name(n).active = v; }", list(LESSON_MOVE))
            page.wait_for_function("window.kvlabBridge.patches > 0", timeout=BOOT_TIMEOUT_MS)
            out["seconds"]["lesson"] = time.monotonic() - t_lesson
            out["lesson"].update(specs=specs, models=json.loads(page.evaluate(READ_MODELS_JS, wanted)), errors=errors,
                                 url=page.url, timings=page.evaluate("window.kvlabBridge.timings || null"))
            page.close()

            # A lesson link carrying answers re-applies them (the page is ready once they are).
            t_answers = time.monotonic()
            out["answers"] = []
            for answers in _lesson_answer_links()[1]:
                page, errors, _ = open_page(f"{LESSON}.html?" + "&".join(f"{k}={v}" for k, v in answers.items()))
                out["answers"].append({**_read_lesson_steps(page), "errors": errors})
                page.close()
            out["seconds"]["answers"] = time.monotonic() - t_answers

            # A numeric step (A1's last), offline: a refused estimate, then one taken, then the link reloaded.
            out["estimate"] = _drive_estimate(open_page)

            # A link with theme=dark opens the dark build of the page, live.
            page, errors, _ = open_page("phases.html?theme=dark&prompt_tokens=128")
            out["dark"] = {"url": page.url, "state": page.evaluate("document.body.dataset.kvlabState"), "errors": errors}
            # Copy embed code from a page served on 127.0.0.1: the snippet has embed=1 and the button warns.
            page.get_by_role("button", name="Copy embed code").click()
            page.wait_for_function("window.kvlabLastCopied !== undefined", timeout=10_000)
            out["embed_code"] = page.evaluate("window.kvlabLastCopied")
            out["embed_warning"] = page.evaluate("window.kvlabCopyWarning")
            t_axe = time.monotonic()
            if AXE_JS.is_file():
                out["axe"]["phases dark"] = run_axe(page)
            out["looks"]["phases dark"] = _looks(page)
            page.close()
            # The other pages' dark builds as first painted (the simulator's start does not change
            # colours), opened as the theme button and the nav open them.
            for name in (n for n in AXE_PAGES if n != "phases" and AXE_JS.is_file()):
                page = context.new_page()
                page.goto(f"{base}{name}.html?theme=dark")
                page.wait_for_selector(READY.get("/" if name == "index" else f"/{name}", LESSON_READY), timeout=60_000)
                out["axe"][f"{name} dark"] = run_axe(page)
                out["looks"][f"{name} dark"] = _looks(page)
                page.close()
            out["seconds"]["axe"] += time.monotonic() - t_axe

            # The embed, from a second local origin: header hidden, iframe resized to its content.
            host_dir = site.parent / "host"
            host_dir.mkdir(exist_ok=True)
            (host_dir / "notes.html").write_text(host_page(f"{base}admission.html?embed=1&amp;prompt_tokens=32768"),
                                                 encoding="utf-8")
            with harness.serve_directory(host_dir) as host_base:
                host = context.new_page()
                errors2: list[str] = []
                host.on("pageerror", lambda e: errors2.append(str(e)))
                host.goto(host_base + "notes.html")
                frame = host.frame_locator("#kv")
                host.wait_for_function("document.getElementById('kv').getBoundingClientRect().height > 400", timeout=BOOT_TIMEOUT_MS)
                inner = next(f for f in host.frames if f.url.startswith(base))
                out["embed"] = {"origin_host": host_base, "height": host.evaluate("document.getElementById('kv').offsetHeight"),
                                "header_box": frame.locator("#header").first.bounding_box(),
                                "header_links": frame.locator("#header a, #header button").evaluate_all(
                                    "(els) => els.filter((e) => e.getClientRects().length > 0).length"),
                                "h1": inner.evaluate(H1_TEXTS_JS), "errors": errors2}
                host.close()
            if snapshot_file:
                t_fallback = time.monotonic()
                out["fallback_requested"] = set()
                out["fallback"] = _snapshot_fallbacks(browser, base, snapshot_file, out["outside"], out["fallback_requested"])
                out["seconds"]["fallback"] = time.monotonic() - t_fallback
        finally:
            browser.close()
    return out


@pytest.fixture(scope="module")
def visit(real_site):
    site, _, _ = real_site
    info = json.loads((site / "build-info.json").read_text())
    if not info["pyodide_self_hosted"]:
        pytest.skip(harness.missing_reason("newest"))
    t0 = time.monotonic()
    out = _visit_site(site, [p.name for p in discover_pages(DEFAULT_PAGE_GLOBS)], (info["snapshot"] or {}).get("file"))
    out["seconds"]["visit"] = time.monotonic() - t0
    out["snapshot"] = info["snapshot"]
    return out


def test_no_request_leaves_127_0_0_1_and_nothing_is_missing(visit):
    assert visit["outside"] == []
    assert visit["bad_status"] == []


@pytest.mark.parametrize("page", [p.name for p in discover_pages(DEFAULT_PAGE_GLOBS)])
def test_every_page_boots_without_a_console_error(visit, page):
    seen = visit["pages"][page]
    assert seen["state"] == "ready", seen["alert"]
    assert seen["errors"] == []


def _cpython_models(page: str, moves: list) -> list[dict]:
    bridge = PanelPage(page)
    bridge.start()
    states = []
    for widget, value in moves:
        bridge.change(widget, value)
        states.append(bridge.models())
    return states


def _close(browser_value, cpython_value) -> bool:
    if isinstance(cpython_value, float) and cpython_value != cpython_value:
        return browser_value is None or browser_value != browser_value  # JSON carries NaN as null
    if isinstance(cpython_value, dict):
        return isinstance(browser_value, dict) and cpython_value.keys() <= browser_value.keys() and \
            all(_close(browser_value[k], v) for k, v in cpython_value.items())
    if isinstance(cpython_value, (list, tuple)):
        return len(browser_value) == len(cpython_value) and all(_close(b, c) for b, c in zip(browser_value, cpython_value,
                                                                                               strict=True))
    return browser_value == cpython_value


@pytest.mark.parametrize("page", PANEL_PAGES)
def test_each_control_shows_exactly_what_cpython_computes(visit, page):
    seen = visit["pages"][page]
    assert len(seen["moves"]) == len(MOVES[page])
    for move, expected in zip(seen["moves"], _cpython_models(page, MOVES[page]), strict=True):
        for name, props in expected.items():
            for prop, value in props.items():
                held = move["models"][name].get(prop)
                assert _close(held, value), f"after {move['widget']}={move['value']!r}: {name}.{prop} is {held!r}, CPython {value!r}"


def test_the_charts_handles_move_their_sliders_and_the_numbers_follow(visit):
    """The utilisation edge (keyboard) and the prompt marker (mouse) set the slider they stand for: the
    bridge answers as for a move of the slider, with what CPython computes for that state."""
    handles = visit["pages"]["admission"]["handles"]
    before = [*MOVES["admission"], (f"w.{CARD[1]}", CARD[2]), ORDER_MOVE]
    util = dict(MOVES["admission"])["w.gpu_memory_utilization"]
    assert handles[0]["widget"] == "w.gpu_memory_utilization" and handles[0]["value"] == round(util + 0.01, 2)
    assert handles[1]["widget"] == "w.prompt_tokens" and handles[1]["value"] > ORDER_MOVE[1]  # rightwards: longer
    moves = [(h["widget"], h["value"]) for h in handles]
    expected = _cpython_models("admission", [*before, *moves])[-2:]
    for handle, want in zip(handles, expected, strict=True):
        for name, props in want.items():
            for prop, value in props.items():
                held = handle["models"][name].get(prop)
                assert _close(held, value), f"after {handle['widget']}={handle['value']}: {name}.{prop} is {held!r}, CPython {value!r}"


def test_a_collapsed_card_opens_from_the_keyboard_and_its_fields_answer(visit):
    """Built when first opened, the card keeps the keyboard focus on its header, and a value typed
    into one of its fields shows what CPython computes for that state."""
    card = visit["pages"]["admission"]["card"]
    _, setting, value = CARD
    assert card["cards"] == 2 and card["focused"] == {"tag": "button", "cls": "card-header"}
    expected = _cpython_models("admission", [*MOVES["admission"], (f"w.{setting}", value)])[-1]
    assert card["models"][f"w.{setting}"]["value"] == value
    for name, props in expected.items():
        for prop, want in props.items():
            held = card["models"][name].get(prop)
            assert _close(held, want), f"after typing {setting}={value}: {name}.{prop} is {held!r}, CPython {want!r}"


def test_a_move_shows_the_numbers_first_and_the_other_panes_one_frame_later(visit):
    page = PanelPage("admission")
    page.start()
    for widget, value in [*MOVES["admission"], (f"w.{CARD[1]}", CARD[2])]:
        page.change(widget, value)
        while page.busy:
            page.tick()
    reply = page.change(*ORDER_MOVE)
    answers = [reply]
    while page.busy:  # the other views come in the next answers, none of them first
        answers.append(page.tick())
    changed = [n for n in ORDER_PANES if any(n in a["patch"] for a in answers)]
    first = [n for n in changed if n in reply["first"]]
    rest = [n for n in changed if n not in reply["first"]]
    assert first == ["admission_numbers.pane"] and rest, reply["first"]  # the move changes both kinds
    seen = visit["pages"]["admission"]["order"]
    assert sorted(seen) == sorted(changed), seen
    assert all(seen[n] > seen["admission_numbers.pane"] for n in rest), seen


def test_a_warm_up_paused_by_a_move_goes_on_to_its_end(visit):
    """A move made once the warm-up had started paused it (a second start), and it then ran to its
    end. Every move, before and after, is answered as CPython answers it (test above): the
    warm-up's copy of the page left the page's own state alone."""
    warmed = visit["pages"][WARMED_PAGE]["warmed"]
    assert warmed["starts"] >= 2, warmed
    assert warmed["steps"] >= len(PanelPage.WARM_UP) * PanelPage.WARM_UP_ROUNDS, warmed
    assert 0 < warmed["python_ms"] <= warmed["wall_ms"], warmed


def test_a_notice_that_appears_lays_no_chart_out_and_a_narrower_window_lays_them_all_out(visit):
    """The notice's pane grew, and no view was told of a new size (before, the page's layout was,
    and BokehJS laid out the whole page, every chart measured anew); narrowed to a phone's width,
    the charts were, and each holds the width the page draws it at."""
    seen = visit["pages"][WARMED_PAGE]["size_watch"]
    assert seen["quiet_views"] > 0, seen
    assert seen["after_px"] > seen["before_px"] + 20, seen  # the move made a notice appear
    assert seen["resized_after_move"] == [], seen
    assert seen["resized_after_narrowing"].count("Figure") >= 4, seen
    assert set(seen["resized_after_narrowing"]) == {"Figure"}, seen
    wide, narrow = seen["charts_wide"], seen["charts_narrow"]
    assert len(wide) == len(narrow) == 4, seen
    for (_, drawn_wide), (held, drawn) in zip(wide, narrow, strict=True):
        assert abs(held - drawn) <= 1 and drawn < drawn_wide - 50, seen


def test_admission_numbers_are_sims_and_the_link_follows(visit):
    moves = visit["pages"]["admission"]["moves"]
    assert moves[0]["max_sequences"] == f"{evaluate(Scenario(prompt_tokens=32768)).max_sequences:,}"
    assert moves[1]["max_sequences"] == f"{evaluate(Scenario(prompt_tokens=32768, kv_dtype='fp8')).max_sequences:,}"
    assert moves[1]["url"].endswith("admission.html?prompt_tokens=32768&kv_dtype=fp8")


def test_the_lab_runs_in_the_browser_and_matches_cpython_exactly(visit):
    """Each state's every lab model equals CPython's LabPage; the engine's own figures (the run's
    time series, its event count) equal `sim.engine.simulate` of that state's configuration."""
    seen = visit["pages"][LAB]
    states = _cpython_lab()
    assert len(seen["lab_models"]) == 5
    for label, held_models, expected in zip(("opening run", "after the move", "after the upload", "after the result file",
                                             "after choosing its second run"), seen["lab_models"], states, strict=True):
        for name, props in expected.items():
            for prop, value in props.items():
                held = held_models.get(name, {}).get(prop)
                assert _close(held, value), f"{label}: {name}.{prop} is {held!r}, CPython {value!r}"
    values = {**lab_defaults(), LAB_MOVE[0].removeprefix("w.lab-"): LAB_MOVE[1]}
    engine = simulate(lab_config(values))
    main = seen["lab_models"][1]["lab_timeline.main"]["data"]
    assert main["t"] == engine.series["t_s"] and main["kv"] == engine.series["kv_usage"]
    assert f"{engine.completed:,} requests simulated ({engine.events:,} events)" in seen["lab_models"][1]["lab_status.text"]["text"]
    trace_run = simulate(lab_config({**values, "arrival": "trace"}, trace=parse_trace(TRACE_CSV)))
    assert seen["lab_models"][2]["lab_timeline.main"]["data"]["t"] == trace_run.series["t_s"]
    assert "40 requests from trace.csv" in seen["lab_models"][2]["lab_notices.pane"]["text"]
    assert seen["lab_url"].endswith("serving_lab.html?arrival=trace&seed=2")
    # A vllm bench serve result file replayed in Pyodide: its measured figures beside the prediction.
    bench = html.unescape(seen["lab_models"][3]["lab_bench.pane"]["text"])  # the pane's model holds escaped HTML
    assert "Benchmark duration (s)" in bench and "<td>35.84</td>" in bench
    assert "<td>40.72</td>" in html.unescape(seen["lab_models"][4]["lab_bench.pane"]["text"])  # the second run's own


def test_a_lab_run_shows_its_progress_and_the_page_answers(visit):
    run = visit["pages"][LAB]["lab_run"]
    # The move's reply comes first, then the worker's slices: the progress bar moved and ended full.
    assert run["progress"] and run["progress"][-1] == 1000, run
    assert run["ms"] < 60_000  # a sanity bound; benchmarks/site_load.py measures (docs/benchmarks/ has the figure)


def test_representative_pages_pass_axe_in_both_themes(visit):
    if not AXE_JS.is_file():  # scripts/test installs it (npm ci in tests/browser)
        pytest.fail(f"axe-core is not installed: run `npm ci --prefix tests/browser` ({AXE_JS} missing)", pytrace=False)
    assert sorted(visit["axe"]) == sorted(f"{p} {t}" for p in AXE_PAGES for t in ("light", "dark"))
    print(f"seconds inside the visit: {visit['seconds']}")
    failures = {key: describe(found) for key, found in visit["axe"].items() if describe(found)}
    assert not failures, "\n".join(f"{key}:\n{text}" for key, text in failures.items())


def test_slider_answers_within_a_few_frames(visit):
    latencies = sorted(visit["pages"]["admission"]["latencies_ms"])
    assert latencies and latencies[len(latencies) // 2] < 1000  # a sanity bound; benchmarks/site_load.py measures


def test_each_page_keeps_its_theme_its_nav_links_and_its_controls_outlines(visit, real_site):
    """A link with theme=dark shows the dark build; every nav link leads to a file of the site,
    in the page's theme (static pages have no query of their own to give them); every control's
    outline reaches 3:1 in both themes (WCAG 1.4.11); each page has one <h1>."""
    looks = visit["looks"]
    assert sorted(looks) == sorted(f"{p} {t}" for p in AXE_PAGES for t in ("light", "dark"))
    for key, seen in looks.items():
        theme = key.rpartition(" ")[2]
        assert seen["theme"] == theme, (key, seen)
        assert len(seen["nav"]) == 5 and all(seen["nav"]), (key, seen["nav"])  # Home, three panels, Lessons
        assert all((real_site[0] / href.partition("?")[0]).is_file() for href in seen["nav"]), (key, seen["nav"])
        assert all(("theme=dark" in href) == (theme == "dark") for href in seen["nav"]), (key, seen["nav"])
        # Straight to the page's file in that theme (through the other one, the shell redirects: a tenth of a second).
        assert all((".dark.html" in href) == (theme == "dark") for href in seen["nav"]), (key, seen["nav"])
        assert seen["faint"] == [], (key, seen["faint"])
        assert len(seen["h1"]) == 1, (key, seen["h1"])  # one title heading (a lesson's is its own)


def test_dark_theme_link_opens_the_dark_build(visit):
    dark = visit["dark"]
    path, _, query = dark["url"].partition("?")
    assert path.endswith("/phases.dark.html") and sorted(query.split("&")) == ["prompt_tokens=128", "theme=dark"]
    assert dark["state"] == "ready" and dark["errors"] == []


def test_copy_embed_code_carries_embed_mode_and_warns_about_a_local_address(visit):
    code = visit["embed_code"]
    assert code.startswith("<iframe ") and "embed=1" in code and "kvlab-resize" in code
    assert "local address" in visit["embed_warning"]


def test_embed_from_another_origin_hides_the_header_and_resizes(visit):
    embed = visit["embed"]
    assert embed["height"] > 400
    # The header takes no room and offers nothing to tab to; its title is left, for screen readers
    # only, as the embedded panel's one <h1>.
    assert embed["header_box"]["height"] <= 1 and embed["header_box"]["width"] <= 1, embed["header_box"]
    assert embed["header_links"] == 0
    assert embed["h1"] == ["kvlab · The admission decision"]
    assert embed["errors"] == []


def test_lesson_predict_then_reveal_then_try_this(visit, real_site):
    from kvlab.lessons import course
    from kvlab.lessons.render import why_html

    seen = visit["lesson"]
    assert seen["reveal_before"] is False  # the question comes before the answer
    prediction = course.lesson("A1").steps[0].prediction
    assert seen["choice"] == prediction.choices[0].label
    expected = why_html(prediction, prediction.choices[0].label)
    assert seen["why"].split("\n")[0].strip() in expected.replace("<strong>", "").replace("</strong>", "")
    assert seen["disabled"] and all(seen["disabled"])  # the prediction is locked once made
    assert seen["try_links"], "the first step of A1 has try-this links"
    site = real_site[0]
    for href in seen["try_links"]:
        assert (site / href.split("?")[0].removeprefix("./")).is_file(), href
    assert seen["errors"] == []


def test_a_lesson_live_view_answers_its_control_with_cpythons_numbers(visit):
    seen = visit["lesson"]
    assert seen["specs"] and seen["specs"][0]["kind"] == "steady"
    expected = _cpython_lesson(seen["specs"])
    formula = expected["lv0:kv_formula.pane"]["text"]
    assert formula != LessonPage(seen["specs"]).models()["lv0:kv_formula.pane"]["text"]  # the move changes the numbers
    for name, props in expected.items():
        for prop, value in props.items():
            held = seen["models"].get(name, {}).get(prop)
            assert _close(held, value), f"after {LESSON_MOVE}: {name}.{prop} is {held!r}, CPython {value!r}"
    # The lesson's own link keeps only its answer (the pick the test made): the live view leaves it alone.
    assert seen["url"].endswith(f"{LESSON}.html?{course_key(0)}=0")


def course_key(step: int) -> str:
    from kvlab.lessons import course

    return course.lesson("A1").steps[step].prediction.key


def test_a_lesson_link_re_applies_its_answers_and_shows_the_reveal(visit):
    """As on the server (lessons/render.py LessonBody): each answer in the link locks its step, marks
    the pick, explains it with the text CPython writes and shows the reveal; with every step answered
    the recap shows; an index that names no choice is ignored; the link is kept."""
    from kvlab.lessons.content.model import estimate_verdict
    from kvlab.lessons.render import why_html

    steps, links = _lesson_answer_links()
    every, partial = visit["answers"]
    for seen in (every, partial):
        assert seen["errors"] == []
        assert len(seen["disabled"]) == len(steps)
    for i, p in enumerate(steps):
        if p.numeric:  # the bridge hands the link's estimate to the step's check, which says how far off it is
            assert all(every["disabled"][i]) and every["revealed"][i]
            assert every["why"][i].strip() == estimate_verdict(float(links[0][p.key]), p)
            continue
        picked = p.choices[links[0][p.key]].label
        assert all(every["disabled"][i]) and every["revealed"][i]
        assert every["why"][i].split("\n")[0].strip() in why_html(p, picked).replace("<strong>", "").replace("</strong>", "")
    assert every["why"][0].startswith(f"You predicted {steps[0].choices[links[0][steps[0].key]].label}. Not quite")
    assert every["recap"] is True
    assert every["url"].endswith(f"{LESSON}.html?" + "&".join(f"{k}={v}" for k, v in links[0].items()))
    assert all(partial["disabled"][0]) and partial["revealed"][0] and partial["why"][0].split("\n")[0].strip().endswith("Right.")
    assert not any(partial["disabled"][-1]) and partial["revealed"][-1] is False and partial["why"][-1] is None
    assert partial["recap"] is False


def test_a_lesson_estimate_is_checked_offline_and_kept_in_its_link(visit):
    """A numeric step in the site (no Python behind it): a refused estimate names the field and its range and
    reveals nothing; a taken one says how far off it is with the sentence CPython writes, shows the reveal and
    the math peek, and is written into the address bar, from which the bridge re-applies it on a reload."""
    from kvlab.lessons import course
    from kvlab.lessons.content.model import estimate_problem, estimate_verdict

    p = course.lesson("A1").steps[-1].prediction
    seen = visit["estimate"]
    assert seen["refused"] == estimate_problem(p) and seen["kept"] == "abc" and seen["revealed_refused"] is False
    assert seen["why"].strip() == estimate_verdict(float(_estimate(p)), p) and "off by 3x (too high)" in seen["why"]
    assert seen["revealed"] and all(c.text in seen["peek"] for c in p.peek)
    assert seen["url"].endswith(f"&{p.key}={_estimate(p)}"), seen["url"]  # after the earlier steps the link answered
    assert seen["why_reloaded"] == seen["why"] and seen["box_reloaded"] == _estimate(p)
    assert seen["errors"] == []


def test_every_script_and_wheel_the_site_ships_is_requested(visit, real_site):
    """What the site ships is what its pages load: every JavaScript bundle, Pyodide file and wheel
    was requested by some page of the visit (which opens every page); nothing is carried unused. The
    build's record (build-info.json) and the published answer key (answers.json, for instructors and
    their tools: the key page is built from the lessons themselves) are for people, not pages."""
    site = real_site[0]
    shipped = {p.relative_to(site).as_posix() for p in original_files(site)  # not the precompressed copies
               if p.suffix in (".js", ".mjs", ".wasm", ".zip", ".whl", ".json", ".bin", ".gz")
               and p.name not in ("build-info.json", "answers.json")}
    assert shipped - visit["requested"] - visit.get("fallback_requested", set()) == set()


def test_pages_started_from_the_snapshot_load_only_its_cut_standard_library(visit, real_site):
    """A worker restored from the snapshot loads the standard library it was made with, the modules
    it holds imported (snapshot/stdlib-*.zip, a third of Pyodide's zip), and of the wheels only their
    data files (snapshot/data-*.json); Pyodide's whole zip and the wheels are fetched only by a page
    that starts Python without the snapshot (the fallback)."""
    info = json.loads((real_site[0] / "build-info.json").read_text())
    if info["snapshot"] is None:
        pytest.skip(f"the build made no snapshot: {info['snapshot_note']}")
    cut, full = info["snapshot"]["stdlib"], "pyodide/python_stdlib.zip"
    assert cut in visit["requested"] and full not in visit["requested"]
    assert full in visit["fallback_requested"]
    wheels = {f"wheels/{name}" for name in info["wheels"]}
    assert info["snapshot"]["data"] in visit["requested"] and not wheels & visit["requested"]
    assert wheels <= visit["fallback_requested"]
    assert (real_site[0] / cut).stat().st_size < (real_site[0] / full).stat().st_size / 2



def test_the_host_sends_the_brotli_copies_and_the_pages_run_on_them(visit, real_site):
    """Served as a static host serves the build's precompressed copies (Chromium asks for br, and
    for 127.0.0.1 too), Pyodide's WebAssembly and the snapshot arrive brotli-coded, the snapshot's
    copy holding its memory decoded, and the pages still run from it: every live page boots from
    the snapshot, and the comparisons with CPython above ran on those workers."""
    info = json.loads((real_site[0] / "build-info.json").read_text())
    if info["snapshot"] is None:
        pytest.skip(f"the build made no snapshot: {info['snapshot_note']}")
    if info.get("precompressed_note"):  # no Node: gzip copies only
        pytest.skip(info["precompressed_note"])
    sent = visit["encodings"]
    assert sent["pyodide/pyodide.asm.wasm"] == "br" and sent[info["snapshot"]["file"]] == "br"
    bokeh = next(n for n in sent if n.startswith("vendor/bokeh/bokeh-3"))
    assert sent["admission.html"] == "br" and sent[bokeh] == "br"
    assert sent[info["snapshot"]["data"]] == "br"  # sim's data files, all a restored worker takes of the wheels
    assert sent[info["snapshot"]["stdlib"]] == "br" and sent[info["lab_opening"]] == "br"  # gzip files, sent decoded
    for name in ("admission", "phases", LAB):
        assert visit["pages"][name]["timings"]["boot"] == "snapshot", name


def test_the_lab_takes_its_opening_run_from_the_site(visit, real_site):
    """The default lab reads the build's copy of its opening run (data/lab-opening-*.json.gz)
    instead of running it again while the page loads; the lab test above compares what it then
    shows, and every run after it, with CPython's LabPage that ran it."""
    info = json.loads((real_site[0] / "build-info.json").read_text())
    assert info["lab_opening"].startswith("data/lab-opening-")
    assert visit["pages"][LAB]["timings"]["opening"] == "file"
    assert visit["lab_embed"]["errors"] == [] and visit["lab_embed"]["timings"]["opening"] == "file"  # ?embed=1


def test_a_lab_link_with_its_own_settings_runs_its_own_opening_run(visit):
    seen = visit["lab_link"]
    assert seen["errors"] == [] and seen["seed"] == 3
    assert "opening" not in seen["timings"] and seen["fetched"] == []


def test_live_pages_start_python_from_the_snapshot(visit):
    """With the build's snapshot, every live page and a lesson's live view restore it instead of
    starting Python from scratch; the checks above compare those pages' numbers with CPython's."""
    if visit["snapshot"] is None:
        pytest.skip("the build made no Pyodide memory snapshot (see its note)")
    booted = {name: visit["pages"][name]["timings"] for name in (*PANEL_PAGES, LAB)}
    booted[LESSON] = visit["lesson"]["timings"]
    print(f"worker timings (ms): {booted}; seconds inside the visit: {visit['seconds']}")
    for name, timings in booted.items():
        assert timings["boot"] == "snapshot" and "snapshot_error" not in timings, (name, timings)


@pytest.mark.parametrize("fault", SNAPSHOT_FAULTS)
def test_a_page_starts_without_its_snapshot_when_it_is_missing_or_corrupt(visit, fault):
    if visit["snapshot"] is None:
        pytest.skip("the build made no Pyodide memory snapshot (see its note)")
    seen = visit["fallback"][fault]
    assert seen["state"] == "ready" and seen["errors"] == []
    assert seen["timings"]["boot"] == "plain" and seen["timings"]["snapshot_error"], seen["timings"]
    assert any("snapshot could not be used" in w for w in seen["warnings"]), seen["warnings"]
    (move,) = seen["moves"]
    (expected,) = _cpython_models(FALLBACK_PAGE, MOVES[FALLBACK_PAGE][:1])
    for name, props in expected.items():
        for prop, value in props.items():
            assert _close(move["models"][name].get(prop), value), f"{name}.{prop}"
    assert move["max_sequences"] == f"{evaluate(Scenario(prompt_tokens=32768)).max_sequences:,}"


# A throttled link (20 Mbit/s down, 40 ms each way: Chromium's network emulation): the admission
# panel's default state is drawn seconds before Python has started in its worker.
SLOW_LINK = {"offline": False, "latency": 40, "downloadThroughput": 20e6 / 8, "uploadThroughput": 5e6 / 8}
EARLY_MOVES = [("w.prompt_tokens", 12.0), ("w.concurrency-exact", 64), ("w.prompt_tokens", 13.0)]  # the last value wins


@harness.in_own_thread
def _move_while_starting(site: Path) -> dict:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import sync_playwright

    wanted = {n: sorted(props) for n, props in PanelPage("admission").models().items()}
    with harness.serve_directory(site) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=harness.CHROMIUM, args=harness.CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1300, "height": 900})
            page.route("**/*", lambda r: r.continue_() if r.request.url.startswith(("http://127.0.0.1", "data:", "blob:"))
                       else r.abort())
            cdp = page.context.new_cdp_session(page)
            cdp.send("Network.enable")
            cdp.send("Network.emulateNetworkConditions", SLOW_LINK)
            page.goto(f"{base}admission.html")
            drawn = "() => window.Bokeh && Bokeh.documents.length && Bokeh.documents[0].get_model_by_name('w.prompt_tokens')"
            page.wait_for_function(drawn, timeout=BOOT_TIMEOUT_MS)
            for name, value in EARLY_MOVES:
                page.evaluate("([n, v]) => { const m = Bokeh.documents[0].get_model_by_name(n);"
                              " m[('value' in m.properties) ? 'value' : 'active'] = v; }", [name, value])
            moved = {"state": page.evaluate("document.body.dataset.kvlabState || 'starting'"),
                     "banner": page.evaluate("(document.querySelector('.kvlab-progress-label') || {}).textContent || ''")}
            page.wait_for_function("document.body.dataset.kvlabState === 'ready'", timeout=BOOT_TIMEOUT_MS)
            try:  # the waiting moves are answered in one patch (none came before the fix)
                page.wait_for_function("window.kvlabBridge.patches > 0 && !window.kvlabBridge.busy", timeout=30_000)
            except PlaywrightTimeout:
                pass
            page.wait_for_timeout(300)  # a chart's half of the patch, one frame later
            return {"moved": moved, "patches": page.evaluate("window.kvlabBridge.patches"),
                    "models": json.loads(page.evaluate(READ_MODELS_JS, wanted))}
        finally:
            browser.close()


def test_moves_made_while_the_simulator_starts_are_kept_and_answered(real_site):
    """Issue 37: on a slow link a slider moved before Python was ready kept showing the default
    numbers, then snapped back to the default once it was. Every control now answers from the first
    paint: the moves wait, the banner says so, and once Python is up the page shows what CPython
    computes for the last value of each control."""
    site, _, _ = real_site
    if not json.loads((site / "build-info.json").read_text())["pyodide_self_hosted"]:
        pytest.skip(harness.missing_reason("newest"))
    seen = _move_while_starting(site)
    assert seen["moved"]["state"] != "ready", seen["moved"]  # the moves were made before Python was up
    expected = _cpython_models("admission", EARLY_MOVES)[-1]
    for name, props in expected.items():
        for prop, want in props.items():
            held = seen["models"][name].get(prop)
            assert _close(held, want), f"{name}.{prop} is {held!r}, CPython {want!r} (moves {EARLY_MOVES}, {seen['patches']} patches)"
    assert "Your change is kept" in seen["moved"]["banner"], seen["moved"]


@harness.in_own_thread
def _visit_as_files(site: Path, page_name: str, moves: list) -> dict:
    """One live page served by a host that sends every file as it is (no precompressed copies), as
    `python -m http.server`, which the build's next steps suggest, does."""
    from playwright.sync_api import sync_playwright

    sent: dict[str, str | None] = {}
    with harness.serve_directory(site, precompressed=False) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=harness.CHROMIUM, args=harness.CHROMIUM_ARGS)
        try:
            page = browser.new_context().new_page()
            errors: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type in ("error", "warning") else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("response", lambda r: sent.__setitem__(unquote(r.url.removeprefix(base).split("?")[0]),
                                                           r.headers.get("content-encoding")))
            page.goto(f"{base}{page_name}.html")
            page.wait_for_function("['ready', 'failed'].includes(document.body.dataset.kvlabState)", timeout=BOOT_TIMEOUT_MS)
            out = {"state": page.evaluate("document.body.dataset.kvlabState"), "sent": sent, "errors": errors,
                   "timings": page.evaluate("window.kvlabBridge.timings || null")}
            if out["state"] == "ready":
                out["moves"] = _panel_moves(page, page_name, moves)
            return out
        finally:
            browser.close()


def test_a_host_that_sends_files_as_they_are_serves_the_snapshots_gzip_files(real_site):
    """Without the precompressed copies the worker gets the snapshot, its standard library and its data
    file as the build wrote them (the first two gzip files, decoded in the worker), still starts
    from the snapshot, and answers a move as CPython does."""
    site = real_site[0]
    info = json.loads((site / "build-info.json").read_text())
    if info["snapshot"] is None:
        pytest.skip(f"the build made no snapshot: {info['snapshot_note']}")
    seen = _visit_as_files(site, FALLBACK_PAGE, MOVES[FALLBACK_PAGE][:1])
    assert seen["state"] == "ready" and seen["errors"] == [], seen["errors"]
    assert seen["timings"]["boot"] == "snapshot", seen["timings"]
    for name in (info["snapshot"]["file"], info["snapshot"]["stdlib"], info["snapshot"]["data"]):
        assert name in seen["sent"] and seen["sent"][name] is None, (name, seen["sent"].get(name))
    expected = _cpython_models(FALLBACK_PAGE, MOVES[FALLBACK_PAGE][:1])[0]
    for name, props in expected.items():
        for prop, value in props.items():
            assert _close(seen["moves"][0]["models"][name].get(prop), value), f"{name}.{prop}"
