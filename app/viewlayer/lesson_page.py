"""A lesson's live views in the static site: one session per live view, behind one page.

At build time each live view of a lesson page gets a number `i`, and its Bokeh models the names
`lv<i>:<name>` (`lv0:w.kv_dtype`, `lv0:kv_formula.pane`); the page carries each view's spec (its
kind, views, starting state and the model names it has). In the browser a steady live view is a
`PanelPage` over just its views, from its state; a lab live view is a `LabPage` from its preset
and state. A change to `lv<i>:...` goes to session `i`, and its patch comes back under the same
prefix, restricted to the models that live view has. Lessons keep their own link (the answers):
no query is returned.
"""

from __future__ import annotations

import re

from .lab_page import LabPage
from .lab_settings import merge_values
from .lab_url import check_value
from .pages import PanelPage

_PREFIX = re.compile(r"lv(\d+):(.+)")
LAB_VIEW_NAMES = {"summary": "lab_summary", "distribution": "lab_distribution", "ttft_by_prompt": "lab_ttft_by_prompt",
                  "timeline": "lab_timeline", "sweep": "lab_sweep", "log": "lab_log"}


def lab_session(state: dict, views: tuple[str, ...]) -> LabPage:
    """A LabPage from a preset plus `state` (as lessons.render builds a lab live view), showing `views`."""
    page = LabPage()
    changes = {}
    for key, value in state.items():  # as lessons.render sets them on the server (a preset first)
        ok, why = check_value(key, value)
        changes[key] = value if why else ok
    page.values = merge_values(page.values, changes)
    page.views = tuple(LAB_VIEW_NAMES[v] for v in views)
    return page


class LessonPage:
    """Every live view of one lesson page. Answers start/change/tick/click/upload like a LabPage."""

    def __init__(self, specs: list[dict]):
        self.sessions = []
        self.names: list[set[str]] = []
        for spec in specs:
            views = tuple(spec["views"])
            if spec["kind"] == "lab":
                session = lab_session(spec["state"], views)
            else:
                session = PanelPage("lesson", views=views, state=spec["state"])
            self.sessions.append(session)
            self.names.append(set(spec.get("names", ())))

    @property
    def busy(self) -> bool:
        return any(getattr(s, "busy", False) for s in self.sessions)

    def _merge(self, outs: dict[int, dict]) -> dict:
        patch = {}
        for i, out in outs.items():
            for name, props in out.get("patch", {}).items():
                if name in self.names[i]:
                    patch[f"lv{i}:{name}"] = props
        error = next((o["error"] for o in outs.values() if o.get("error")), None)
        return {"patch": patch, "query": None, "busy": self.busy, "error": error}

    def start(self) -> dict:
        return self._merge({i: s.start() for i, s in enumerate(self.sessions)})

    def tick(self) -> dict:
        return self._merge({i: s.tick() for i, s in enumerate(self.sessions) if getattr(s, "busy", False)})

    def _route(self, widget: str):
        m = _PREFIX.fullmatch(widget)
        if m is None or int(m.group(1)) >= len(self.sessions):
            return None, widget
        return int(m.group(1)), m.group(2)

    def change(self, widget: str, value) -> dict:
        i, name = self._route(widget)
        if i is None:
            return self._merge({})
        return self._merge({i: self.sessions[i].change(name, value)})

    def click(self, widget: str) -> dict:
        i, name = self._route(widget)
        if i is None or not hasattr(self.sessions[i], "click"):
            return self._merge({})
        return self._merge({i: self.sessions[i].click(name)})

    def models(self) -> dict[str, dict]:
        """Every live view's models (no diff), under their page names: what the tests compare."""
        out = {}
        for i, s in enumerate(self.sessions):
            for name, props in s.models().items():
                if name in self.names[i]:
                    out[f"lv{i}:{name}"] = props
        return out
