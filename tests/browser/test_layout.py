"""Readable on a phone-width window, operable from the keyboard alone."""

import pytest
from kvlab.sim import Scenario, evaluate

from .axe import VIEWPORTS
from .support import DEEP_ACTIVE, DEEP_ALL

pytestmark = pytest.mark.browser

DEEP_ACTIVE_JS = f"""() => {{ {DEEP_ACTIVE}
  const el = deepActive();
  return el ? (el.className || el.tagName) + '' : '';
}}"""


LANDSCAPE_JS = f"""() => {{ {DEEP_ALL} const box = (el) => el.getBoundingClientRect(), sheet = document.getElementById('sidebar');
  const number = deepAll('[data-kv="max_sequences"]')[0];
  return {{ headerBottom: box(document.getElementById('header')).bottom, sheetTop: box(sheet).top, sheetBottom: box(sheet).bottom,
           sheetPosition: getComputedStyle(sheet).position, numberBottom: number ? box(number).bottom : null, scrollY }}; }}"""


def test_a_phone_on_its_side_scrolls_the_header_away_and_pins_the_settings(browser, server):
    """844 x 390: the desktop layout kept its two-row header on top (106 px) and left the sidebar and
    the numbers 284 px to scroll in, each on its own. The phone's layout serves instead."""
    context = browser.new_context(viewport={"width": 844, "height": 390}, is_mobile=True, has_touch=True)
    page = context.new_page()
    try:
        page.goto(server + "/admission")
        page.wait_for_selector('[data-kv="log"]')
        page.wait_for_timeout(300)
        top = page.evaluate(LANDSCAPE_JS)
        assert top["sheetPosition"] == "sticky" and top["sheetBottom"] <= 391 and top["sheetTop"] >= 390 * 0.55, top
        page.evaluate("(y) => window.scrollTo(0, y)", top["headerBottom"])
        page.wait_for_timeout(200)
        scrolled = page.evaluate(LANDSCAPE_JS)
        assert scrolled["scrollY"] > 0 and scrolled["headerBottom"] <= 1, scrolled  # the header went with the page
        assert scrolled["sheetBottom"] <= 391 and scrolled["sheetTop"] == top["sheetTop"], scrolled  # the sheet stayed
        assert 0 < scrolled["numberBottom"] <= scrolled["sheetTop"], scrolled  # the headline number shows above it
    finally:
        context.close()


FIRST_NUMBER_JS = f"""() => {{ {DEEP_ALL} const sheet = document.getElementById('sidebar');
  const value = deepAll('.kv-tile .value').filter((e) => e.getClientRects().length > 0)[0];
  return {{ top: value ? value.getBoundingClientRect().top : null, bottom: value ? value.getBoundingClientRect().bottom : null,
           text: value ? value.textContent.trim() : '', sheetTop: sheet.getBoundingClientRect().top, scrollY }}; }}"""


def test_a_small_phone_shows_a_result_on_its_first_screen(browser, server):
    """320 x 640 (WCAG 1.4.10's reflow width, a small phone): the first number of each panel and of
    the lab is on the first screen, above the settings sheet. Before, the header took 175-197 px and
    the sheet 256: the phases' first number sat at 416-447 px and the lab's at 442-473, under a sheet
    starting at 384."""
    context = browser.new_context(viewport={"width": 320, "height": 640}, is_mobile=True, has_touch=True)
    page = context.new_page()
    hidden = {}
    try:
        for path, ready in (("/admission", "max_sequences"), ("/phases", "ttft"), ("/serving_lab", "lab-ttft-p50")):
            page.goto(server + path)
            page.wait_for_selector(f'[data-kv="{ready}"]', state="attached", timeout=60_000)
            page.wait_for_timeout(300)
            first = page.evaluate(FIRST_NUMBER_JS)
            if not (first["text"] and first["scrollY"] == 0 and 0 <= first["top"] and first["bottom"] <= first["sheetTop"]):
                hidden[path] = first
    finally:
        context.close()
    assert not hidden, f"no result above the settings sheet at 320 x 640: {hidden}"


def _longest_titled_lessons(n: int = 3) -> list[str]:
    from kvlab.lessons import course

    codes = sorted(course.written(), key=lambda c: len(course.title(c)), reverse=True)[:n]
    return [f"/{course.slug(c)}" for c in codes]


HEADER_RIGHT_JS = """() => Math.max(...[...document.querySelectorAll('#header *')].map((e) => e.getBoundingClientRect())
                                       .filter((r) => r.width > 0).map((r) => r.right))"""


@pytest.mark.parametrize("width", [800, 1024])
def test_the_header_keeps_its_links_and_theme_button_in_the_window(browser, server, width):
    """A long lesson title pushed the theme button (at 1,024 px, 6 lessons) and nav links (at 800
    px, 22 pages) past the window's edge, where the page, which does not scroll sideways, hid them."""
    context = browser.new_context(viewport={"width": width, "height": 700})
    page = context.new_page()
    out = {}
    try:
        for path in ["/phases", *_longest_titled_lessons()]:
            page.goto(server + path)
            page.get_by_role("button", name="Dark theme").wait_for(timeout=60_000)
            page.wait_for_timeout(300)
            right = page.evaluate(HEADER_RIGHT_JS)
            if right > width + 1:
                out[path] = round(right)
    finally:
        context.close()
    assert not out, f"header items reach past {width} px: {out}"


