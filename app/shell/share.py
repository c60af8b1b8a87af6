"""Links out of the page: the address bar kept in step with the state, "copy link", "copy embed
code", the theme switch and the navigation between panels.

All of it runs in the browser (clipboard, history), so it behaves the same under `panel serve`
and in the static Pyodide build.
"""

from __future__ import annotations

import json
import sys
from urllib.parse import urlencode

import panel as pn
import param
from panel.reactive import ReactiveHTML

from ..pages import building_site
from ..server.patches import guard_panel_location
from ..viewlayer.html import esc
from ..viewlayer.query import RESERVED_KEYS

# Every page imports this module for its nav bar: Panel's query parser gets the URL limits here.
guard_panel_location()

# A share button copies text to the clipboard with window.kvlabCopy (app/templates/share.js, in
# every page once): a hidden textarea where the async clipboard is not available (a plain-http
# host), and where both are blocked (an iframe without clipboard permission) the text in a visible
# box for the reader to copy. The result is written on the button itself (`source`, the Bokeh
# model Panel passes every callback: cb_obj is the click event) and announced through the
# button's label. The button is never passed in `args`: Panel keeps each callback in a
# WeakKeyDictionary keyed by its source, and a value holding its own key is never freed, so every
# closed session kept both buttons and their models (about 7 MB).
#
# What each share button copies, evaluated when it is clicked:
LINK_TEXT = "window.location.href"
EMBED_HEIGHT_PX = 1150  # the iframe's height until the page reports its own
# An embed of 127.0.0.1 or localhost works only on the machine that copied it: the button says so.
LOCAL_WARNING_JS = "window.kvlabLocalWarning()"


def embed_text_js(title: str, height_px: int, href_js: str = "undefined") -> str:
    """The call that writes an embed snippet (share.js, kvlabEmbedText) of the page, or of `href_js`'s address."""
    quoted = esc(title).replace("'", "\\'")
    return f"window.kvlabEmbedText('{quoted}', {height_px}, {href_js})"


# The address bar is written once the moves pause, not on every reply. Chromium ignores
# history.replaceState beyond 200 calls in 10 s (its flood guard, crbug.com/1038223): a long drag
# on `kvlab serve` answers more often than that, and then the address bar, and the link "Copy link"
# copies from it, stayed at the 200th state (measured in Chromium with the guard on, as a browser
# ships: 300 writes 5 ms apart left ?n=200). Writing it also took 3-5 ms of each move (docs/benchmarks/2026-12-01-site.md, session 4).
# The static site follows the same rule: its bridge hands this nav every reply's query.
ADDRESS_DELAY_MS = 300


