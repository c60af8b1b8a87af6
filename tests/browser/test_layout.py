"""Readable on a phone-width window, operable from the keyboard alone."""

import pytest
from kvlab.sim import Scenario, evaluate

pytestmark = pytest.mark.browser

DEEP_ACTIVE_JS = """() => {
  let el = document.activeElement;
  while (el && el.shadowRoot && el.shadowRoot.activeElement) { el = el.shadowRoot.activeElement; }
  return el ? (el.className || el.tagName) + '' : '';
}"""


@pytest.mark.parametrize("path", ["/admission", "/phases"])
def test_phone_width_has_no_sideways_scroll(browser, server, path):
    context = browser.new_context(viewport={"width": 390, "height": 844}, device_scale_factor=2, is_mobile=True, has_touch=True)
    page = context.new_page()
    page.goto(server + path)
    page.wait_for_selector('[data-kv="log"]')
    headline = page.locator('[data-kv="max_sequences"], [data-kv="ttft"]').first
    # the headline number is within the 390 px (after the layout settles) and larger than body text
    page.wait_for_function("""(el) => { const r = el.getBoundingClientRect(); return r.left >= 0 && r.right <= 390; }""",
                           arg=headline.element_handle(), timeout=10_000)
    assert headline.bounding_box()["height"] >= 24
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 1, f"{overflow}px of sideways scroll at 390px"
    context.close()


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


def _assert(condition: bool) -> None:
    assert condition
