"""What the browser tests read pages with: the page scripts that look through Panel's shadow roots,
and the checks of headings and control outlines. Starting the server and Chromium is devtools'
(devtools/server.py, devtools/chromium.py), shared with the benchmarks.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


# Every element matching a selector, in the document and inside every shadow root Panel and
# BokehJS make (document order, each root's matches before its children's roots). A string to put
# at the start of a page function's body: it defines `deepAll(selector)`.
DEEP_ALL = """const deepAll = (selector) => { const out = []; const walk = (root) => {
    out.push(...root.querySelectorAll(selector));
    for (const el of root.querySelectorAll('*')) { if (el.shadowRoot) { walk(el.shadowRoot); } } };
  walk(document); return out; };"""

# The page's top-level headings that are shown (a hidden header's is not read), through the open
# shadow roots: a page has one, its title (app/a11y.KvTemplate's title_heading).
H1_TEXTS_JS = "() => {" + DEEP_ALL + """
  return deepAll('h1').filter((h) => h.getClientRects().length > 0).map((h) => h.textContent.trim()); }"""


def h1_texts(page) -> list[str]:
    """The text of each <h1> shown on the page."""
    return page.evaluate(H1_TEXTS_JS)


# The element that has the focus, inside the open shadow roots (document.activeElement stops at
# the outermost host).
DEEP_ACTIVE = """const deepActive = () => { let el = document.activeElement;
  while (el && el.shadowRoot && el.shadowRoot.activeElement) { el = el.shadowRoot.activeElement; }
  return el; };"""

# Every enabled, unfocused control whose outline identifies it (WCAG 2.1, 1.4.11): text and number boxes,
# selects, slider rails and handles, and buttons drawn as an outline (no fill of their own, a
# visible border). For each: its border (when drawn), its fill, and what is behind it (the
# nearest ancestor with a background, through the shadow roots). A button with a fill is named
# by its text on that fill, which axe checks.
CONTROL_OUTLINES_JS = DEEP_ALL + """
  const parentOf = (el) => el.parentElement || (el.parentNode && el.parentNode.host) || null;
  const clear = (c) => c === 'transparent' || /^rgba\\(.*, 0\\)$/.test(c);
  const behind = (el) => { for (let e = parentOf(el); e; e = parentOf(e)) { const c = getComputedStyle(e).backgroundColor;
    if (!clear(c)) { return c; } } return getComputedStyle(document.body).backgroundColor; };
  return deepAll('.bk-input, .noUi-target, .noUi-handle, button.bk-btn').filter((el) => {
    const r = el.getBoundingClientRect(), s = getComputedStyle(el);
    // Disabled controls (a slider's handle inside a disabled rail too) are exempt; a focused one
    // shows the focus ring instead (3:1, checked by the keyboard tests).
    const off = el.disabled || el.closest('[disabled]:not([disabled="false"])') !== null;
    if (!r.width || !r.height || off || s.visibility === 'hidden' || el.matches(':focus')) { return false; }
    return !el.matches('button') || (clear(s.backgroundColor) && parseFloat(s.borderTopWidth) > 0 && !clear(s.borderTopColor));
  }).map((el) => { const s = getComputedStyle(el);
    return { what: (el.className || el.tagName) + ' ' + (el.textContent || el.value || '').trim().slice(0, 24),
             border: s.borderTopStyle !== 'none' && parseFloat(s.borderTopWidth) > 0 ? s.borderTopColor : null,
             fill: s.backgroundColor, behind: behind(el) }; });"""


def faint_controls(page) -> list[str]:
    """The controls of the page whose outline (border or fill) is below 3:1 against what is behind
    them, each with its ratio; empty when every one reaches it."""
    from tests.wcag import AA_NON_TEXT, contrast

    out = []
    for c in page.evaluate("() => {" + CONTROL_OUTLINES_JS + "}"):
        ratio = max(contrast(c["fill"], c["behind"]), contrast(c["border"], c["behind"]) if c["border"] else 1.0)
        if ratio < AA_NON_TEXT:
            out.append(f"{c['what']!r}: {ratio:.2f}:1 (border {c['border']}, fill {c['fill']} on {c['behind']})")
    return out


def host_page(src: str) -> str:
    """A course page that embeds `src` (attribute-escaped) with the copied embed code's script, which
    sizes the iframe to the height the embedded page reports."""
    return (f'<!doctype html><html><body><h1>Course notes</h1><iframe id="kv" src="{src}" '
            'width="100%" height="150" style="border:0" data-kvlab-embed></iframe><script>'
            'addEventListener("message",function(e){var d=e.data;if(!d||d.type!=="kvlab-resize")return;'
            'document.querySelectorAll("iframe[data-kvlab-embed]").forEach(function(f){if(f.contentWindow===e.source)'
            'f.style.height=d.height+"px";});});</script></body></html>')


# Bokeh has rendered every root of the page (Document.is_idle) and three frames have been drawn
# since: app/templates/a11y.js names what a render added on the frame after it, so by then it has.
PAINTED_JS = """async () => {
  const frame = () => new Promise((resolve) => requestAnimationFrame(() => resolve()));
  const docs = () => (window.Bokeh && window.Bokeh.documents) || [];
  const until = performance.now() + 10000;
  while ((docs().length === 0 || !docs().every((d) => d.is_idle)) && performance.now() < until) { await frame(); }
  for (let i = 0; i < 3; i++) { await frame(); }
  return docs().length > 0 && docs().every((d) => d.is_idle);
}"""


def painted(page) -> None:
    """Wait until the page's Bokeh documents have rendered and been named (PAINTED_JS): the
    condition a fixed wait after the ready element stood for, without its idle time."""
    assert page.evaluate(PAINTED_JS), "Bokeh's documents were not idle within 10 s"


def off_host(urls: list[str], base: str) -> list[str]:
    """The URLs that are not the app's own (`base`: its http://127.0.0.1:port), its blobs or data."""
    host = base.removeprefix("http://")
    return [u for u in urls if not u.startswith((f"http://{host}/", f"blob:http://{host}/", "data:"))]


class LocalOnly:
    """Records what a page asks of the network and the JavaScript errors it raises, from before its
    first request: every request and websocket must stay on the app's own 127.0.0.1 host (fonts,
    scripts, styles, anything: nothing may depend on the network), and no script may fail. Watched
    on the page loads the accessibility checks make anyway, in both themes and at both widths."""

    def __init__(self, page, base: str):
        self.host = base.removeprefix("http://")
        self.requests: list[str] = []
        self.sockets: list[str] = []
        self.errors: list[str] = []
        page.on("request", lambda r: self.requests.append(r.url))
        page.on("websocket", lambda ws: self.sockets.append(ws.url))
        page.on("pageerror", lambda e: self.errors.append(str(e)))

    def check(self, where: str) -> None:
        assert off_host(self.requests, f"http://{self.host}") == [], f"{where}: requests that leave 127.0.0.1"
        assert len(self.requests) > 10, f"{where}: {self.requests}"  # the recorder saw the page's own requests
        assert self.sockets and all(u.startswith(f"ws://{self.host}/") for u in self.sockets), f"{where}: {self.sockets}"
        assert self.errors == [], f"{where}: {self.errors}"
