"""Everything the student should read before the numbers: ignored link values, input errors,
and capacity problems (weights that do not fit, a request longer than the pool)."""

from __future__ import annotations

from .. import html
from .base import StoreView, html_pane

EMPTY_CONFIG = "is empty"


class Notices(StoreView):
    watched = ("result", "issues", "url_notices", "link_note")

    def build(self):
        self.pane = html_pane(margin=(0, 10))
        return self.pane

    def refresh(self) -> None:
        st = self.store
        parts = []
        if st.url_notices:
            parts.append(html.notice("warn", "Some settings in the link were ignored; the rest were kept.",
                                     st.url_notices, "url_notices"))
        issues = st.issues
        if len(issues) == 1 and issues[0]["field"] == "config" and issues[0]["message"].startswith(EMPTY_CONFIG):
            parts.append(html.notice("info", "Paste a Hugging Face config.json in the sidebar.",
                                     ["Its num_hidden_layers, num_key_value_heads, head_dim and the MLP sizes "
                                      "decide everything shown here."], "config_prompt"))
        elif issues:
            parts.append(html.notice("error", "This input cannot be evaluated; the other settings are unchanged.",
                                     [f"{i['field']}: {i['message']}" for i in issues], "errors"))
        if st.result is not None and st.result.warnings:
            parts.append(html.notice("warn", "What stops this configuration", st.result.warnings, "warnings"))
        if st.link_note:
            parts.append(html.notice("info", "About the link", [st.link_note], "link_note"))
        self.pane.object = "".join(parts)
        self.pane.visible = bool(parts)
