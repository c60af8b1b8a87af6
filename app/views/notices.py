"""Everything the student should read before the numbers: ignored link values, input errors,
and capacity problems (weights that do not fit, a request longer than the pool)."""

from __future__ import annotations

from ..viewlayer.notices import view_notices
from .base import StoreView, html_pane


class Notices(StoreView):
    watched = ("result", "issues", "url_notices", "link_note")
    view_name = "notices"

    def build(self):
        self.pane = self.parts["pane"] = html_pane(margin=(0, 10))
        return self.pane

    def data(self) -> dict:
        st = self.store
        return view_notices(st.result, st.issues, st.url_notices, st.link_note)
