"""What every page needs to be usable from a keyboard, with a screen reader and on a phone.

- `KvTemplate`: Panel's Bootstrap template with a skip link, the page title as its one <h1>, the
  controls in an <aside> and the views in <main> (app/templates/kvlab.html), plus a small script
  (app/templates/a11y.js) that names the parts of Bokeh's widgets that have no name and announces
  log2 sliders in tokens.
- `KvDesign`: Bootstrap's design plus `FOCUS_CSS` in every component's shadow root, so focus is
  visible everywhere (the chosen option of a button group included) and a button group too wide
  for its place wraps instead of hiding its last buttons.
- `PAGE_CSS`: the document-level styles: the skip link, the theme's link, code and focus colours,
  and the phone layout.
"""

from __future__ import annotations

from pathlib import Path

import panel as pn
from panel.io.resources import parse_template
from panel.theme import Bootstrap
from panel.theme.base import Inherit
from panel.viewable import Viewable

from ..viewlayer.html import esc, shipped_css

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"

# Colours that reach AA contrast on each theme's background (#ffffff light, #212529 / #2b3035 dark):
# focus rings need 3:1 against what they surround, link and code text 4.5:1. A control's outline
# (--kv-control-border: text and number boxes, selects, slider rails, outlined buttons) and a
# slider's handle (--kv-handle) need 3:1 too (WCAG 2.1, 1.4.11): Bootstrap's own borders are
# 1.3:1 (#dee2e6 on white) and 1.9:1 (#495057 on #212529), and its handle 3.0:1 on the dark rail.
# Text on a --kv-good or --kv-bad fill is --kv-on-state: 6.5:1 and 6.4:1 light, 8.6:1 and 7.9:1 dark.
THEME_VARS = """
:root { --kv-focus: #0B57D0; --kv-link: #0B57D0; --kv-link-visited: #6A3FB5; --kv-code: #1F2328; --kv-code-bg: #EFF1F3;
        --kv-good: #006B4F; --kv-bad: #A83A00; --kv-on-state: #FFFFFF; --kv-control-border: #6E7781; --kv-handle: #0D6EFD; }
[data-bs-theme="dark"] { --kv-focus: #FFD24D; --kv-link: #8AB4F8; --kv-link-visited: #D7AEFB; --kv-code: #F0F3F6;
                          --kv-code-bg: #343A40; --kv-good: #5FD4A9; --kv-bad: #FFA070; --kv-on-state: #1F2328;
                          --kv-control-border: #8B949E; --kv-handle: #6EA8FE; }
"""

# Inside every component's shadow root (Design modifiers): custom properties pierce shadow DOM, so
# the colours follow the theme set on <html>.
FOCUS_CSS = shipped_css("""
:focus-visible { outline: 3px solid var(--kv-focus, #0B57D0) !important; outline-offset: 2px; }
.noUi-handle:focus-visible, .noUi-handle:focus { outline: 3px solid var(--kv-focus, #0B57D0) !important; outline-offset: 2px; }
.bk-btn-group .bk-btn.bk-active { font-weight: 700; box-shadow: inset 0 -4px 0 currentColor; }
/* A group wider than its place (the lab's four latency choices on a phone) wraps instead of hiding its last buttons. */
.bk-btn-group { flex-wrap: wrap; }
.bk-input { --bs-border-color: var(--kv-control-border, #6E7781); }
:host(.outline) .bk-btn.bk-btn-default { border-color: var(--kv-control-border, #6E7781); }
/* Outside the rail's 5 px (content-box): inside them, the rail's own fill covered the lower edge. */
.noUi-target { border: 1px solid var(--kv-control-border, #6E7781); box-sizing: content-box; }
.noUi-handle { background: var(--kv-handle, #0D6EFD); }
a { color: var(--kv-link, #0B57D0); }
a:visited { color: var(--kv-link-visited, #6A3FB5); }
code { color: var(--kv-code, inherit); background: var(--kv-code-bg, transparent); padding: 0 0.2em; border-radius: 3px;
       font-size: 0.92em; }
/* Windows' contrast themes (forced colours) drop backgrounds and shadows, which alone drew a
   slider's handle and its filled track and marked a group's chosen button; and they would put
   their own background behind a chart, whose words are drawn for the page theme's. So these keep
   their colours: the system's for the controls, the page theme's behind a chart (!important: the
   widgets' own rules are more specific). */
@media (forced-colors: active) {
  .noUi-handle { forced-color-adjust: none; background: ButtonText !important; border: 2px solid ButtonText; }
  .noUi-handle:focus-visible, .noUi-handle:focus { outline-color: Highlight !important; }
  .noUi-connect { forced-color-adjust: none; background: Highlight !important; }
  .bk-btn-group .bk-btn.bk-active { forced-color-adjust: none; background: Highlight !important; color: HighlightText !important;
                                    border-color: Highlight !important; }
  .bk-Figure { forced-color-adjust: none; background: var(--bs-body-bg, #fff); }
}
""")

