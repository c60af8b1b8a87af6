"""The browser's entry point: the session object for a page of the site. Lives apart from `pages` so
that `lab_page` and `lesson_page` (which build on `pages.PanelPage`) are imported only for a page
that needs them, without an import cycle."""

from __future__ import annotations

import json

from .pages import PanelPage


def page_for(page: str, search: str = "", live=None, opening: str | None = None):
    """The browser's session object for a live page: `PanelPage` for the two panels, `LabPage` for
    the serving lab (`opening`: the site's copy of its opening run, lab_page.opening_json),
    `LessonPage` for a lesson's live views (`live`: their specs from the build). All answer
    start(), change() and tick() (while `busy`); the lab and the lessons also click() and upload()."""
    if live:
        from .lesson_page import LessonPage

        return LessonPage(json.loads(live) if isinstance(live, str) else live)
    if page == "serving_lab":
        from .lab_page import LabPage

        return LabPage(search, opening)
    return PanelPage(page, search)
