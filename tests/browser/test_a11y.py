"""Every page the app serves passes axe-core with no critical, serious or moderate violation, in both
themes, at 1280 px and at 320 px (the light theme's 320 px on test_screenshots' phone load of every
page; the lessons after the first in test_a11y_lessons); on the same loads, no request leaves 127.0.0.1 and no script fails. And
the keyboard walk: skip link, visible focus, slider values in tokens, the log reachable."""

from __future__ import annotations

import pytest
from kvlab.sim import Scenario, evaluate

from .axe import PAGES, VIEWPORTS, assert_accessible
from .chart_boxes import CHART_PAGES_CHECKED_HERE, assert_charts_legible
from .support import DEEP_ACTIVE, DEEP_ALL, LocalOnly, painted

pytestmark = pytest.mark.browser

DEEP_ACTIVE_JS = f"""() => {{ {DEEP_ACTIVE}
  const el = deepActive();
  if (!el) {{ return null; }}
  const s = getComputedStyle(el);
  return {{tag: el.tagName, cls: String(el.className || ''), text: (el.textContent || '').trim().slice(0, 60),
          role: el.getAttribute('role') || '', label: el.getAttribute('aria-label') || '',
          valuetext: el.getAttribute('aria-valuetext') || '',
          outline: s.outlineStyle !== 'none' ? parseFloat(s.outlineWidth) : 0, shadow: s.boxShadow}};
}}"""


def _open(browser, server, path, viewport, theme="light"):
    phone = viewport == "phone"
    context = browser.new_context(viewport=VIEWPORTS[viewport], is_mobile=phone, has_touch=phone)
    page = context.new_page()
    sep = "&" if "?" in path else "?"
    page.goto(server + path + (f"{sep}theme=dark" if theme == "dark" else ""))
    return context, page


FIRST_LESSON = next(p for p, _ in PAGES if p.startswith("/lesson_"))


def _cases():
    """Every page at 1280 px in both themes and on a 320 px phone in the dark theme (the phone's light
    theme is test_screenshots' load of every page, checked at 390 and 320 px). Of the lessons, the
    first; test_a11y_lessons checks the others the same way."""
    for path, ready in PAGES:
        if path.startswith("/lesson_") and path != FIRST_LESSON:
            continue
        for viewport, theme in (("desktop", "light"), ("desktop", "dark"), ("narrow", "dark")):
            yield pytest.param(path, ready, viewport, theme, id=f"{path}-{viewport}-{theme}")


@pytest.mark.parametrize(("path", "ready", "viewport", "theme"), list(_cases()))
def test_axe_no_critical_or_serious(browser, server, path, ready, viewport, theme):
    """axe and the outline and heading checks; on the same load, every request stays on 127.0.0.1 and
    no script fails; and at 1280 px in the light theme, test_chart_labels' check of the default pages."""
    phone = viewport != "desktop"
    context = browser.new_context(viewport=VIEWPORTS[viewport], is_mobile=phone, has_touch=phone)
    page = context.new_page()
    local = LocalOnly(page, server)
    try:
        sep = "&" if "?" in path else "?"
        page.goto(server + path + (f"{sep}theme=dark" if theme == "dark" else ""))
        page.locator(ready).first.wait_for(timeout=60_000)
        painted(page)  # the naming script runs on the next animation frame after each render
        where = f"{path} {viewport} {theme}"
        assert_accessible(page, where)
        if theme == "light" and path in CHART_PAGES_CHECKED_HERE:
            page.wait_for_timeout(600)  # Bokeh lays out and paints after the data arrives
            assert_charts_legible(page, f"{path} at {VIEWPORTS[viewport]['width']}px")
        local.check(where)
    finally:
        context.close()


def _active(page):
    return page.evaluate(DEEP_ACTIVE_JS)


