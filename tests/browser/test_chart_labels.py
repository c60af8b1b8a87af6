"""No chart word is cut off or drawn over another: every figure title, Label and LabelSet text of
the panels and the serving lab, measured from BokehJS's own layout at 1280 px, 1440 px and on a
390 px phone (tests/browser/chart_boxes.py). Point labels drawn as text glyphs are not measured."""

from __future__ import annotations

import pytest

from .chart_boxes import BOXES_JS, problems

pytestmark = pytest.mark.browser

PAGES = [
    ("/admission", '[data-kv="log"]'),
    ("/admission?model=qwen3-32b&prompt_tokens=32768", '[data-kv="log"]'),
    ("/phases", '[data-kv="log"]'),
    ("/phases?model=qwen3-14b&concurrency=64&tp=2", '[data-kv="log"]'),
    ("/serving_lab", '[data-kv="lab-log"]'),
]
WIDTHS = [1280, 1440, 390]


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize(("path", "ready"), PAGES, ids=[p for p, _ in PAGES])
def test_chart_words_fit_and_do_not_overlap(browser, server, path, ready, width):
    phone = width < 500
    context = browser.new_context(viewport={"width": width, "height": 844 if phone else 900}, is_mobile=phone, has_touch=phone)
    page = context.new_page()
    try:
        page.goto(server + path)
        page.locator(ready).first.wait_for(timeout=60_000)
        page.wait_for_timeout(1200)  # Bokeh lays out and paints after the data arrives
        boxes = page.evaluate(BOXES_JS)
        assert sum(b["kind"] == "title" for b in boxes) >= 2, boxes  # the charts were found and measured
        found = problems(boxes)
        assert not found, f"{path} at {width}px:\n" + "\n".join(found)
    finally:
        context.close()
