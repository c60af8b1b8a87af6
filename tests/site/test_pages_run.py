"""Each page the site builds runs under CPython exactly as the build runs it (the build lays every
page out once, in each theme); pages are discovered by the build's own glob."""

from __future__ import annotations

import pytest
from kvlab.app.build_site import DEFAULT_PAGE_GLOBS, discover_pages, run_page

from tests.site.conftest import FIXTURE_PAGES

PAGES = discover_pages(DEFAULT_PAGE_GLOBS) + discover_pages((FIXTURE_PAGES,))


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_page_imports_and_runs_under_cpython(page):
    doc = run_page(page.source)
    assert doc.roots, f"{page.source} published nothing"
    # The pre-rendered view is this document: more than an empty layout.
    assert sum(len(list(root.references())) for root in doc.roots) > 3
