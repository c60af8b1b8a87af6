"""A page found by the build's glob runs under CPython exactly as the build runs it (the build lays every
page out once, in each theme), on the test's own page (tests/site/fixtures/pages). The app's pages
are run by the build itself, which fails naming the page and its traceback (the real_site fixture
asserts the build's success; test_build_site.py builds a broken page); running each of them here
again took about 26 s of the suite."""

from __future__ import annotations

import signal

import pytest
from kvlab.app.pages import BUILD_ENV_VAR
from kvlab.app.site.discover import discover_pages, run_page

from tests.site.conftest import FIXTURE_PAGES

PAGES = discover_pages((FIXTURE_PAGES,))


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_page_imports_and_runs_under_cpython(page, monkeypatch):
    monkeypatch.setenv(BUILD_ENV_VAR, "1")  # as `kvlab build-site` sets it: lessons lay out their reveals

    def too_slow(*_):  # a page that never finishes would stop the whole suite, not fail
        raise TimeoutError(f"{page.source} did not finish within 120 s")

    previous = signal.signal(signal.SIGALRM, too_slow)
    signal.alarm(120)
    try:
        doc = run_page(page.source)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert doc.roots, f"{page.source} published nothing"
    # The pre-rendered view is this document: more than an empty layout.
    assert sum(len(list(root.references())) for root in doc.roots) > 3
