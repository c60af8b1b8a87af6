"""The teaching figures on their lesson pages in Chromium (issue 34): after the picks each figure is
drawn, every panel an image named by what it shows with sim's numbers; at 320 px in the dark theme
no figure reaches past the screen's edge, its words take the dark theme's ink, and axe finds no
critical or serious violation on the answered page."""

import re
from html import escape, unescape

import pytest
from kvlab.lessons import course

from .axe import assert_accessible
from .support import DEEP_ALL

pytestmark = pytest.mark.browser

FIGURES = {"A2": "cache-grid", "A5": "block-map", "C3": "step-timeline"}

# Each figure's panels: their accessible names, and the luminance of their words' fill (0 black, 1 white).
PANELS_JS = "(key) => {" + DEEP_ALL + """
  const lum = (c) => { const [r, g, b] = c.match(/\\d+/g).map(Number); return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255; };
  return deepAll(`[data-kv="fig-${key}"] svg[role="img"]`).map((svg) => ({
    name: svg.getAttribute('aria-label'), width: svg.getBoundingClientRect().width,
    right: Math.max(svg.getBoundingClientRect().right, svg.closest('figure').getBoundingClientRect().right,
                    ...[...svg.closest('figure').querySelectorAll('*')].map((e) => e.getBoundingClientRect().right)),
    ink: lum(getComputedStyle(svg.querySelector('text')).fill) })); }"""


def test_each_figure_is_named_and_accessible_at_320_px_in_the_dark_theme(browser, server):
    context = browser.new_context(viewport={"width": 320, "height": 800}, is_mobile=True, has_touch=True)
    page = context.new_page()
    try:
        for code, key in FIGURES.items():
            lesson = course.lesson(code)
            picks = "&".join(f"{s.prediction.key}=0" for s in lesson.steps)
            page.goto(f"{server}/{lesson.slug}?{picks}&theme=dark")
            page.locator(f'[data-kv="fig-{key}"]').first.wait_for(timeout=60_000)
            step = next(s for s in lesson.steps if s.figure)
            panels = page.evaluate(PANELS_JS, key)
            assert panels and all(escape(p["name"]) in step.figure for p in panels), panels
            for p in panels:
                assert page.get_by_role("img", name=p["name"], exact=True).first.is_visible(), p["name"]
                # Fits the phone (the figure and everything in it), light words on the dark page.
                assert 200 < p["width"] and p["right"] <= 320 and p["ink"] > 0.7, p
            page.wait_for_timeout(600)  # the naming script runs on the next animation frame after each render
            assert_accessible(page, f"{code} at 320 px, dark, answered")
            if key == "step-timeline":
                _select_steps(page, step.figure)
    finally:
        context.close()


def _select_steps(page, figure: str) -> None:
    """The step timeline's steps are selected by a tap on one, then from the keyboard on the line that names
    it (role="slider", its value the step's number): the line says what sim's step did, as the figure writes it."""
    says = [unescape(m) for m in re.findall(r'data-kv-says="([^"]*)"', figure)]
    panel = page.locator('[data-kv="fig-step-timeline"] .kv-fig-panel').first
    pick = panel.get_by_role("slider")
    shown = int(pick.get_attribute("aria-valuemax"))
    first = int(pick.get_attribute("aria-valuenow"))
    assert pick.inner_text() == says[first - 1]  # the step the long prompt enters, to begin with
    panel.locator('[data-kv-step="3"]').tap()
    assert pick.get_attribute("aria-valuenow") == "3" and pick.inner_text() == says[2] == pick.get_attribute("aria-valuetext")
    assert pick.evaluate("(el) => el.getRootNode().activeElement === el")  # the keyboard goes on from there
    page.keyboard.press("ArrowRight")
    assert pick.get_attribute("aria-valuenow") == "4" and pick.inner_text() == says[3]
    page.keyboard.press("End")
    assert pick.get_attribute("aria-valuenow") == str(shown) and pick.inner_text() == says[shown - 1]
    assert panel.locator(".kv-picked").get_attribute("data-kv-step") == str(shown)  # drawn outlined
