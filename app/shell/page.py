"""A panel inside the site's page template: header with navigation, sidebar with the controls,
sharing tools above the views.

The template is Bootstrap because it ships its CSS and JS with Panel: FastListTemplate and
MaterialTemplate link Google Fonts, which would make the page reach outside 127.0.0.1 (and
block on it offline). The page reads its starting state from the URL, so a copied link reopens
exactly the state it was copied from.
"""

from __future__ import annotations

import panel as pn

from ..viewlayer.html import BASE_CSS
from ..views.panels import KVPanel, make_store
from ..views.urlstate import parse_query
from .a11y import KvTemplate
from .share import nav_links, share_buttons, theme_button

HEADER_COLOR = "#1F3A5F"  # deep blue: white nav text on it passes WCAG AA in both themes
SITE = "kvlab"
# A layout below a long page's first screen: the static site builds its contents once the page is
# up (app/site/, defer_later_sections); `kvlab serve` shows it as any other.
LATER_CLASS = "kv-later"


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


def build_page(panel_cls: type[KVPanel], lead: str) -> KvTemplate:
    values, notices = parse_query(_query())
    store = make_store(values, notices, curves=panel_cls.curves)
    panel = panel_cls(store=store)
    toolbar = pn.FlexBox(_lead(lead), *share_buttons(panel.title), flex_wrap="wrap", align_items="center",
                         sizing_mode="stretch_width", margin=0)
    toolbar[0].styles = {"flex": "1 1 320px"}
    return KvTemplate(
        title=f"{SITE} \u00b7 {panel.title}",
        header=[_address_bar(store, panel.slug), theme_button()],
        sidebar=[panel.controls],
        main=[toolbar, panel.main],
        header_background=HEADER_COLOR,
        sidebar_width=340,
        theme="dark" if pn.config.theme == "dark" else "default",
    )
