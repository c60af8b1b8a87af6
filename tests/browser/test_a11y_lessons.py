"""Every lesson passes axe-core (no critical, serious or moderate violation) at 1280 px in both themes
and at 320 px in the dark theme: test_a11y checks the first lesson so, and test_screenshots every
lesson at 390 and 320 px in the light theme; this covers the rest. On the same loads, no request
leaves 127.0.0.1 and no script fails.

The lessons share one template and renderer, but each has its own content (tables, equations,
figures, live views, choices), and a colour that passes in one theme can fail in the other. The
module is a unit of work of its own (tests/conftest.py, MODULES_APART), so pytest-xdist can run it
in the other worker beside the browser tests' group (starting its own server and Chromium there)."""

from __future__ import annotations

import pytest

from .axe import PAGES, VIEWPORTS, assert_accessible
from .support import LocalOnly, painted
from .test_a11y import FIRST_LESSON

pytestmark = pytest.mark.browser

LESSONS = [(path, ready) for path, ready in PAGES if path.startswith("/lesson_") and path != FIRST_LESSON]


def _load(browser, server, path: str, ready: str, theme: str):
    context = browser.new_context(viewport=VIEWPORTS["desktop"])
    page = context.new_page()
    local = LocalOnly(page, server)
    page.goto(server + path + ("?theme=dark" if theme == "dark" else ""))
    page.locator(ready).first.wait_for(timeout=60_000)
    painted(page)
    return context, page, local


@pytest.mark.parametrize(("path", "ready"), LESSONS, ids=[p for p, _ in LESSONS])
def test_every_lesson_passes_axe_in_both_themes_at_1280_and_320_px(browser, server, path, ready):
    for theme in ("light", "dark"):
        context, page, local = _load(browser, server, path, ready, theme)
        try:
            assert_accessible(page, f"{path} desktop {theme}")
            if theme == "dark":  # the dark theme's narrow window on the same load (light: test_screenshots)
                page.set_viewport_size(VIEWPORTS["narrow"])
                page.wait_for_timeout(300)  # the page lays itself out again for the narrower window
                overflow = page.evaluate("document.documentElement.scrollWidth") - VIEWPORTS["narrow"]["width"]
                assert overflow <= 1, f"{path}: {overflow}px of sideways scroll at 320 px in the dark theme"
                assert_accessible(page, f"{path} 320 px {theme}")
            local.check(f"{path} {theme}")
        finally:
            context.close()
