"""The site's front page: a card per panel, each a real link."""

from __future__ import annotations

import panel as pn

from ..viewlayer.config_paste import parse_config_text
from ..viewlayer.html import BASE_CSS, esc
from ..views.state import Settings
from ..views.urlstate import apply_values, encode_query, parse_query
from .a11y import KvTemplate
from .page import HEADER_COLOR, SITE
from .share import PAGES, nav_links, page_href, theme_button

LANDING_CSS = BASE_CSS + """
.kv-cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(260px, 1fr)); gap: 16px; }
.kv-card { display: block; padding: 18px 20px; border-radius: 12px; border: 1px solid var(--kv-border);
           background: var(--kv-surface); color: var(--kv-ink); text-decoration: none; border-top: 6px solid #0072B2; }
.kv-card:hover, .kv-card:focus { outline: 3px solid #56B4E9; }
.kv-card h3 { margin: 0 0 6px; font-size: 1.25rem; }
.kv-card p { margin: 0; opacity: 0.85; }
.kv-intro { font-size: 1.1rem; max-width: 60em; line-height: 1.5; }
.kv-card.kv-lesson-card { border-top-color: #009E73; }
.kv-section-title { margin: 26px 0 10px; font-size: 1.3rem; }
"""


def _carried_query() -> str:
    """A link to the front page may carry a state; pass it on to the panels (invalid values dropped)."""
    values, _ = parse_query(pn.state.location.search if pn.state.location is not None else "")
    settings = Settings()
    apply_values(settings, values)
    return encode_query(settings, parse_config_text(settings.config_text)[0])[0]


def build_landing(course_map_html: str = "", course_css: list[str] | None = None) -> KvTemplate:
    """The front page: a card per panel, then the course map. The map's HTML and CSS come from the
    lessons (lessons/render.py), which sit above app: the front page's script (kvlab/pages/index.py)
    hands them in. Without a map, the page has no Lessons section."""
    pages = PAGES
    def cards(entries, extra_class=""):
        return "".join(f'<a class="kv-card{extra_class}" href="{esc(page_href(slug, theme=True))}"><h3>{esc(title)}</h3>'
                       f'<p>{esc(text)}</p></a>' for slug, title, text in entries)
    intro = ("Generating a token reads a lot of memory and does very little arithmetic. These panels simulate "
             "the decision a serving engine makes about how many requests it can hold in GPU memory, and what "
             "each step of prefill and decode costs. Every number comes from kvlab's simulator; every state is a link.")
    body = pn.pane.HTML(f'<p class="kv-intro">{esc(intro)}</p><h2 class="kv-section-title">Panels</h2>'
                        f'<div class="kv-cards">{cards(pages)}</div>'
                        + (f'<h2 class="kv-section-title">Lessons</h2>{course_map_html}' if course_map_html else ""),
                        stylesheets=[LANDING_CSS, *(course_css or [])], sizing_mode="stretch_width")
    return KvTemplate(
        title=f"{SITE}: the KV cache, simulated", header=[nav_links("index", pages, query=_carried_query()), theme_button()],
        main=[body], header_background=HEADER_COLOR, theme="dark" if pn.config.theme == "dark" else "default")