SKIP_CSS = shipped_css("""
.kv-skip { position: absolute; left: 8px; top: -60px; z-index: 10001; padding: 8px 14px; background: #fff; color: #0B57D0;
           border: 3px solid #0B57D0; border-radius: 6px; font-weight: 600; text-decoration: none; }
.kv-skip:focus { top: 8px; }
#header .kv-title { margin: 0; font-size: 1.5em; font-weight: 400; color: var(--header-color); padding-left: 0.5em; line-height: 2em;
                    white-space: normal; }
/* The title, then the nav and the theme button. The two share a row while the nav keeps 34rem
   (two lines of links at most); otherwise the nav takes a row of its own below the title. Without
   the wrap a long lesson title pushed the theme button, and at 800 px nav links, past the window's
   edge, where the page (overflow hidden) never shows them. */
#header { flex-wrap: wrap; }
#header-items { flex: 1 1 34rem; }
#main:focus { outline: none; }
""")

# Below 768 px Bootstrap's fixed sidebar would squeeze the numbers into a sliver. Stack instead:
# the numbers first, and the controls in a panel pinned to the bottom of the screen (at most 40%
# of its height, scrolling inside), so a slider is always on screen together with the numbers it
# moves. At the end of the page the panel settles into its place in the flow. The same below 500 px
# of height (a phone on its side): there the desktop layout's header, two rows tall and always
# on top, took 106 of 390 px and left the sidebar and the numbers 284 px to scroll in, each apart.
PHONE_CSS = shipped_css("""
@media (max-width: 767.98px), (max-height: 500px) {
  #container { height: auto !important; min-height: 100vh; overflow: visible !important; }
  #content { flex-direction: column; flex-wrap: nowrap; overflow: visible !important; height: auto; }
  #main { order: 1; overflow: visible; padding: 8px 4px 12px 4px; }
  /* #content > #sidebar: more specific than the template's own later #sidebar width rule. */
  #content > #sidebar { order: 2; width: 100% !important; max-width: none !important; height: auto; max-height: 40vh; overflow-y: auto;
             position: sticky; bottom: 0; z-index: 20; background: var(--bs-body-bg); border-right: none;
             border-top: 2px solid var(--bs-border-color); box-shadow: 0 -6px 16px rgba(0, 0, 0, 0.18); padding: 4px 6px 8px; }
  /* The header wraps to four lines on a phone (a fifth of its height): it scrolls away with the
     page instead of staying on top of it, beside the settings sheet at the bottom. */
  #header.sticky-top { position: static; }
  #header .kv-title { font-size: 1.1em; white-space: normal; line-height: 1.3em; }
  #header-items { flex-wrap: wrap; white-space: normal; margin-left: 0; }
}
/* A small phone (320 x 640, WCAG 1.4.10's reflow width) shows a result on its first screen: a
   compact header (148 px at 320 px, from 175-197) and, on a short screen, a settings sheet of a
   third of its height. Before, the header took 175-197 px and the
   sheet 256 px, and the phases' and the lab's first numbers sat under the sheet. */
@media (max-width: 480px) {
  #header { padding-top: 2px !important; padding-bottom: 4px !important; min-height: 0 !important; }
  #header .kv-title { font-size: 1em; line-height: 1.25em; }
  #header-items .bk-panel-models-widgets-Button { margin-top: 2px !important; margin-bottom: 2px !important; }
}
@media (max-width: 480px) and (max-height: 700px) {
  #content > #sidebar { max-height: 32vh; }
}
""")

