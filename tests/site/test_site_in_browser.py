"""The built site in real headless Chromium, served from 127.0.0.1 with every other host blocked.

One build and one browser for the whole module (CI has two cores): `_visit_site` drives every
check in one Playwright session and returns plain data the tests assert on. For every page: it
boots with no console error and no request leaving 127.0.0.1; the live panels become interactive,
and after each control is moved the Bokeh models hold exactly what CPython's view layer (over
CPython's `sim.evaluate`) gives for that state. Themes, copy-embed and an embed from a second
local origin that resizes its iframe are checked too.
"""

from __future__ import annotations

import http.server
import json
import time
from pathlib import Path

import pytest
from kvlab.app.build_site import DEFAULT_PAGE_GLOBS, LIVE_PAGES, discover_pages
from kvlab.app.viewlayer.pages import PanelPage
from kvlab.sim import Scenario, evaluate

from tests.pyodide import harness

pytestmark = [pytest.mark.browser, pytest.mark.slow]

BOOT_TIMEOUT_MS = 180_000  # Pyodide's start is CPU-bound: minutes on a loaded two-core machine
# (page, widget model name, new property value) in order; each is one move a student makes.
MOVES = {
    "admission": [("w.prompt_tokens", 15.0), ("w.kv_dtype", 2), ("w.gpu", "a100-80"), ("w.concurrency-exact", 64),
                  ("w.tp", 1), ("w.engine", 1), ("w.force_mha", True), ("w.gpu_memory_utilization", 0.8),
                  ("w.allocation", 1), ("w.model", "qwen3-32b"), ("w.output_tokens", 10.0), ("w.weight_dtype", 2),
                  ("w.profile", "h100-published"), ("w.block_size_tokens", 32), ("w.max_num_seqs", 16)],
    "phases": [("w.prompt_tokens", 7.0), ("w.concurrency", 8.0), ("w.gpu", "h200"), ("w.model", "qwen3-14b"),
               ("w.engine", 2), ("w.mem_fraction_static", 0.8), ("w.kv_dtype", 2), ("w.tp", 2), ("w.max_model_len", 8192)],
}
LESSON = "lesson_a1"  # its first step has "try this" links


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def _host_page(site_base: str) -> str:
    """A course page on another origin that embeds the admission panel with the copied embed code's script."""
    return (f'<!doctype html><html><body><h1>Course notes</h1><iframe id="kv" src="{site_base}admission.html?embed=1&amp;'
            'prompt_tokens=32768" width="100%" height="150" style="border:0" data-kvlab-embed></iframe><script>'
            'addEventListener("message",function(e){var d=e.data;if(!d||d.type!=="kvlab-resize")return;'
            'document.querySelectorAll("iframe[data-kvlab-embed]").forEach(function(f){if(f.contentWindow===e.source)'
            'f.style.height=d.height+"px";});});</script></body></html>')


