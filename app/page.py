"""A panel inside the site's page template: header with navigation, sidebar with the controls,
sharing tools above the views.

The template is Bootstrap because it ships its CSS and JS with Panel: FastListTemplate and
MaterialTemplate link Google Fonts, which would make the page reach outside 127.0.0.1 (and
block on it offline). The page reads its starting state from the URL, so a copied link reopens
exactly the state it was copied from.
"""

from __future__ import annotations

import panel as pn

from .html import BASE_CSS
from .panels import KVPanel, make_store
from .share import nav_links, share_buttons, theme_button
from .urlstate import parse_query

HEADER_COLOR = "#1F3A5F"  # deep blue: white nav text on it passes WCAG AA in both themes
SITE = "kvlab"
# Without it a phone lays the page out 980 px wide and shrinks it to fit: unreadable numbers.
META_VIEWPORT = "width=device-width, initial-scale=1"

# Bootstrap's template keeps a fixed-width sidebar beside the main area at every width; on a
# phone that squeezes the numbers into a sliver. Below 768 px, stack them instead: the numbers
# first (what a slider move changes), the controls after, each full width, one scroll.
PAGE_CSS = """
@media (max-width: 767.98px) {
  #container { height: auto !important; min-height: 100vh; overflow: visible !important; }
  #content { flex-direction: column; flex-wrap: nowrap; overflow: visible !important; height: auto; }
  #main { order: 1; overflow: visible; padding: 8px 4px 12px 4px; }
  #sidebar { order: 2; width: 100% !important; height: auto; overflow: visible; border-right: none;
             border-top: 1px solid var(--bs-border-color); }
  #header .title { font-size: 1.1em; white-space: normal; line-height: 1.3em; }
  #header-items { flex-wrap: wrap; white-space: normal; margin-left: 0; }
}
"""


def _query() -> str:
    loc = pn.state.location
    return (loc.search or "") if loc is not None else ""


def _lead(text: str) -> pn.pane.HTML:
    return pn.pane.HTML(f'<p class="kv-caption">{text}</p>', stylesheets=[BASE_CSS], sizing_mode="stretch_width",
                        margin=(8, 10, 0, 10))


def _address_bar(store, slug: str):
    bar = nav_links(slug, query=store.query)
    # A plain watcher, not a param reference: references cost a resolution pass on every change.
    store.param.watch(lambda event: setattr(bar, "query", event.new), "query")
    return bar


def build_page(panel_cls: type[KVPanel], lead: str) -> pn.template.BootstrapTemplate:
    values, notices = parse_query(_query())
    store = make_store(values, notices, curves=panel_cls.curves)
    panel = panel_cls(store=store)
    toolbar = pn.FlexBox(_lead(lead), *share_buttons(panel.title), flex_wrap="wrap", align_items="center",
                         sizing_mode="stretch_width", margin=0)
    toolbar[0].styles = {"flex": "1 1 320px"}
    template = pn.template.BootstrapTemplate(
        title=f"{SITE} \u00b7 {panel.title}",
        header=[_address_bar(store, panel.slug), theme_button()],
        sidebar=[panel.controls],
        main=[toolbar, panel.main],
        header_background=HEADER_COLOR,
        meta_viewport=META_VIEWPORT,
        sidebar_width=340,
        busy_indicator=None,  # its spinner would add two messages to every slider move
        theme="dark" if pn.config.theme == "dark" else "default",
    )
    template.config.raw_css = [PAGE_CSS]
    return template
