"""Make each page Panel converts degrade gracefully, and point it at the right hosts.

`panel convert --to pyodide-worker` writes PAGE.html (a pre-rendered view plus a handler) and
PAGE.js (a classic web worker that loads Pyodide, installs packages, runs the page). Panel shows
its status lines while loading, but three failures leave a student with a spinner forever:
importScripts() of pyodide.js failing (blocked CDN), a rejected promise inside the worker (the
wasm download failing), and a package install error (Panel logs it and runs on into an
ImportError). This module patches the worker so each failure posts one `kvlab-error` message
naming its stage, and adds assets/kvlab-loader.js to the page, which draws a progress bar over
the pre-rendered view and replaces it with a clear message on failure.

Every patch is anchored on text of Panel's template and must match exactly once: if a Panel
upgrade changes the template, the build stops with a message instead of shipping a page that
silently lost its error handling.
"""

from __future__ import annotations

import html
import json
import re

WORKER_PRELUDE = """\
// kvlab: report failures by stage (see app/site_shell.py). The page's assets/kvlab-loader.js shows them.
function kvlabFail(stage, e) {
  // A Python traceback arrives as one long message: show its exception line, keep the rest as detail.
  const text = String((e && e.message) || e).trim();
  const lines = text.split("\\n").filter((l) => l.trim());
  const exc = lines.filter((l) => /^[A-Za-z_.]*(Error|Exception)\\b/.test(l)).pop();
  const detail = lines.length > 1 ? lines.slice(-25).join("\\n") : String((e && e.stack) || "");
  self.postMessage({type: "kvlab-error", stage: stage, msg: exc || lines[lines.length - 1] || text, detail: detail});
}
"""

_IMPORT = re.compile(r'^importScripts\("([^"]+)"\);$', re.MULTILINE)
_INSTALL_CATCH = re.compile(r"console\.log\(e\)\s*self\.postMessage\(\{\s*type: 'status',\s*msg: `Error while installing packages`\s*\}\);")
_START = re.compile(r"\nstartApplication\(\)\s*$")


class TemplateChanged(RuntimeError):
    """Panel's worker or page template no longer has the text a patch is anchored on."""


def _sub_once(pattern: re.Pattern, repl, text: str, what: str) -> str:
    new, n = pattern.subn(repl, text)
    if n != 1:
        raise TemplateChanged(f"expected one {what} in Panel's pyodide-worker output, found {n}; "
                              "app/site_shell.py must be updated for this Panel version")
    return new


def worker_pyodide_url(worker_js: str) -> str:
    """The URL the worker loads pyodide.js from."""
    m = _IMPORT.search(worker_js)
    if not m:
        raise TemplateChanged("no importScripts(...) line in Panel's pyodide worker")
    return m.group(1)


def patch_worker(worker_js: str, pyodide_url: str) -> str:
    """Load Pyodide from `pyodide_url` and post a kvlab-error for each way loading can fail."""
    load = (f"const KVLAB_PYODIDE_URL = {json.dumps(pyodide_url)};\n"
            "let kvlabLoaded = false;\n"
            "try { importScripts(KVLAB_PYODIDE_URL); kvlabLoaded = true; }\n"
            "catch (e) { kvlabFail(\"pyodide\", new Error(`could not load ${KVLAB_PYODIDE_URL}: ${e.message || e}`)); }")
    js = _sub_once(_IMPORT, lambda m: load, worker_js, "importScripts(...) line")
    js = _sub_once(_INSTALL_CATCH, "console.log(e)\n    kvlabFail(\"packages\", e);\n    return;", js, "package-install catch block")
    js = _sub_once(_START, "\nif (kvlabLoaded) {\n  startApplication().catch((e) => kvlabFail(\"python\", e));\n}\n", js,
                   "trailing startApplication() call")
    return WORKER_PRELUDE + js


_WORKER_CREATED = re.compile(r'const pyodideWorker = new Worker\("[^"]+"\);')
# Recorded from the moment the worker exists: the loader runs only at the end of <body>, and on a
# large page (an --inline build is about 3 MB) the parser yields often enough before it that a fast
# failure (a blocked CDN, a missing worker file) would otherwise be delivered to nobody.
_EARLY_RECORDER = """
window.kvlabEvents = [];
pyodideWorker.addEventListener("message", (e) => { if (window.kvlabEvents) window.kvlabEvents.push(["message", e.data]); });
pyodideWorker.addEventListener("error", (e) => { if (window.kvlabEvents) window.kvlabEvents.push(["error", e.message || ""]); });
"""


def patch_page(page_html: str, assets_prefix: str, info: dict) -> str:
    """Record the worker's first events, and add the loader's stylesheet and script and a
    <noscript> note, to one converted page.

    `info` goes to the loader as data attributes (Pyodide version and URL, page title).
    """
    page_html = _sub_once(_WORKER_CREATED, lambda m: m.group(0) + _EARLY_RECORDER, page_html,
                          "`const pyodideWorker = new Worker(...)` line (in the page)")
    attrs = " ".join(f'data-{k.replace("_", "-")}="{html.escape(str(v), quote=True)}"' for k, v in sorted(info.items()))
    # Everything goes just before the last </body> (the real one: an inlined BokehJS may contain the
    # text "</head>" or "</body>" in its strings). A stylesheet <link> is valid in the body.
    shell = (f'<link rel="stylesheet" href="{assets_prefix}assets/kvlab-site.css" type="text/css" />\n'
             f'<noscript><div class="kvlab-banner kvlab-error">This page runs the kvlab simulator in your browser and needs '
             f'JavaScript. What is shown is a preview computed when the site was built.</div></noscript>\n'
             f'<script src="{assets_prefix}assets/kvlab-loader.js" {attrs}></script>\n')
    end = page_html.rfind("</body>")
    if end < 0:
        raise TemplateChanged("a converted page has no </body>")
    return page_html[:end] + shell + page_html[end:]


def rewrite(text: str, old: str, new: str, what: str) -> str:
    """Replace every `old` with `new`; it is an error if `old` is absent (the option would do nothing)."""
    if old not in text:
        raise TemplateChanged(f"{what}: {old!r} does not occur in the converted page")
    return text.replace(old, new)
