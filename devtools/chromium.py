"""Debian's Chromium under Playwright, for the tests and the benchmarks: the binary and its flags, a
fresh page that may reach no host but 127.0.0.1 (host blocking: nothing may depend on the network
at test time), a static HTTP server for a folder (devtools/static_host.py), and the page scripts both read Panel pages with.
"""

from __future__ import annotations

import contextlib
import functools
import threading

from .static_host import serve_directory  # noqa: F401 (callers use it from here)

CHROMIUM = "/usr/bin/chromium"
# Flags from design.md section 4: without the background-networking ones Chromium keeps trying
# Google's hosts, which this machine's closed network refuses.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def in_own_thread(func):
    """Run `func` in a fresh thread and return its result (or raise its exception).

    Playwright's sync API refuses to start while another sync Playwright is live in the same
    thread, and the browser tests keep one open for the whole pytest session. A Playwright session
    that starts, works and ends inside its own thread never meets theirs. Functions wrapped here
    must return plain data, never Playwright objects.
    """
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        box: dict = {}

        def target():
            try:
                box["result"] = func(*args, **kwargs)
            except BaseException as e:  # re-raised in the caller's thread
                box["error"] = e

        thread = threading.Thread(target=target, name=f"kvlab-{func.__name__}")
        thread.start()
        thread.join()
        if "error" in box:
            raise box["error"]
        return box["result"]

    return wrapper


@contextlib.contextmanager
def chromium_page(record: list[str] | None = None, block_outside: bool = True):
    """A fresh headless Debian Chromium page (Python Playwright). Requests that leave 127.0.0.1 are
    aborted when block_outside is set (nothing may depend on the network at test time) and their
    URLs appended to `record`. Use it inside a function wrapped with `in_own_thread`."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            if block_outside:
                def route(r):
                    url = r.request.url
                    if url.startswith(("http://127.0.0.1", "data:", "blob:")):
                        r.continue_()
                    else:
                        if record is not None:
                            record.append(url)
                        r.abort()
                page.route("**/*", route)
            yield page
        finally:
            browser.close()


# Sets a Bokeh slider's value as a drag would (the recipe in design.md section 4): the model's
# change event goes through BokehJS exactly as a user's does.
SET_SLIDER_JS = """([title, value]) => {
  const m = [...window.Bokeh.documents[0]._all_models.values()].find(m => m.type === 'Slider' && m.title === title);
  if (!m) { throw new Error('no slider titled ' + title); }
  m.value = value;
}"""

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