@harness.in_own_thread
def _visit_site(site: Path, pages: list[str]) -> dict:
    from playwright.sync_api import sync_playwright

    out: dict = {"pages": {}, "outside": [], "bad_status": []}
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
            context.on("response", lambda r: out["bad_status"].append(f"{r.status} {r.url}") if r.status >= 400 else None)

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
                if name in LIVE_PAGES and seen["state"] == "ready":
                    seen["moves"] = []
                    # Read back exactly the properties CPython's view layer sets on each named model.
                    wanted = {n: sorted(props) for n, props in PanelPage(name).models().items()}
                    for widget, value in MOVES[name]:
                        before = page.evaluate("window.kvlabBridge.patches")
                        page.evaluate("([n, v]) => { const m = Bokeh.documents[0].get_model_by_name(n);"
                                      " m[('value' in m.properties) ? 'value' : 'active'] = v; }",
                                      [widget, value])
                        page.wait_for_function(f"window.kvlabBridge.patches > {before}", timeout=20_000)
                        models = page.evaluate("""(wanted) => { const d = Bokeh.documents[0]; const out = {};
                            for (const [name, props] of Object.entries(wanted)) { const m = d.get_model_by_name(name);
                              if (!m) continue; const p = {};
                              for (const k of props) { let v = m[k];
                                if (k === 'data') { v = {}; for (const [c, a] of Object.entries(m.data)) v[c] = Array.from(a); }
                                p[k] = v; }
                              out[name] = p; }
                            return JSON.stringify(out); }""", wanted)
                        seen["moves"].append({"widget": widget, "value": value, "models": json.loads(models),
                                              "url": page.url,
                                              "max_sequences": page.locator('[data-kv="max_sequences"]').first.inner_text()
                                              if name == "admission" else None})
                    seen["latencies_ms"] = page.evaluate("window.kvlabBridge.latencies")
                out["pages"][name] = seen
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
                                 try_links=[a.get_attribute("href") for a in page.locator(".kv-reveal").first.locator(".kv-try a").all()],
                                 errors=errors)
            page.close()

            # A link with theme=dark opens the dark build of the page, live.
            page, errors, _ = open_page("phases.html?theme=dark&prompt_tokens=128")
            out["dark"] = {"url": page.url, "state": page.evaluate("document.body.dataset.kvlabState"), "errors": errors}
            # Copy embed code from a page served on 127.0.0.1: the snippet has embed=1 and the button warns.
            page.get_by_role("button", name="Copy embed code").click()
            page.wait_for_function("window.kvlabLastCopied !== undefined", timeout=10_000)
            out["embed_code"] = page.evaluate("window.kvlabLastCopied")
            out["embed_warning"] = page.evaluate("window.kvlabCopyWarning")
            page.close()

            # The embed, from a second local origin: header hidden, iframe resized to its content.
            host_dir = site.parent / "host"
            host_dir.mkdir(exist_ok=True)
            (host_dir / "notes.html").write_text(_host_page(base), encoding="utf-8")
            with harness.serve_directory(host_dir) as host_base:
                host = context.new_page()
                errors2: list[str] = []
                host.on("pageerror", lambda e: errors2.append(str(e)))
                host.goto(host_base + "notes.html")
                frame = host.frame_locator("#kv")
                host.wait_for_function("document.getElementById('kv').getBoundingClientRect().height > 400", timeout=BOOT_TIMEOUT_MS)
                out["embed"] = {"origin_host": host_base, "height": host.evaluate("document.getElementById('kv').offsetHeight"),
                                "header_visible": frame.locator("#header").first.is_visible(), "errors": errors2}
        finally:
            browser.close()
    return out


@pytest.fixture(scope="module")
def visit(real_site):
    site, _, _ = real_site
    info = json.loads((site / "build-info.json").read_text())
    if not info["pyodide_self_hosted"]:
        pytest.skip(harness.missing_reason("newest"))
    return _visit_site(site, [p.name for p in discover_pages(DEFAULT_PAGE_GLOBS)])


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


@pytest.mark.parametrize("page", LIVE_PAGES)
def test_each_control_shows_exactly_what_cpython_computes(visit, page):
    seen = visit["pages"][page]
    assert len(seen["moves"]) == len(MOVES[page])
    for move, expected in zip(seen["moves"], _cpython_models(page, MOVES[page]), strict=True):
        for name, props in expected.items():
            for prop, value in props.items():
                held = move["models"][name].get(prop)
                assert _close(held, value), f"after {move['widget']}={move['value']!r}: {name}.{prop} is {held!r}, CPython {value!r}"


def test_admission_numbers_are_sims_and_the_link_follows(visit):
    moves = visit["pages"]["admission"]["moves"]
    assert moves[0]["max_sequences"] == f"{evaluate(Scenario(prompt_tokens=32768)).max_sequences:,}"
    assert moves[1]["max_sequences"] == f"{evaluate(Scenario(prompt_tokens=32768, kv_dtype='fp8')).max_sequences:,}"
    assert moves[1]["url"].endswith("admission.html?prompt_tokens=32768&kv_dtype=fp8")


def test_slider_answers_within_a_few_frames(visit):
    latencies = sorted(visit["pages"]["admission"]["latencies_ms"])
    assert latencies and latencies[len(latencies) // 2] < 1000  # a sanity bound; benchmarks/site_load.py measures


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
    assert embed["header_visible"] is False
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