class AddressBar(ReactiveHTML):
    """The address bar and the navigation links, kept equal to the state in the browser.

    When the query changes, the address bar is updated with history.replaceState (not pushState:
    a slider drag must not leave a hundred entries behind the back button) and every nav link's
    href gets the same query, so moving to the other panel keeps the scenario. Doing this in the
    browser costs one short list per change instead of re-rendering the nav's HTML. The link keys
    the page shell reads (RESERVED_KEYS: the theme, embed mode) are kept.

    With `delay_ms`, a new query is written once no newer one has come for that long, or at once
    on any click, Enter or Space, key combination (Ctrl+C, Ctrl+L), loss of focus or page hide:
    before "Copy link", "Copy embed code", the theme button or a nav link reads it. While one waits,
    the page's <body> has data-kv-address-pending (for tests). The static site's bridge hands the
    nav every reply's query (static/kvlab-bridge.js), so both runtimes follow this one rule.

    ReactiveHTML passes string parameters through an HTML sanitizer, which turns the query's &
    into &amp;; the script turns it back (a urlencoded query has no other & and no < > or quotes).
    The links are built with textContent, never innerHTML.
    """

    query = param.String(default="", doc="the state's query string, '?a=1&b=2' or ''")
    keep_url = param.Boolean(default=False, doc="leave the address bar as opened until the query changes (the static "
                             "site: the page was laid out at build time and its link's state arrives from the browser bridge; "
                             "a lesson, whose address bar holds its answers and which sends no query)")
    delay_ms = param.Integer(default=ADDRESS_DELAY_MS, bounds=(0, None), doc="write a new query once the moves pause this long")
    links = param.List(default=[], doc="[[href without query, title, is_current], ...]")

    _template = '<nav id="nav" class="kv-nav" aria-label="panels"></nav>'
    # Every link carries the shell keys of the address bar (the theme, embed mode) from the start,
    # and the state's query once one is written: a page whose address bar is kept (a lesson's, a
    # static page's before its first reply) still has working links in the reader's theme.
    _setup = """
      state.shell = () => {
        const current = new URLSearchParams(window.location.search), kept = new URLSearchParams();
        for (const key of KEYS) { if (current.has(key)) { kept.set(key, current.get(key)); } }
        return kept;
      };
      const asSearch = (params) => (params.toString() ? '?' + params.toString() : '');
      state.linked = asSearch(state.shell());
      state.setLinks = () => { for (const a of nav.querySelectorAll('a')) { a.setAttribute('href', a.dataset.base + state.linked); } };
      state.write = () => {
        const next = new URLSearchParams(data.query.replace(/&amp;/g, '&'));
        for (const [key, value] of state.shell()) { next.set(key, value); }
        const search = asSearch(next);
        if (search !== window.location.search) {
          window.history.replaceState(window.history.state, '', window.location.pathname + search + window.location.hash);
        }
        state.linked = search;
        state.setLinks();
      };
      state.flush = () => {
        clearTimeout(state.timer);
        state.timer = 0;
        if (!state.due) { return; }
        state.due = false;
        delete document.body.dataset.kvAddressPending;
        state.write();
      };
      if (!state.listening) {
        state.listening = true;
        for (const type of ['pointerdown', 'blur', 'pagehide', 'visibilitychange']) {
          window.addEventListener(type, () => state.flush(), true);
        }
        window.addEventListener('keydown', (e) => {
          if (e.key === 'Enter' || e.key === ' ' || e.ctrlKey || e.metaKey || e.altKey) { state.flush(); }
        }, true);
      }
    """.replace("KEYS", json.dumps(sorted(RESERVED_KEYS)))
    _build_links = """
      nav.replaceChildren();
      for (const [base, title, current] of data.links) {
        const a = document.createElement('a');
        a.textContent = title;
        a.dataset.base = base;
        if (current) { a.className = 'current'; a.setAttribute('aria-current', 'page'); }
        nav.appendChild(a);
      }
      state.setLinks();
    """
    _scripts = {
        "render": _setup + _build_links + "if (!data.keep_url) { state.write(); }",
        "links": _build_links,
        "query": """
          state.due = true;
          if (document.body.dataset.kvAddressPending !== '1') { document.body.dataset.kvAddressPending = '1'; }
          clearTimeout(state.timer);
          state.timer = setTimeout(() => state.flush(), data.delay_ms);
        """,
    }


def copy_button(name: str, text_js: str, box: pn.widgets.TextAreaInput, warn_js: str = "null", **kw) -> pn.widgets.Button:
    button = pn.widgets.Button(label=name, color="primary", variant="outline", **kw)
    button.js_on_click(args={"box": box}, code=f"window.kvlabCopy(source, box, {text_js}, {json.dumps(name)}, {warn_js});")
    return button


def _copy_box() -> pn.widgets.TextAreaInput:
    """Where a copy button puts its text when the browser blocks the clipboard."""
    return pn.widgets.TextAreaInput(label="The browser blocked the clipboard: select this text and copy it (Ctrl+C)", visible=False,
                                    sizing_mode="stretch_width", height=90, margin=(5, 10), css_classes=["kv-w-copy-fallback"])


def share_buttons(title: str, embed: bool = True) -> list:
    """"Copy link", "Copy embed code" (unless `embed` is False), and the box that shows the text when
    the clipboard is blocked."""
    box = _copy_box()
    buttons = [copy_button("Copy link", LINK_TEXT, box, width=120, margin=(5, 5))]
    if embed:
        code = embed_text_js(title, EMBED_HEIGHT_PX)
        buttons.append(copy_button("Copy embed code", code, box, LOCAL_WARNING_JS, width=170, margin=(5, 5)))
    return [*buttons, box]


def step_buttons(title: str, key: str, height_px: int = 600) -> list:
    """A lesson step's "Copy link to this step" and "Copy embed code for this step" (app/templates/share.js,
    kvlabStepLink: the lesson's address with ?step=<key>, which shows that step alone), and their box."""
    box = _copy_box()
    link = f"window.kvlabStepLink({json.dumps(key)})"
    code = embed_text_js(title, height_px, link)
    return [copy_button("Copy link to this step", link, box, margin=(5, 5)),
            copy_button("Copy embed code for this step", code, box, LOCAL_WARNING_JS, margin=(5, 5)), box]


