"""Each page the site builds runs under CPython exactly as the build runs it (the build lays every
page out once, in each theme); pages are discovered by the build's own glob."""

from __future__ import annotations

import signal

import pytest
from kvlab.app.site.discover import BUILD_ENV_VAR, DEFAULT_PAGE_GLOBS, discover_pages, run_page

from tests.site.conftest import FIXTURE_PAGES

PAGES = discover_pages(DEFAULT_PAGE_GLOBS) + discover_pages((FIXTURE_PAGES,))


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
