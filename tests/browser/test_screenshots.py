"""The screenshots README.md shows, taken from the live pages after checking their numbers
against sim (so a picture never shows a wrong figure).

Every run takes them (a page that cannot be photographed is a failure), into the ignored
tests/artifacts/screenshots/; `KVLAB_UPDATE_SCREENSHOTS=1 scripts/test tests/browser` writes them
to docs/img/ instead, so routine test runs leave the tracked images alone."""

import contextlib
import os
import struct

import pytest
from kvlab.sim import Scenario, evaluate
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from .axe import assert_accessible
from .chart_boxes import CHART_PAGES_CHECKED_HERE, assert_charts_legible
from .support import DEEP_ALL, ROOT, LocalOnly, painted

pytestmark = pytest.mark.browser

IMG = ROOT / "docs" / "img" if os.environ.get("KVLAB_UPDATE_SCREENSHOTS") == "1" else ROOT / "tests" / "artifacts" / "screenshots"
SHOTS = [
    # (file, path, viewport, data-kv to check, sim state, figure)
    ("admission.png", "/admission?prompt_tokens=32768", (1400, 1000), "max_sequences", {"prompt_tokens": 32768}, "max_sequences"),
    ("phases.png", "/phases?model=qwen3-14b&concurrency=64", (1400, 1000), "batch", {"model": "qwen3-14b", "concurrency": 64}, None),
    ("phases-dark.png", "/phases?prompt_tokens=32768&kv_dtype=fp8&theme=dark", (1400, 1000), None, {}, None),
    ("admission-phone.png", "/admission?model=qwen3-32b", (390, 844), "max_sequences", {"model": "qwen3-32b"}, "max_sequences"),
    ("weights-do-not-fit.png", "/admission?model=qwen3-32b&gpu_memory_utilization=0.72", (1400, 760), "max_sequences",
     {"model": "qwen3-32b", "gpu_memory_utilization": 0.72}, "max_sequences"),
]
OTHER_SHOTS = [
    # (file, path, viewport, text that must be on the page before the picture is taken)
    ("serving-lab.png", "/serving_lab?preset=seed000-chunked", (1400, 1000), "Comparison (fcfs)"),
    ("lesson.png", "/lesson_a3", (1100, 900), "Estimate first."),  # A3 opens with an estimate
]


def png_size(path) -> tuple[int, int]:
    data = path.read_bytes()[:24]
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


@pytest.mark.parametrize(("name", "path", "viewport", "key", "state", "figure"), SHOTS, ids=[s[0] for s in SHOTS])
def test_screenshot(browser, server, name, path, viewport, key, state, figure):
    phone = viewport[0] < 500
    context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]}, is_mobile=phone, has_touch=phone)
    page = context.new_page()
    page.goto(server + path)
    page.wait_for_selector('[data-kv="log"]')
    painted(page)  # Bokeh has drawn the canvases
    if figure:
        assert page.locator(f'[data-kv="{key}"]').first.inner_text() == f"{getattr(evaluate(Scenario(**state)), figure):,}"
    IMG.mkdir(parents=True, exist_ok=True)
    out = IMG / name
    page.screenshot(path=str(out), full_page=True)
    width, height = png_size(out)
    assert width == viewport[0] and height >= viewport[1] * 0.9
    context.close()


@pytest.mark.parametrize(("name", "path", "viewport", "ready_text"), OTHER_SHOTS, ids=[s[0] for s in OTHER_SHOTS])
def test_screenshot_of_lab_and_lesson(browser, server, name, path, viewport, ready_text):
    context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
    page = context.new_page()
    page.goto(server + path)
    page.get_by_text(ready_text).first.wait_for(timeout=60_000)
    if path.startswith("/serving_lab"):
        # The comparison run's caption comes before its bars. A picture without them is still a
        # picture of the page (the test checks its size only), so a slow server does not fail it.
        with contextlib.suppress(PlaywrightTimeoutError):
            page.wait_for_function("""() => { const d = window.Bokeh && Bokeh.documents[0]; if (!d) return false;
                return [...d.all_models].filter((m) => m.data && m.data.left && m.data.left.length > 0).length >= 2; }""",
                                   timeout=20_000)
    page.wait_for_timeout(800)
    IMG.mkdir(parents=True, exist_ok=True)
    out = IMG / name
    page.screenshot(path=str(out))
    assert png_size(out) == viewport
    context.close()


# Buttons of a button group that reach past the phone's edge (`width`, the device's: a phone's
# window grows to hold content wider than the device, so window.innerWidth cannot tell).
CLIPPED_BUTTONS_JS = f"""(width) => {{ {DEEP_ALL}
  return deepAll('.bk-btn-group .bk-btn').filter((b) => {{ const r = b.getBoundingClientRect();
    return r.width > 0 && (r.right > width + 1 || r.left < -1); }}).map((b) => b.textContent.trim()); }}"""