def test_tab_reaches_the_controls_and_arrow_keys_move_them(kv_page):
    page = kv_page.open("/admission")
    page.page.locator("body").click(position={"x": 5, "y": 300})
    seen = []
    for _ in range(60):
        page.page.keyboard.press("Tab")
        seen.append(page.page.evaluate(DEEP_ACTIVE_JS))
        if "noUi-handle" in seen[-1]:
            break
    assert any("bk-input" in s or s == "SELECT" for s in seen), seen  # the selects came first
    assert "noUi-handle" in seen[-1], seen
    page.page.keyboard.press("ArrowLeft")  # the first handle is the prompt: one step down from 4,096
    r = evaluate(Scenario(prompt_tokens=round(2 ** (12 - 1 / 8))))
    page.eventually(lambda: _assert(page.text("max_sequences") == f"{r.max_sequences:,}"))


# Where the keyboard's focus is, against the settings sheet pinned to the bottom of a phone's screen.
FOCUS_VS_SHEET_JS = f"""() => {{ {DEEP_ACTIVE}
  const el = deepActive();
  if (!el || el === document.body) {{ return null; }}
  let outer = el;
  while (outer.getRootNode() !== document) {{ outer = outer.getRootNode().host; }}
  const sheet = document.getElementById('sidebar'), r = el.getBoundingClientRect();
  return {{ name: (el.getAttribute('aria-label') || el.textContent || el.tagName).trim().slice(0, 40), top: r.top, bottom: r.bottom,
           inSheet: sheet.contains(outer), sheetTop: sheet.getBoundingClientRect().top, scrollY: window.scrollY }};
}}"""

# Bootstrap scrolls smoothly: wait until neither the page nor the sheet has moved for a few frames.
SCROLL_SETTLED_JS = """() => new Promise((resolve) => {
  let last = null, same = 0;
  const tick = () => {
    const now = window.scrollY + ':' + document.getElementById('sidebar').scrollTop;
    same = now === last ? same + 1 : 0;
    last = now;
    if (same >= 5) { resolve(); } else { requestAnimationFrame(tick); }
  };
  tick();
})"""


def test_phone_keyboard_focus_never_hides_under_the_settings_sheet(browser, server):
    """WCAG 2.4.11: the lab's controls below the numbers (a metric's buttons, the log console's)
    were scrolled just into the window by the browser, under the sheet; a control in the sheet must
    not scroll the page."""
    context = browser.new_context(viewport=VIEWPORTS["phone"])
    page = context.new_page()
    try:
        page.goto(server + "/serving_lab")
        page.get_by_text("requests simulated").first.wait_for(timeout=60_000)
        page.wait_for_timeout(500)
        outside, in_sheet_scrolls = [], set()
        for _ in range(45):  # through the sheet's controls to the log console's buttons, past the page's end
            page.keyboard.press("Tab")
            page.evaluate(SCROLL_SETTLED_JS)
            focus = page.evaluate(FOCUS_VS_SHEET_JS)
            if focus is None:
                continue
            if focus["inSheet"]:
                in_sheet_scrolls.add(focus["scrollY"])
            else:
                outside.append(focus)
        below = [f for f in outside if f["bottom"] > 0 and f["top"] >= f["sheetTop"]]
        assert len(outside) >= 10, outside  # the walk reached the page's own controls
        assert not below, f"focused controls entirely under the settings sheet: {below}"
        assert len(in_sheet_scrolls) == 1, f"the page scrolled while the focus moved inside the sheet: {sorted(in_sheet_scrolls)}"
    finally:
        context.close()


def _assert(condition: bool) -> None:
    assert condition


# Every number tile's digits and unit, as laid out: the unit's top must sit above the digits'
# bottom (the same line). Tiles live in shadow roots, which deepAll goes through.
TILE_LINES_JS = f"""() => {{ {DEEP_ALL} const out = [];
  for (const v of deepAll('.kv-tile .value')) {{
    const digits = v.querySelector('span'), unit = v.querySelector('small');
    if (digits && unit) {{ const d = digits.getBoundingClientRect(), u = unit.getBoundingClientRect();
      out.push({{ text: v.textContent, digitsBottom: d.bottom, unitTop: u.top, width: v.getBoundingClientRect().width }}); }} }}
  return out; }}"""


@pytest.mark.parametrize(("path", "ready", "width"), [("/serving_lab?preset=seed000-chunked", "requests simulated", 1400),
                                                      ("/serving_lab", "requests simulated", 1024),
                                                      ("/phases", '[data-kv="log"]', 1400)])
def test_each_number_keeps_its_unit_on_its_line(browser, server, path, ready, width):
    """Six tiles in a row (the lab) once set the unit under the digits, an uneven row of tiles."""
    context = browser.new_context(viewport={"width": width, "height": 1000})
    page = context.new_page()
    try:
        page.goto(server + path)
        (page.get_by_text(ready) if ready[0] != "[" else page.locator(ready)).first.wait_for(timeout=60_000)
        page.wait_for_timeout(600)
        tiles = page.evaluate(TILE_LINES_JS)
        assert len(tiles) >= 4, tiles  # tiles with a unit: 4 on phases, 6 in the lab
        wrapped = [t for t in tiles if t["unitTop"] >= t["digitsBottom"] - 2]
        assert not wrapped, f"{path} at {width}px: units under their digits in {wrapped}"
    finally:
        context.close()
