"""Which page scripts the site has, and each one run once under CPython as `panel serve` would.

A page is a script that publishes something with `.servable(`; `run_page` returns the Bokeh
Document it lays out, which app/site/render.py turns into the page's static HTML.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from kvlab.app.pages import PAGE_GLOBS as DEFAULT_PAGE_GLOBS
from kvlab.app.pages import ROOT, is_page, repo_glob

# Pages whose views the worker serves live (viewlayer.pages.VIEWS); others are static documents
# with the shell's links, theme and embed mode.
LIVE_PAGES = ("admission", "phases", "serving_lab")


class BuildError(RuntimeError):
    """A build problem the user can fix; the message names the option or page."""


@dataclass(frozen=True)
class Page:
    source: Path
    name: str  # output file stem: NAME.html, NAME.dark.html
    title: str  # the page's own title once it has run (Document.title), else from the docstring
    summary: str  # the docstring's first line, up to a colon
    group: str  # "panel" or "lesson"
    bridge: str = "static"  # "panel": widgets answered by the worker; "static": no Python in the browser;
    # "lesson": a lesson's live views, answered by a worker started at the first move
    live: tuple = ()  # a lesson's live views (kind, views, state, model names), set while it is rendered



def _docstring_head(source: str) -> str:
    try:
        doc = ast.get_docstring(ast.parse(source)) or ""
    except SyntaxError:
        doc = ""
    first = doc.strip().splitlines()[0].strip() if doc.strip() else ""
    return first.split(":")[0].strip().rstrip(".")


def discover_pages(globs: tuple[str, ...] = DEFAULT_PAGE_GLOBS, root: Path = ROOT) -> list[Page]:
    """Pages are scripts that publish something with `.servable(`; helpers beside them are skipped."""
    pages: dict[str, Page] = {}
    for pattern in globs:
        for path in repo_glob(pattern, root):
            if not is_page(path):
                continue
            source = path.read_text(encoding="utf-8")
            if path.stem in pages:
                raise BuildError(f"two pages would both be written as {path.stem}.html: {pages[path.stem].source} and {path}; rename one")
            summary = _docstring_head(source)
            group = "lesson" if "lessons" in path.parts else "panel"
            bridge = "panel" if path.stem in LIVE_PAGES and group == "panel" else "static"
            pages[path.stem] = Page(path.resolve(), path.stem, summary or path.stem.replace("_", " ").title(), summary, group,
                                    bridge)
    return list(pages.values())


def run_page(path: Path, theme: str = "light"):
    """Run one page script under CPython as `panel serve` would, and return its Bokeh Document.

    Raises BuildError with the page's traceback when it fails or publishes nothing.
    """
    import panel as pn
    from bokeh.document import Document
    from panel.io.application import build_single_handler_application
    from panel.io.document import MockSessionContext
    from panel.io.resources import set_resource_mode
    from panel.io.state import set_curdoc, state

    app = build_single_handler_application(str(Path(path).resolve()))
    handler = app._handlers[0]
    doc = Document()
    doc._session_context = lambda: MockSessionContext(document=doc)  # what panel.io.convert does
    # Resources are laid out as CDN URLs, which the build then points at the site's own copies.
    with set_curdoc(doc), set_resource_mode("cdn"), pn.config.set(theme="dark" if theme == "dark" else "default"):
        app.initialize_document(doc)
        state._on_load(None)
    if getattr(handler, "failed", False):
        raise BuildError(f"page {path} failed under CPython: {handler.error}\n{handler.error_detail}")
    if not doc.roots:
        raise BuildError(f"page {path} publishes nothing: mark its layout .servable()")
    return doc

