"""Links out of the page: the address bar kept in step with the state, "copy link", "copy embed
code", the theme switch and the navigation between panels.

All of it runs in the browser (clipboard, history), so it behaves the same under `panel serve`
and in the static Pyodide build.
"""

from __future__ import annotations

import json

import panel as pn
import param
from panel.reactive import ReactiveHTML

from .html import esc

# Copy text to the clipboard; fall back to a hidden textarea where the async clipboard is not
# available (an iframe without clipboard permission, a plain-http host), then flash the result
# on the button itself.
_COPY_JS = """
const text = %(text)s;
const button = cb_obj;
const original = %(label)s;
const flash = (label) => { button.label = label; setTimeout(() => { button.label = original; }, 1600); };
const fallback = () => {
  const ta = document.createElement('textarea');
  ta.value = text; ta.setAttribute('readonly', ''); ta.style.position = 'fixed'; ta.style.opacity = '0';
  document.body.appendChild(ta); ta.select();
  let ok = false; try { ok = document.execCommand('copy'); } catch (e) { ok = false; }
  ta.remove(); return ok;
};
window.kvlabLastCopied = text;
if (navigator.clipboard && window.isSecureContext) {
  navigator.clipboard.writeText(text).then(() => flash('Copied \u2713'), () => flash(fallback() ? 'Copied \u2713' : 'Press Ctrl+C'));
} else {
  flash(fallback() ? 'Copied \u2713' : 'Press Ctrl+C');
}
"""
LINK_TEXT = "window.location.href"
# The iframe snippet: the URL is attribute-escaped (& and ") before it goes between quotes.
EMBED_TEXT = ("'<iframe src=\"' + window.location.href.replace(/&/g, '&amp;').replace(/\"/g, '%%22') + "
              "'\" title=\"kvlab: %(title)s\" width=\"100%%\" height=\"%(height)d\" style=\"border:0\" loading=\"lazy\"></iframe>'")
EMBED_HEIGHT_PX = 1150


class AddressBar(ReactiveHTML):
    """The address bar and the navigation links, kept equal to the state in the browser.

    When `query` changes, the address bar is updated with history.replaceState (not pushState: a
    slider drag must not leave a hundred entries behind the back button) and every nav link's
    href gets the same query, so moving to the other panel keeps the scenario. Doing this in the
    browser costs one short string per change instead of re-rendering the nav's HTML. The theme
    parameter, which the template reads, is kept.
    """

    query = param.String(default="")
    nav_html = param.String(default="", doc="the links, built (and escaped) by NavLinks")

    _template = '<nav id="nav" class="kv-nav" aria-label="panels"></nav>'
    _stylesheets = []
    _script = """
      const next = new URLSearchParams(data.query);
      const current = new URLSearchParams(window.location.search);
      if (current.has('theme')) { next.set('theme', current.get('theme')); }
      const search = next.toString() ? '?' + next.toString() : '';
      if (search !== window.location.search) {
        window.history.replaceState(window.history.state, '', window.location.pathname + search + window.location.hash);
      }
      for (const a of nav.querySelectorAll('a[data-base]')) { a.setAttribute('href', a.dataset.base + search); }
    """
    _scripts = {
        "render": "nav.innerHTML = data.nav_html;" + _script,
        "query": _script,
        "nav_html": "nav.innerHTML = data.nav_html;" + _script,
    }


def copy_button(name: str, text_js: str, **kw) -> pn.widgets.Button:
    button = pn.widgets.Button(name=name, button_type="primary", button_style="outline", **kw)
    button.js_on_click(code=_COPY_JS % {"text": text_js, "label": json.dumps(name)})
    return button


def share_buttons(title: str) -> list[pn.widgets.Button]:
    embed = EMBED_TEXT % {"title": esc(title).replace("'", "\\'"), "height": EMBED_HEIGHT_PX}
    return [copy_button("Copy link", LINK_TEXT, width=120, margin=(5, 5)),
            copy_button("Copy embed code", embed, width=170, margin=(5, 5))]


def theme_button() -> pn.widgets.Button:
    dark = pn.config.theme == "dark"
    button = pn.widgets.Button(name="Light theme" if dark else "Dark theme", button_type="light", width=120, margin=(5, 5))
    button.js_on_click(code="""
      const url = new URL(window.location.href);
      if (%s) { url.searchParams.delete('theme'); } else { url.searchParams.set('theme', 'dark'); }
      window.location.href = url.toString();
    """ % ("true" if dark else "false"))
    return button


# (slug, title, one-line description). The index page lists these; the nav bar links them.
PAGES = [
    ("admission", "The admission decision", "How HBM is carved up, and how many sequences the engine can hold."),
    ("phases", "Two phases, opposite bottlenecks", "Prefill against decode: step times, the roofline, batching."),
]


def nav_links(current: str, pages=None, query: str = "") -> AddressBar:
    """Real <a> links to every panel, for `panel serve` (/phases) and the static build (phases.html)
    alike; the AddressBar gives them the current state's query string."""
    ext = page_extension()
    links = [f'<a data-base="./index{ext}" href="./index{ext}">Home</a>']
    for slug, title, _ in pages or PAGES:
        mark = ' aria-current="page" class="current"' if slug == current else ""
        links.append(f'<a data-base="./{esc(slug)}{ext}" href="./{esc(slug)}{ext}"{mark}>{esc(title)}</a>')
    return AddressBar(nav_html="".join(links), query=query, stylesheets=[NAV_CSS], margin=(0, 10))


def page_extension() -> str:
    """'.html' where the pages are files of the static build, '' under `panel serve`."""
    loc = pn.state.location
    return ".html" if loc is not None and (loc.pathname or "").endswith(".html") else ""


NAV_CSS = """
.kv-nav { display: flex; flex-wrap: wrap; gap: 6px 18px; align-items: center; }
.kv-nav a { color: #fff; text-decoration: none; font-weight: 600; opacity: 0.85; padding: 4px 0; border-bottom: 2px solid transparent; }
.kv-nav a:hover, .kv-nav a:focus { opacity: 1; border-bottom-color: #fff; }
.kv-nav a.current { opacity: 1; border-bottom-color: #E69F00; }
"""