def test_keyboard_walk_skip_link_focus_and_tokens(browser, server):
    context, page = _open(browser, server, "/admission", "desktop")
    try:
        page.wait_for_selector('[data-kv="log"]', timeout=60_000)
        page.wait_for_timeout(600)
        page.keyboard.press("Tab")
        first = _active(page)
        assert first["text"] == "Skip to the content" and first["outline"] >= 2, first
        page.keyboard.press("Enter")
        page.keyboard.press("Tab")
        after_skip = _active(page)
        assert after_skip["text"] == "Copy link", after_skip  # past the header, straight to the page's own tools
        # Walk on (through the views, round the end of the page, then the header and the settings):
        # every stop shows a focus ring, and the prompt slider speaks in tokens.
        handle = None
        for _ in range(80):
            page.keyboard.press("Tab")
            el = _active(page)
            if el["tag"] == "BODY":  # past the end of the page, before focus comes round to the top
                continue
            assert el["outline"] >= 2 or "inset" in (el["shadow"] or ""), f"focus not visible on {el}"
            assert el["tag"] != "BUTTON" or el["text"] or el["label"], f"unnamed button {el}"
            if el["role"] == "slider" and el["label"].startswith("Prompt tokens"):
                handle = el
                break
        assert handle is not None, "Tab never reached the prompt slider"
        assert handle["valuetext"] == "4,096 tokens", handle
        page.keyboard.press("ArrowRight")  # one eighth of a doubling up
        page.wait_for_function(f"() => {{ {DEEP_ACTIVE} return deepActive().getAttribute('aria-valuetext') === '4,467 tokens'; }}",
                               timeout=10_000)
    finally:
        context.close()


ANNOUNCED_JS = "() => document.querySelector('[data-kv=announce][role=status]').textContent"


def test_a_moves_result_is_announced_once_it_settles(browser, server):
    """WCAG 4.1.3: a screen reader hears what a move changed (the tiles are neither focused nor live
    regions): one polite status line, written once the numbers are still, naming only the changed
    tiles; loading the page announces nothing."""
    context, page = _open(browser, server, "/admission", "desktop")
    try:
        page.wait_for_selector('[data-kv="log"]', timeout=60_000)
        page.wait_for_timeout(1500)
        assert page.evaluate(ANNOUNCED_JS) == ""
        handle = page.locator('[aria-label^="Prompt tokens"][role="slider"]').first
        handle.focus()
        for _ in range(8):  # eight eighths of a doubling: 4,096 -> 8,192 tokens
            page.keyboard.press("ArrowRight")
        r = evaluate(Scenario(prompt_tokens=8192))
        page.wait_for_function(f"() => ({ANNOUNCED_JS})().includes('Sequences that fit: {r.max_sequences:,},')", timeout=15_000)
        said = page.evaluate(ANNOUNCED_JS)
        assert f"of {8192 + Scenario().output_tokens:,} tokens each" in said, said
        assert "per token" not in said.lower(), said  # bytes per token did not change, so it is not read out
        # On the phases panel a prompt move changes more tiles than are read out: the rest are counted.
        page.goto(server + "/phases")
        page.wait_for_selector('[data-kv="log"]', timeout=60_000)
        page.wait_for_timeout(1500)
        page.locator('[aria-label^="Prompt tokens"][role="slider"]').first.focus()
        page.keyboard.press("ArrowLeft")
        page.wait_for_function(f"() => / more numbers? changed\\.$/.test(({ANNOUNCED_JS})())", timeout=15_000)
        said = page.evaluate(ANNOUNCED_JS)
        assert said.startswith("Time to first token: ") and "Decode throughput: " in said, said  # the first three, in page order
        assert "Per stream" not in said, said
    finally:
        context.close()


# What a Windows contrast theme (forced colours) leaves of a slider's handle, a group's chosen
# button and a chart's background, against the page's own background.
FORCED_JS = f"""() => {{ {DEEP_ALL}
  const bg = (el) => getComputedStyle(el).backgroundColor;
  const one = (sel) => deepAll(sel)[0];
  return {{ page: bg(document.body), handle: bg(one('.noUi-handle')), chosen: bg(one('.bk-btn-group .bk-btn.bk-active')),
           other: bg(one('.bk-btn-group .bk-btn:not(.bk-active)')), charts: deepAll('.bk-Figure').map(bg) }}; }}"""


