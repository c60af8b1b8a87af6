"""The instructor's tools on the built static site, offline (served from 127.0.0.1, every other host
blocked), in a real Chromium: the same walk as under `kvlab serve` (tests/browser/instructor_flow.py),
where the site's reveal script records each pick and its bridge shows ?step=<key> alone; and the
site's answers.json is the committed key."""

from __future__ import annotations

import json

import pytest
from kvlab.lessons.answer_key import ANSWERS_FILE, comparable
from kvlab.sim import __version__

from devtools import pyodide as harness
from tests.browser.axe import BLOCKING, describe
from tests.browser.instructor_flow import STEP, assert_walk, walk

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_the_sites_answers_json_is_the_committed_key(real_site):
    site, _, _ = real_site
    published = json.loads((site / "answers.json").read_text(encoding="utf-8"))
    assert published["version"] == __version__
    assert comparable(published) == json.loads(ANSWERS_FILE.read_text(encoding="utf-8"))


@harness.in_own_thread
def _walk_site(site, tmp_dir) -> tuple[dict, list[str]]:
    from playwright.sync_api import sync_playwright

    outside: list[str] = []
    with harness.serve_directory(site) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=harness.CHROMIUM, args=harness.CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": 1300, "height": 900})
            context.grant_permissions(["clipboard-read", "clipboard-write"], origin=base.rstrip("/"))

            def route(r):
                if r.request.url.startswith(("http://127.0.0.1", "data:", "blob:")):
                    r.continue_()
                else:
                    outside.append(r.request.url)
                    r.abort()
            context.route("**/*", route)

            def ready(page):
                page.wait_for_function("document.body.dataset.kvlabState === 'ready'", timeout=60_000)
            return walk(context, lambda slug, query="": f"{base}{slug}.html{query}", ready, tmp_dir), outside
        finally:
            browser.close()


@pytest.fixture(scope="module")
def walked(real_site, tmp_path_factory):
    site, _, _ = real_site
    return _walk_site(site, tmp_path_factory.mktemp("files"))


def test_picks_export_and_read_back_offline(walked):
    out, outside = walked
    assert outside == []
    assert_walk(out, step_link_ends=f"lesson_{STEP[0].lower()}.html?step=")


def test_the_key_page_with_answers_is_axe_clean_at_320_px(walked):
    out, _ = walked
    for theme, violations in out["axe"].items():
        assert not [v for v in violations if v["impact"] in BLOCKING], f"{theme}: {describe(violations)}"
    assert out["wide_px"] <= 320