# Embed mode (?embed=1, app/templates/embed.js sets the class): no site header to see or to tab
# through, and the page as tall as its content so the parent's iframe can be sized to it (the
# template otherwise scrolls inside a 100vh box). The header's title stays for screen readers,
# clipped to nothing: it is a panel's <h1>, the one heading of the embedded page (a lesson's is in
# its content).
EMBED_CSS = shipped_css("""
.kvlab-embed #header-items, .kvlab-embed #header .kv-skip { display: none !important; }
.kvlab-embed #header {
  position: absolute !important; width: 1px !important; height: 1px !important; min-height: 0 !important; margin: -1px !important;
  padding: 0 !important; border: 0 !important; overflow: hidden !important; clip-path: inset(50%) !important;
  white-space: nowrap !important;
}
.kvlab-embed #container, .kvlab-embed #content, .kvlab-embed #main, .kvlab-embed #sidebar {
  height: auto !important; max-height: none !important; overflow: visible !important;
}
.kvlab-embed #container { min-height: 0 !important; }
""")

PAGE_CSS = THEME_VARS + FOCUS_CSS + SKIP_CSS + PHONE_CSS + EMBED_CSS
# Without it a phone lays the page out 980 px wide and shrinks it to fit: unreadable numbers.
META_VIEWPORT = "width=device-width, initial-scale=1"


class KvDesign(Bootstrap):
    """Bootstrap, plus visible focus and theme-aware links and code in every component."""

    modifiers = {Viewable: {"stylesheets": [Inherit, FOCUS_CSS]}}


def inline_script(name: str) -> str:
    """A script of templates/ as written into every page: without its whole-line comments, which
    explain it in the source and would be 1-2 KB in each of the static site's pages (its 30 MB)."""
    lines = (TEMPLATES / name).read_text(encoding="utf-8").splitlines()
    return "\n".join(line for line in lines if not line.lstrip().startswith("//"))


class KvTemplate(pn.template.BootstrapTemplate):
    """The Bootstrap template with landmarks, a skip link and the widget-naming script."""

    _template = TEMPLATES / "kvlab.html"

    def __init__(self, title_heading: bool = True, **params):
        """`title_heading`: the header's title is the page's <h1>. A page whose content opens with
        its own <h1> (a lesson, the course map, the glossary; the one heading an embed shows, since
        embed mode hides the header) passes False, and the header's title is plain text, so the
        page has one <h1> either way."""
        params.setdefault("design", KvDesign)
        params.setdefault("meta_viewport", META_VIEWPORT)
        params.setdefault("busy_indicator", None)  # its spinner would add two messages to every slider move
        super().__init__(**params)
        text = self._template.read_text(encoding="utf-8").replace("KVLAB_A11Y_JS", inline_script("a11y.js"))
        text = text.replace("KVLAB_PAINT_JS", inline_script("bokeh_paint.js"))
        text = text.replace("KVLAB_EMBED_JS", inline_script("embed.js"))
        text = text.replace("KVLAB_SHARE_JS", inline_script("share.js"))
        text = text.replace("KVLAB_DRAG_JS", inline_script("drag.js"))
        self.template = self.nb_template = parse_template(text)
        self.config.raw_css = [*self.config.raw_css, PAGE_CSS]
        self._render_variables["title_heading"] = title_heading


def group_title(text: str) -> pn.pane.HTML:
    """A visible title over a button group; the page script makes it the group's accessible name."""
    return pn.pane.HTML(f"<div class='kv-group-label' style='font-size:0.875rem'>{esc(text)}</div>", margin=(6, 10, 0, 10),
                        css_classes=["kv-group-title"])


def labelled(widget, text: str) -> pn.Column:
    """A button group (RadioButtonGroup draws no title of its own) under a title that names it."""
    return pn.Column(group_title(text), widget, sizing_mode="stretch_width", margin=0)