def test_a_contrast_theme_keeps_handles_chosen_buttons_and_chart_backgrounds(browser, server):
    """Forced colours drop backgrounds: a handle drawn by its background alone, a chosen button
    marked by its background and an inset shadow, and a chart's words (drawn for the page theme's
    white) on the contrast theme's black all vanished."""
    context = browser.new_context(viewport=VIEWPORTS["desktop"], forced_colors="active", color_scheme="dark")
    page = context.new_page()
    try:
        page.goto(server + "/admission")
        page.locator('[data-kv="log"]').first.wait_for(timeout=60_000)
        seen = page.evaluate(FORCED_JS)
    finally:
        context.close()
    assert seen["page"] == "rgb(0, 0, 0)", seen  # the dark contrast theme is in force
    assert seen["handle"] != seen["page"], seen
    assert seen["chosen"] != seen["other"], seen
    assert len(seen["charts"]) >= 2 and set(seen["charts"]) == {"rgb(255, 255, 255)"}, seen


def test_keyboard_reaches_the_lab_log_and_names_its_button_groups(browser, server):
    context, page = _open(browser, server, "/serving_lab", "desktop")
    try:
        page.wait_for_selector('[data-kv="lab-log"]', timeout=60_000)
        page.wait_for_timeout(600)
        groups = page.evaluate(f"""() => {{ {DEEP_ALL}
            return deepAll('.bk-btn-group').filter((g) => g.querySelectorAll('button').length > 1)
              .map((g) => [g.getAttribute('role'), g.getAttribute('aria-label'),
                           [...g.querySelectorAll('button')].filter(b => b.getAttribute('aria-pressed') === 'true').length]); }}""")
        assert len(groups) >= 5, groups
        for role, label, pressed in groups:
            assert role == "group" and label and pressed == 1, groups
        assert any(label == "Latency shown" for _, label, _ in groups), groups
        seen = []
        for _ in range(250):
            page.keyboard.press("Tab")
            el = _active(page)
            seen.append(el)
            if el and el["role"] == "log":
                break
        assert seen[-1] and seen[-1]["role"] == "log" and seen[-1]["label"] == "engine log", seen[-5:]
    finally:
        context.close()


BLOCK_CLIPBOARD_JS = """
// What an iframe without clipboard permission does: the async clipboard refuses, execCommand fails.
Object.defineProperty(navigator, 'clipboard', {value: {writeText: () => Promise.reject(new Error('blocked'))}});
document.execCommand = () => false;
"""


@pytest.mark.parametrize("blocked", [False, True], ids=["allowed", "blocked"])
def test_copy_link_confirms_on_the_button_or_shows_the_text(browser, server, blocked):
    context = browser.new_context(viewport=VIEWPORTS["desktop"])
    if blocked:
        context.add_init_script(BLOCK_CLIPBOARD_JS)
    else:
        context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server)
    page = context.new_page()
    try:
        page.goto(server + "/admission?prompt_tokens=32768")
        page.wait_for_selector('[data-kv="log"]', timeout=60_000)
        page.get_by_role("button", name="Copy link").click()
        if not blocked:
            page.get_by_role("button", name="Copied \u2713").wait_for(timeout=5_000)
            assert "prompt_tokens=32768" in page.evaluate("navigator.clipboard.readText()")
        else:
            page.get_by_role("button", name="Copy blocked: text below").wait_for(timeout=5_000)
            box = page.get_by_label("The browser blocked the clipboard", exact=False)
            box.wait_for(timeout=5_000)
            assert "prompt_tokens=32768" in box.input_value()
        page.get_by_role("button", name="Copy link").wait_for(timeout=5_000)  # the label comes back
    finally:
        context.close()


NOTES_JS = f"""() => {{ {DEEP_ALL} return deepAll('.kv-range-note').map((e) => e.textContent); }}"""


def test_an_out_of_range_exact_value_is_named_not_kept(browser, server):
    context, page = _open(browser, server, "/admission", "desktop")
    try:
        page.wait_for_selector('[data-kv="log"]', timeout=60_000)
        box = page.locator(".kv-w-prompt_tokens-exact input")
        box.fill("-5")
        box.press("Enter")
        page.wait_for_function(f"() => ({NOTES_JS})().length === 1", timeout=10_000)
        assert page.evaluate(NOTES_JS) == ["-5 is outside the allowed 1 to 2,097,152; kept 4,096."]
        assert box.input_value() == "4096" and box.get_attribute("aria-invalid") == "true"
        box.fill("8192")
        box.press("Enter")
        page.wait_for_function(f"() => ({NOTES_JS})().length === 0", timeout=10_000)
        page.wait_for_function("() => window.location.search === '?prompt_tokens=8192'", timeout=10_000)  # the value is in use
    finally:
        context.close()
