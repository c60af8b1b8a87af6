"""No chart word is cut off or drawn over another, and every legend entry shows its key: every
chart title, Label, LabelSet and point label (a Text glyph) and every legend of the panels and the
serving lab, measured from BokehJS's own layout at 1280 px, 1440 px and 320 px, WCAG 1.4.10's
reflow width (tests/browser/chart_boxes.py; the default pages are measured at 1280 px by test_a11y
and at 390 and 320 px by test_screenshots, on loads they make anyway). Whether a line runs through a
word is not measured."""

from __future__ import annotations

import pytest

from .axe import VIEWPORTS
from .chart_boxes import CHART_PAGES_CHECKED_HERE, assert_charts_legible

pytestmark = pytest.mark.browser

PAGES = [
    ("/admission", '[data-kv="log"]'),
    ("/admission?model=qwen3-32b&prompt_tokens=32768", '[data-kv="log"]'),
    ("/phases", '[data-kv="log"]'),
    ("/phases?model=qwen3-14b&concurrency=64&tp=2", '[data-kv="log"]'),
    ("/serving_lab", '[data-kv="lab-log"]'),
]
assert {p for p, _ in PAGES} >= CHART_PAGES_CHECKED_HERE
WIDTHS = [1280, 1440, 320]  # 320: WCAG 1.4.10 (reflow), narrower than any common phone


def _cases():
    """Every page at every width, less the default pages at 1280 and 320 px: test_a11y (1280 px, light)
    and test_screenshots (the phone, then 320 px) run this same check on their loads of those pages."""
    for path, ready in PAGES:
        for width in WIDTHS:
            if path in CHART_PAGES_CHECKED_HERE and width in (VIEWPORTS["desktop"]["width"], 320):
                continue
            yield pytest.param(path, ready, width, id=f"{path}-{width}")


@pytest.mark.parametrize(("path", "ready", "width"), list(_cases()))
def test_chart_words_fit_and_do_not_overlap(browser, server, path, ready, width):
    phone = width < 500
    context = browser.new_context(viewport={"width": width, "height": 844 if phone else 900}, is_mobile=phone, has_touch=phone)
    page = context.new_page()
    try:
        page.goto(server + path)
        page.locator(ready).first.wait_for(timeout=60_000)
        page.wait_for_timeout(1200)  # Bokeh lays out and paints after the data arrives
        assert_charts_legible(page, f"{path} at {width}px")
    finally:
        context.close()
