"""Starting `panel serve` and a real Chromium, shared by the browser tests and the latency benchmark.

No network: the server binds 127.0.0.1 and Chromium runs with its background services off.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from kvlab.app.server.serve import SERVER_OPTIONS, page_scripts

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerLog:
    """A server's log file, read in steps: each test is charged with what its server logged
    while it ran (tests/browser/conftest.py fails a test whose server logged a traceback)."""

    def __init__(self, path: Path):
        self.path = path
        self.offset = 0

    def read_new(self) -> str:
        with open(self.path, encoding="utf-8", errors="replace") as f:
            f.seek(self.offset)
            text = f.read()
        self.offset += len(text.encode("utf-8", errors="replace"))
        return text


# Logs of the servers running now, for the per-test check.
SERVER_LOGS: list[ServerLog] = []


def server_errors(text: str) -> bool:
    """A traceback or an ERROR record (Bokeh and Tornado log callback exceptions as ERROR)."""
    return "Traceback" in text or " ERROR " in text or "ERROR:" in text


def start_server(port: int, setup: bool = True, timeout_s: float = 180.0, log_path: Path | None = None,
                 pages: list[Path] | None = None, ready_path: str = "/index") -> subprocess.Popen:
    """`panel serve` on the app's pages (or `pages`), as `kvlab serve` runs it; returns once
    `ready_path` answers. The server's log goes to `log_path` (a file, not a pipe nobody reads,
    which would fill and stall the server) and is checked after every test."""
    pages = [str(p) for p in (pages or page_scripts())]
    cmd = [sys.executable, "-m", "panel", "serve", *pages, "--address", "127.0.0.1", "--port", str(port),
           "--allow-websocket-origin", f"127.0.0.1:{port}", *SERVER_OPTIONS]
    if any(Path(p).stem == "index" for p in pages):
        cmd += ["--index", "index"]
    if setup:
        cmd += ["--setup", str(ROOT / "app" / "server" / "setup.py")]
    log = open(log_path or os.devnull, "w")  # the child keeps its own descriptor; ours is closed below
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    log.close()
    if log_path is not None:
        proc.kvlab_log = ServerLog(log_path)
        SERVER_LOGS.append(proc.kvlab_log)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log_path.read_text()[-2000:] if log_path else ""
            raise RuntimeError(f"panel serve exited with {proc.returncode}: {tail}")
        try:
            # A first page render can take tens of seconds on a loaded 2-core machine.
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{ready_path}", timeout=60) as r:
                if r.status == 200:
                    return proc
        except OSError:
            time.sleep(0.3)
    stop_server(proc)
    raise RuntimeError("panel serve did not answer within the timeout")


def stop_server(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    log = getattr(proc, "kvlab_log", None)
    if log in SERVER_LOGS:
        SERVER_LOGS.remove(log)


# Sets a Bokeh slider's value as a drag would (the recipe in design.md section 4): the model's
# change event goes through BokehJS exactly as a user's does.
SET_SLIDER_JS = """([title, value]) => {
  const m = [...window.Bokeh.documents[0]._all_models.values()].find(m => m.type === 'Slider' && m.title === title);
  if (!m) { throw new Error('no slider titled ' + title); }
  m.value = value;
}"""

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


# Finds an element by data-kv inside Panel's shadow roots.
DEEP_FIND_JS = """
window.kvFind = (key) => {
  const walk = (root) => {
    const hit = root.querySelector(`[data-kv="${key}"]`);
    if (hit) { return hit; }
    for (const el of root.querySelectorAll('*')) {
      if (el.shadowRoot) { const found = walk(el.shadowRoot); if (found) { return found; } }
    }
    return null;
  };
  return walk(document);
};
"""
