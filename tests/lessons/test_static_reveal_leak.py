"""A lesson page built for the static site (each choice revealed by a JS click callback) is freed
once dropped. Panel keeps every JS callback in a WeakKeyDictionary keyed by its button; a button
named in its own or a sibling's callback args was reachable from its own value, so no lesson's
buttons (nor the page around them) were ever freed: the site build grew with every page built."""

from __future__ import annotations

import gc

import pytest

pn = pytest.importorskip("panel")

from kvlab.lessons.course import lesson  # noqa: E402
from kvlab.lessons.render import lesson_page  # noqa: E402
from panel.links import Callback  # noqa: E402


def test_static_lesson_page_is_freed(monkeypatch):
    monkeypatch.setenv("KVLAB_BUILD_SITE", "1")
    gc.collect()
    before = len(Callback.registry)
    page = lesson_page(lesson("A1"))
    assert len(Callback.registry) > before  # the static reveal's click callbacks were registered
    del page
    gc.collect()
    assert len(Callback.registry) == before, "a dropped lesson page's buttons are still referenced"