def picks_buttons(key_href: str, version: str, box: pn.widgets.TextAreaInput | None = None) -> list:
    """"Copy my answers" (a link to the answer key page at `key_href` carrying every pick this browser
    kept: app/templates/share.js) and "Download my answers" (the same as a JSON file stamped with
    kvlab's `version`), and the box for a blocked clipboard (`box`: one the page shows already, from
    share_buttons: each model is written into both themes of every static page)."""
    shown = box is not None
    box = box or _copy_box()
    copy = copy_button("Copy my answers", f"window.kvlabPicksLink({json.dumps(key_href)})", box, width=170, margin=(5, 5))
    download = pn.widgets.Button(label="Download my answers", color="primary", variant="outline", width=200, margin=(5, 5))
    download.js_on_click(code=f"window.kvlabDownloadPicks({json.dumps(version)});")
    return [copy, download] if shown else [copy, download, box]


def theme_button() -> pn.widgets.Button:
    dark = pn.config.theme == "dark"
    button = pn.widgets.Button(label="Light theme" if dark else "Dark theme", color="light", width=120, margin=(5, 5))
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
    ("serving_lab", "The serving lab", "Requests arriving over time: queues, preemption, chunked prefill, tail latency."),
]


def nav_links(current: str, pages=None, query: str | None = None) -> AddressBar:
    """Real <a> links to every panel, for `panel serve` (/phases) and the static build (phases.html)
    alike; the AddressBar gives them the current state's query string. A page with no state
    (`query` None: a lesson, whose address bar holds its answers) leaves its address bar as opened."""
    links = [[page_href("index"), "Home", current == "index"]]
    links += [[page_href(slug), title, slug == current] for slug, title, _ in pages or PAGES]
    links.append([page_href("lessons"), "Lessons", current in ("lessons", "glossary", "answers") or current.startswith("lesson_")])
    keep = query is None or building_site()
    return AddressBar(links=links, query=query or "", keep_url=keep, stylesheets=[NAV_CSS], margin=(0, 10))


def page_href(slug: str, params: dict | None = None, theme: bool = False) -> str:
    """A link to another page of the site: `/phases` under `kvlab serve`, `phases.html` in the
    static build, with `params` as its query. `theme`: carry the reader's theme on (a link written
    into the page's content, which no script rewrites; the nav's links get it from the address bar)."""
    query = dict(params or {})
    if theme and pn.config.theme == "dark":
        query["theme"] = "dark"
    return f"./{slug}{page_extension()}" + (f"?{urlencode(query)}" if query else "")


def page_extension() -> str:
    """'.html' where the pages are files of the static build ('.dark.html' in its dark build),
    '' under `panel serve`."""
    # The static build pre-renders pages (no URL yet) and runs them in a worker before the URL is
    # known; both are file-based sites where "./phases" would 404. A dark page links straight to
    # the dark file: through PAGE.html the shell's redirect (kvlab-bridge.js) cost a lesson 363
    # instead of 241 ms to its ready state, and the phases panel 1,015 instead of 928 ms (median of
    # 6 warm navigations each, docs/benchmarks/2026-12-02-site.md).
    if building_site():
        return ".dark.html" if pn.config.theme == "dark" else ".html"
    if sys.platform == "emscripten":
        return ".html"
    loc = pn.state.location
    return ".html" if loc is not None and (loc.pathname or "").endswith(".html") else ""


NAV_CSS = """
.kv-nav { display: flex; flex-wrap: wrap; gap: 6px 18px; align-items: center; }
.kv-nav a { color: #fff; text-decoration: none; font-weight: 600; opacity: 0.85; padding: 4px 0; border-bottom: 2px solid transparent; }
.kv-nav a:hover, .kv-nav a:focus { opacity: 1; border-bottom-color: #fff; }
.kv-nav a.current { opacity: 1; border-bottom-color: #E69F00; }
@media (max-width: 480px) { .kv-nav { gap: 0 12px; font-size: 0.9rem; } .kv-nav a { padding: 2px 0; } }
"""
