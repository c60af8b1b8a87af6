"""The instructor's tools under `kvlab serve`, in a real Chromium (the walk: instructor_flow.py; the
static site's: tests/site/test_site_instructor.py): picks kept as they are made, "Copy my answers" and
"Download my answers", the key page marking them, hostile files refused, one step alone in embed mode,
and axe on the key page with the answers shown at 320 px."""

import pytest

from .axe import describe
from .instructor_flow import STEP, assert_walk
from .support import off_host

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def walked(browser, server, tmp_path_factory):
    from .instructor_flow import walk

    context = browser.new_context(viewport={"width": 1300, "height": 900})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server)
    requested: list[str] = []  # every request of the walk
    context.on("request", lambda r: requested.append(r.url))
    try:
        out = walk(context, lambda slug, query="": f"{server}/{slug}{query}",
                   lambda page: page.locator(".kv-lesson >> visible=true").first.wait_for(timeout=30_000),
                   tmp_path_factory.mktemp("files"))
        return {**out, "outside": off_host(requested, server)}
    finally:
        context.close()


def test_picks_export_and_read_back_on_the_key_page(walked):
    """The walk, offline as the static site's: no request of it leaves 127.0.0.1."""
    assert walked["outside"] == []
    assert_walk(walked, step_link_ends=f"/lesson_{STEP[0].lower()}?step=")


def test_the_key_page_with_answers_is_axe_clean_at_320_px(walked):
    for theme, violations in walked["axe"].items():
        assert not [v for v in violations if v["impact"] in ("critical", "serious")], f"{theme}: {describe(violations)}"
    assert walked["wide_px"] <= 320
