"""What the pages load, served from the site itself: the Panel and Bokeh files they name, the page
template's scripts, kvlab's static folder and Pyodide's core.

Pyodide comes from the npm package pinned in app/site/package.json (installed by `npm ci --prefix
app/site`, which scripts/test runs) or from --pyodide-dir; with neither, the build stops and says
what to run. The pages load it from jsDelivr only when asked (--pyodide-cdn).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

from .discover import BuildError
from .wheels import ROOT

STATIC_DIR = ROOT / "static"  # the hand-written loader, bridge and CSS (kvlab/static once installed)
# The Pyodide release the site runs, pinned in app/site/package.json (a test checks they agree).
PYODIDE_VERSION = "314.0.7"
PYODIDE_CDN = f"https://cdn.jsdelivr.net/pyodide/v{PYODIDE_VERSION}/full/"
SITE_NPM_DIR = Path(__file__).resolve().parent  # app/site: package.json, package-lock.json, node_modules/
PYODIDE_NPM_DIR = SITE_NPM_DIR / "node_modules" / "pyodide"
PYODIDE_INSTALL = f"npm ci --prefix {SITE_NPM_DIR}"
# What a module worker's loadPyodide() fetches from the core package; nothing else is copied.
PYODIDE_FILES = ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json")
# The lock file lists Pyodide's whole package distribution (0.12 MB); the worker loads no package
# (kvlab's wheels are unpacked, not installed by name), so the site's copy keeps the file's `info`
# (Python version, ABI) and lists no package.
PYODIDE_LOCK = "pyodide-lock.json"


# ---- resources: every URL the page names, served from the site itself ----------------------------

def _vendor_roots() -> dict[str, tuple[Path, str]]:
    """CDN prefix -> (local folder holding those files, folder in the site)."""
    import bokeh
    import panel
    from panel.io.resources import CDN_DIST

    bokeh_js = Path(bokeh.__file__).parent / "server" / "static" / "js"
    # Bokeh's own CDN (bokeh.resources); read as text because Panel rewrites bokeh.resources.CDN on import.
    bokeh_cdn = "https://cdn.bokeh.org/bokeh/release/"
    return {CDN_DIST: (Path(panel.__file__).parent / "dist", "vendor/panel/"),
            bokeh_cdn: (bokeh_js, "vendor/bokeh/")}


def roots_panel_dist(roots: dict) -> Path:
    return next(folder for folder, target in roots.values() if target == "vendor/panel/")


_CSS_URL = re.compile(r"url\(\s*['\"]?([^'\")]+)['\"]?\s*\)")


def _localise(page_html: str, roots: dict, needed: dict[str, Path]) -> str:
    """Point every CDN URL of Panel and Bokeh at the site's copy; record the files to copy."""
    for prefix, (folder, target) in roots.items():
        pattern = re.compile(re.escape(prefix) + r"([^\s\"'\\)<>?#]+)")
        for rel in set(pattern.findall(page_html)):
            if rel.endswith("/"):
                continue
            # Bokeh's CDN names builds bokeh-3.9.2.min.js; the wheel ships bokeh.min.js.
            local = re.sub(r"-\d+\.\d+\.\d+(\.\w+)?(?=\.min\.js$)", "", rel) if target == "vendor/bokeh/" else rel
            src = folder / local
            if not src.is_file():
                raise BuildError(f"the page names {prefix}{rel}, which the installed package does not have at {src}")
            needed[target + rel] = src
        page_html = page_html.replace(prefix, "./" + target)
    return page_html


def _copy_css_dependencies(needed: dict[str, Path]) -> None:
    """Fonts and images a copied stylesheet names by relative url(...)."""
    todo = [k for k in needed if k.endswith(".css")]
    while todo:
        key = todo.pop()
        text = needed[key].read_text(encoding="utf-8", errors="replace")
        for ref in _CSS_URL.findall(text):
            if ref.startswith(("data:", "http:", "https:", "#", "/")):
                continue
            ref = ref.split("?")[0].split("#")[0]
            src = (needed[key].parent / ref).resolve()
            dest = os.path.normpath(os.path.join(os.path.dirname(key), ref)).replace(os.sep, "/")
            if src.is_file() and dest not in needed:
                needed[dest] = src
                if dest.endswith(".css"):
                    todo.append(dest)


# The page template's own scripts (app/shell/a11y.py writes them into every page the served app makes):
# the site ships each once, beside the bridge, and a page on kvlab's template names it instead of
# holding a copy (9.4 KB a page, 0.55 MB of the site's 30 MB in 58 pages).
SHARED_PAGE_SCRIPTS = ("a11y.js", "bokeh_paint.js", "embed.js", "share.js", "drag.js")


def _share_page_scripts(page_html: str) -> str:
    from kvlab.app.shell.a11y import inline_script

    for script in SHARED_PAGE_SCRIPTS:
        page_html = page_html.replace(f"<script>\n{inline_script(script)}\n</script>", f'<script src="./kvlab/{script}"></script>')
    return page_html


def pyodide_missing(folder: Path = PYODIDE_NPM_DIR) -> str:
    """What to run when the build's own Pyodide package is not installed (a checkout or an installed kvlab)."""
    if (ROOT / "kvlab" / "__init__.py").is_file():  # a checkout: app/site/package.json pins it
        how = f"run `{PYODIDE_INSTALL}` (scripts/test runs it)"
    else:  # an installed kvlab: not inside site-packages
        how = (f"run `npm install --prefix DIR pyodide@{PYODIDE_VERSION}` and pass --pyodide-dir DIR/node_modules/pyodide")
    return (f"Pyodide {PYODIDE_VERSION} (npm package `pyodide`) is not installed at {folder}: {how}, "
            f"or pass --pyodide-cdn for pages that load it from {PYODIDE_CDN}")


def pyodide_source(pyodide_dir: Path | None, cdn: bool) -> Path | None:
    """The folder of Pyodide's npm core package to copy into the site, or None when the pages load it
    from the CDN (`cdn`, --pyodide-cdn). Never falls back to the CDN by itself: a missing package is
    a BuildError that says what to run."""
    if cdn:
        return None
    folder = pyodide_dir or PYODIDE_NPM_DIR
    missing = [f for f in PYODIDE_FILES if not (folder / f).is_file()]
    if missing and pyodide_dir is None:
        raise BuildError(pyodide_missing(folder))
    if missing:
        raise BuildError(f"--pyodide-dir: {folder} lacks {', '.join(missing)} (give the folder of the npm `pyodide` package)")
    version = json.loads((folder / "package.json").read_text(encoding="utf-8")).get("version") \
        if (folder / "package.json").is_file() else None
    if version != PYODIDE_VERSION:
        raise BuildError(f"--pyodide-dir: {folder} holds Pyodide {version}; this site runs {PYODIDE_VERSION}")
    return folder


def _copy_pyodide(src: Path, dest: Path) -> None:
    """Pyodide's core files, the lock file without its package list (PYODIDE_LOCK)."""
    dest.mkdir()
    for name in PYODIDE_FILES:
        if name == PYODIDE_LOCK:
            lock = json.loads((src / name).read_text(encoding="utf-8"))
            lock["packages"] = {}
            (dest / name).write_text(json.dumps(lock, sort_keys=True) + "\n", encoding="utf-8")
        else:
            shutil.copyfile(src / name, dest / name)