# Every word of the lab's comparison table that the layout broke across lines, other than at one
# of its soft hyphens (U+00AD, where a long word may break with a hyphen shown). At 320 px the
# table's cells broke "(comparison)" as "(compari" / "son)", and "Preemptions" inside the word;
# its long words now carry soft hyphens (app/viewlayer/lab_comparison.py).
# A piece's first and last characters are compared: a range that starts after a soft hyphen also
# holds the hyphen drawn at the end of the line before, so each character's own box is its last.
BROKEN_WORDS_JS = f"""() => {{ {DEEP_ALL} const out = [];
  const top = (n, i) => {{ const r = document.createRange(); r.setStart(n, i); r.setEnd(n, i + 1);
                            const q = [...r.getClientRects()]; return Math.round(q[q.length - 1].top); }};
  for (const table of deepAll('table[data-kv="lab-compare"]')) {{
    const walk = document.createTreeWalker(table, NodeFilter.SHOW_TEXT);
    for (let n = walk.nextNode(); n; n = walk.nextNode()) {{
      for (const m of n.data.matchAll(/[^\\s\\u00ad]+/g)) {{
        if (top(n, m.index) !== top(n, m.index + m[0].length - 1)) out.push(m[0]); }} }} }}
  return out; }}"""
# The headline number of a panel: inside the phone's width once the layout settles, and larger than body text.
HEADLINE = '[data-kv="max_sequences"], [data-kv="ttft"]'
HEADLINE_INSIDE_JS = """(el) => { const r = el.getBoundingClientRect(); return r.left >= 0 && r.right <= 390; }"""


def _phone_pages():
    from .axe import PAGES
    return PAGES


@pytest.mark.parametrize(("path", "ready"), _phone_pages(), ids=[p for p, _ in _phone_pages()])
def test_phone_screenshot_of_every_page(browser, server, path, ready):
    """Every page at 390x844, as a phone shows it (docs/img/phone-<page>.png with the refresh switch).
    The first screen must hold the page's numbers or text: nothing wider than the phone, no button
    cut off at its edge, a panel's headline number inside the window and larger than body text;
    and nothing wider than 320 px once the window is that narrow, where axe and the outline and
    heading checks run (test_a11y's, for the phone in the light theme: WCAG 1.4.10's reflow width is
    the narrower of the two). The lab's comparison table breaks no word but at its soft hyphens, at
    390 and at 320 px; the panels' chart words fit at both widths; no request leaves 127.0.0.1 and no
    script fails. (One load of each page for all of these: page loads are what the browser suite's
    time goes to.)"""
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page = context.new_page()
    local = LocalOnly(page, server)
    try:
        page.goto(server + path)
        page.locator(ready).first.wait_for(timeout=60_000)
        if path == "/serving_lab":  # the comparison run's series come a slice after the page (a loaded machine: seconds)
            page.locator('table[data-kv="lab-compare"]').first.wait_for(timeout=60_000)
        painted(page)
        # Against the device's width: a phone's window (innerWidth) grows to hold wider content.
        overflow = page.evaluate("document.documentElement.scrollWidth") - 390
        assert overflow <= 1, f"{path}: {overflow}px of sideways scroll on a 390 px phone"
        clipped = page.evaluate(CLIPPED_BUTTONS_JS, 390)
        assert not clipped, f"{path}: buttons cut off at the phone's edge: {clipped}"
        if path in ("/admission", "/phases"):
            headline = page.locator(HEADLINE).first
            page.wait_for_function(HEADLINE_INSIDE_JS, arg=headline.element_handle(), timeout=10_000)
            assert headline.bounding_box()["height"] >= 24, f"{path}: the headline number is no larger than body text"
        if path in CHART_PAGES_CHECKED_HERE:
            assert_charts_legible(page, f"{path} at 390px")
        IMG.mkdir(parents=True, exist_ok=True)
        out = IMG / f"phone-{path.strip('/') or 'index'}.png"
        page.screenshot(path=str(out))
        assert png_size(out) == (390, 844)
        # WCAG 1.4.10 reflow: nothing scrolls sideways at 320 px either. A lesson's title (D2's
        # identifier), its objective beside its term (A3) and the lab's tables once did. (Words
        # drawn inside charts are canvas text, checked here for the panels and by test_chart_labels.)
        if path == "/serving_lab":
            page.wait_for_timeout(300)
            assert page.evaluate(BROKEN_WORDS_JS) == [], f"{path}: words broken at 390 px"
            assert page.locator('table[data-kv="lab-compare"] td').count() >= 40  # the table was there to measure
        page.set_viewport_size({"width": 320, "height": 700})
        page.wait_for_timeout(300)
        overflow = page.evaluate("document.documentElement.scrollWidth") - 320
        assert overflow <= 1, f"{path}: {overflow}px of sideways scroll at 320 px"
        if path == "/serving_lab":
            assert page.evaluate(BROKEN_WORDS_JS) == [], f"{path}: words broken at 320 px"
        assert_accessible(page, f"{path} phone light, 320 px")
        if path in CHART_PAGES_CHECKED_HERE:
            page.wait_for_timeout(600)  # Bokeh lays the charts out again for the narrower window
            assert_charts_legible(page, f"{path} at 320px")
        local.check(f"{path} phone light")
    finally:
        context.close()
