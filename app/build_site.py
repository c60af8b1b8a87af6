"""`kvlab build-site`: write the static site into ./site (or --out).

    kvlab build-site                    # every page, Pyodide's core copied into the site
    kvlab build-site --pyodide-cdn      # pages load Pyodide's core from jsDelivr instead
    kvlab build-site --help

The Python that must run per interaction is small (sim and the view layer, standard library
only); the UI runtime is large. So the two are split:

- Build time (CPython, Panel): every page script runs once, and Panel lays it out exactly as
  `kvlab serve` shows it, in the light and the dark theme. Each layout is written as a static
  Bokeh document (PAGE.html, PAGE.dark.html) whose views and widgets carry stable Bokeh model
  names (`hbm_bar.bars`, `w.prompt_tokens`). Every file it needs (BokehJS from the bokeh wheel,
  the files of Panel's dist it names, kvlab's loader, bridge and CSS from static/) is copied
  into the site, so the site works from any static host, offline, behind a firewall.
- Run time (browser): the pre-rendered page shows at once. `kvlab/kvlab-bridge.js` starts a
  module worker that loads Pyodide's core, unpacks kvlab's two pure wheels from the site (one
  shared copy, no micropip, no PyPI) and runs `kvlab.app.viewlayer.pages.PanelPage`; each widget
  change becomes one call into Python whose patch is applied with `model.setv(...)`.
- With Node, the build also makes a Pyodide memory snapshot with kvlab imported (app/site_snapshot.py),
  which the worker restores instead of starting Python from scratch.

Nothing here needs the network.
"""

from __future__ import annotations

import argparse
import ast
import html
import json
import os
import re
import shutil
import sys
import tempfile
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from kvlab.app.site_snapshot import make_snapshot
from kvlab.app.site_wheel import ROOT, SITE_WHEELS, build_wheel, file_sha256, kvlab_version
from kvlab.app.viewlayer.query import RESERVED_KEYS

DEFAULT_OUT = Path("site")
DEFAULT_PAGE_GLOBS = ("app/pages/*.py", "lessons/*.py")
STATIC_DIR = ROOT / "static"  # the hand-written loader, bridge and CSS (kvlab/static once installed)
INFO_FILE = "build-info.json"
# Written first, so a folder left by a failed build is still recognised as ours and replaced.
MARKER_FILE = ".kvlab-site"
# Set while pages run at build time: links end in .html, and views name their Bokeh models.
BUILD_ENV_VAR = "KVLAB_BUILD_SITE"
# The Pyodide release the site runs, pinned in tests/pyodide/package.json (a test checks they agree).
PYODIDE_VERSION = "314.0.7"
PYODIDE_CDN = f"https://cdn.jsdelivr.net/pyodide/v{PYODIDE_VERSION}/full/"
PYODIDE_NPM_DIR = ROOT / "tests" / "pyodide" / "node_modules" / "pyodide"
# What a module worker's loadPyodide() fetches from the core package; nothing else is copied.
PYODIDE_FILES = ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json")
# The lock file lists Pyodide's whole package distribution (0.12 MB); the worker loads no package
# (kvlab's wheels are unpacked, not installed by name), so the site's copy keeps the file's `info`
# (Python version, ABI) and lists no package.
PYODIDE_LOCK = "pyodide-lock.json"
THEMES = ("light", "dark")
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


@dataclass(frozen=True)
class SiteOptions:
    out_dir: Path = DEFAULT_OUT
    page_globs: tuple[str, ...] = DEFAULT_PAGE_GLOBS
    pyodide_dir: Path | None = None  # None: the npm package under tests/pyodide, when installed
    pyodide_cdn: bool = False
    snapshot: bool = True  # a Pyodide memory snapshot, when Node is there and Pyodide is copied into the site
    title: str = "kvlab"


@dataclass(frozen=True)
class SiteReport:
    out_dir: Path
    pages: tuple[Page, ...]
    info: dict = field(repr=False)
    notes: tuple[str, ...] = ()


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
        base = Path(pattern)
        matches = sorted(base.parent.glob(base.name)) if base.is_absolute() else sorted(root.glob(pattern))
        for path in matches:
            source = path.read_text(encoding="utf-8")
            if path.name.startswith("_") or ".servable(" not in source:
                continue
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


# ---- the page shell ------------------------------------------------------------------------------

def _name_lesson_views(doc, specs: list[dict]) -> None:
    """A lesson's live view number i (its layout carries the class kv-live-<i>): its view models and
    widgets are named `lv<i>:<name>` (a lesson may show one view twice, and BokehJS cannot look up a
    name two models share); spec i gets the names it has, which is all the browser may patch."""
    from kvlab.app.controls import WIDGET_CLASS_PREFIX

    for root in doc.roots:
        for layout in root.references():
            i = next((int(c[8:]) for c in getattr(layout, "css_classes", None) or () if re.fullmatch(r"kv-live-\d+", c)), None)
            if i is None or i >= len(specs):
                continue
            names = set()
            for model in layout.references():
                widget = next((c[len(WIDGET_CLASS_PREFIX):] for c in getattr(model, "css_classes", None) or ()
                               if c.startswith(WIDGET_CLASS_PREFIX)), None)
                name = f"w.{widget}" if widget else model.name
                if name and (widget or "." in name) and not name.startswith("lv"):
                    model.name = f"lv{i}:{name}"
                    names.add(name)
            specs[i]["names"] = sorted(names)


_ANSWER_CLASS = re.compile(r"kv-answer-(.+)-(\d+)")


def _name_lesson_answers(doc) -> None:
    """A lesson's choice buttons (class kv-answer-<key>-<index>, lessons/render.py) are named
    `answer:<key>:<index>` and its recap `lesson:recap`: the bridge re-applies the answers a link
    carries (?a1-llama=1) by running the chosen button's script, and shows the recap once every
    step is answered, as the server's LessonBody does."""
    from kvlab.lessons.render import RECAP_CLASS

    seen: set[str] = set()
    for model in doc.models:
        for cls in getattr(model, "css_classes", None) or ():
            match = _ANSWER_CLASS.fullmatch(cls)
            name = f"answer:{match[1]}:{int(match[2])}" if match else "lesson:recap" if cls == RECAP_CLASS else None
            if name:
                if name in seen:
                    raise BuildError(f"two models of one page would be named {name}: a lesson's step keys must be unique")
                seen.add(name)
                model.name = name


def _name_models(doc, live: bool, specs: list[dict] | None = None) -> None:
    """Widgets get `w.<setting>` from their kv-w-* class (views named themselves while the page ran).
    A lesson's live views get their own prefix (`_name_lesson_views`); every other view name on a
    page the bridge does not drive is removed (BokehJS cannot look up a name two models share)."""
    from kvlab.app.controls import name_widget_models

    if specs:
        _name_lesson_views(doc, specs)
    if not live:
        for model in doc.models:
            if model.name and "." in model.name and not model.name.startswith("lv"):
                model.name = None
    navs = []
    for root in doc.roots:
        if live:
            name_widget_models(root)
        navs += [m for m in root.references() if hasattr(getattr(m, "data", None), "query") and hasattr(m.data, "links")]
    for nav in navs[:1]:  # the address bar (app/share.py): the bridge hands it each new query
        nav.name = "nav"
    _name_lesson_answers(doc)


def _data_attributes(page: Page, theme: str, info: dict, live: bool = True) -> str:
    attrs = {"page": page.name, "bridge": page.bridge, "group": page.group, "theme": theme, **info}
    if page.live and live:
        attrs["live"] = json.dumps(page.live, sort_keys=True)
    return " ".join(f'data-{k.replace("_", "-")}="{html.escape(str(v), quote=True)}"' for k, v in sorted(attrs.items()))


def _boot_script(page: Page, theme: str, info: dict) -> str:
    """kvlab-boot.js, for the <head> of a page that runs Python: a live panel's worker starts before
    BokehJS loads, and it writes the worker's boot message for every page. Without the lesson's
    live specs (they go to the bridge), so the page's <meta charset> stays in its first 1024 bytes."""
    # shell_keys: the link's keys the page shell reads (the theme, embed mode), never the settings:
    # a link with only those still takes the lab's opening run from the build.
    boot = {**info, "shell_keys": " ".join(sorted(RESERVED_KEYS))}
    return f'<script src="./kvlab/kvlab-boot.js" {_data_attributes(page, theme, boot, live=False)}></script>\n'


def _shell(page: Page, theme: str, info: dict) -> str:
    data = _data_attributes(page, theme, info)
    return (f'<link rel="stylesheet" href="./kvlab/kvlab-site.css" type="text/css">\n'
            f'<noscript><div class="kvlab-banner kvlab-error">This page runs the kvlab simulator in your browser and needs '
            f'JavaScript. What is shown is the default state, computed when the site was built.</div></noscript>\n'
            f'<script src="./kvlab/kvlab-bridge.js" {data}></script>\n')


# ---- what each page loads: only what its models need -------------------------------------------

def share_stylesheets(doc) -> int:
    """One InlineStyleSheet model per distinct CSS string, referenced by every model that held the string.

    Panel gives each model its stylesheets as raw strings (the focus ring and the loading spinner on
    every model, a lesson's CSS on each of its panes), and Bokeh writes a string once per model that
    holds it: 65 copies of two short sheets and 15 of a 4.5 kB one on lesson D1, 6.5 MB of the
    site's 12 MB of HTML. A shared model is written once. BokehJS builds a new <style> for each view
    from a string and from an InlineStyleSheet model alike (`underlying()` makes a fresh element per
    call), so every view gets the same rules in the same order. Returns the number of models made."""
    from bokeh.models import InlineStyleSheet

    shared: dict[str, InlineStyleSheet] = {}
    # Frozen: otherwise every assignment makes Bokeh walk the whole model graph again (4 s a page).
    with doc.models.freeze():
        for model in list(doc.models):
            sheets = getattr(model, "stylesheets", None)
            if sheets and any(isinstance(s, str) for s in sheets):
                model.stylesheets = [shared.setdefault(s, InlineStyleSheet(css=s)) if isinstance(s, str) else s for s in sheets]
    return len(shared)


# Run by BokehJS when a deferred card (defer_collapsed_cards) opens the first time: its contents go
# back after the header, and BokehJS builds their views now. The card's view draws itself again for
# its new children, header button included: the focus, on the old button when the card was opened
# from the keyboard, goes to the new one.
OPEN_DEFERRED_CARD_JS = """if (card.collapsed || card.children.length > 1) return;
const view = Bokeh.index.find_one(card), focused = view != null && view.shadow_el.activeElement != null;
card.children = [card.children[0], ...contents];
if (focused) requestAnimationFrame(() => view.button_el.focus());"""


def defer_collapsed_cards(doc) -> int:
    """A collapsed card's contents are built when the card is first opened, not with the page.

    BokehJS builds every model's view as the page loads, the collapsed cards' contents included,
    and Panel's card then hides each of them, one layout of the page per child: the serving lab's
    six collapsed sidebar cards hold 40 widgets, 0.25 s of its 1.7 s load here. Each such card keeps
    only its header; its contents stay in the document, held by a callback on the card's
    `collapsed` (OPEN_DEFERRED_CARD_JS), so the bridge finds, watches and patches them by name as
    before. Returns the number of cards deferred."""
    from bokeh.models import CustomJS
    from panel.models.layout import Card

    cards = [m for m in doc.models if isinstance(m, Card) and m.collapsed and len(m.children) > 1]
    with doc.models.freeze():
        for card in cards:
            header, *contents = card.children
            card.children = [header]
            card.js_on_change("collapsed", CustomJS(args={"card": card, "contents": contents}, code=OPEN_DEFERRED_CARD_JS))
    return len(cards)


# Run by BokehJS once the page's document is built (DocumentReady): each later section gets its
# contents back, one section per idle moment of the main thread, so a move made meanwhile waits for
# at most one section. The mark says when the last one is in (benchmarks/site_load.py reports it).
BUILD_LATER_SECTIONS_JS = """let k = 0;
const next = () => {
  if (k === sections.length) { performance.mark("kvlab-later-sections"); return; }
  const section = sections[k], contents = section.tags;
  section.children = contents;
  section.tags = [];
  k += 1;
  if (window.requestIdleCallback) requestIdleCallback(next, { timeout: 500 }); else setTimeout(next, 16);
};
next();"""


def defer_later_sections(doc) -> int:
    """The contents of each layout marked LATER_CLASS (below a long page's first screen) are built
    once the page is up, not with it.

    The page shows nothing until BokehJS has built the whole document, and the serving lab's five
    lower sections (four charts and the log) were 0.24 s of its 1.6 s to a first interaction here.
    Each such layout keeps its place in the page, empty, and holds its contents in its `tags` (a
    model's list of arbitrary values, which BokehJS does not draw): they stay in the document's
    index of models, so the bridge finds and patches them by name as before (a document callback's
    arguments are not in that index, in BokehJS or in Bokeh). A DocumentReady callback
    (BUILD_LATER_SECTIONS_JS) moves them back. Returns the number of sections deferred."""
    from bokeh.events import DocumentReady
    from bokeh.models import CustomJS
    from kvlab.app.page import LATER_CLASS

    sections = [m for m in _in_page_order(doc) if LATER_CLASS in (getattr(m, "css_classes", None) or ()) and m.children]
    if not sections:
        return 0
    with doc.models.freeze():
        for section in sections:
            if section.tags:
                raise BuildError(f"a section deferred with {LATER_CLASS} has tags of its own: {section.tags!r}")
            section.tags, section.children = list(section.children), []
    doc.js_on_event(DocumentReady, CustomJS(args={"sections": sections}, code=BUILD_LATER_SECTIONS_JS))
    return len(sections)


def _in_page_order(doc) -> list:
    """The layouts of the page, in its order (depth first through every root's `children`)."""
    from bokeh.models import LayoutDOM

    order: list = []

    def walk(model) -> None:
        order.append(model)
        for child in model.children if isinstance(getattr(model, "children", None), list) else ():
            child = child[0] if isinstance(child, tuple) else child  # a GridBox holds (model, row, column)
            if isinstance(child, LayoutDOM):
                walk(child)
    for root in doc.roots:
        walk(root)
    return order


# MathJax's delimiters as Bokeh's bundle configures them (display $$...$$ and \[...\], inline \(...\),
# and \begin{...} environments): a text holding one is typeset only when bokeh-mathjax is loaded.
_TEX = re.compile(r"\$\$|\\\(|\\\[|\\begin\{")
_TEXT_PROPERTIES = ("text", "title", "label", "axis_label")


def unneeded_bokeh_bundles(doc) -> list[str]:
    """BokehJS bundles a page's models do not need. Panel's saved page names every bundle; a
    standalone Bokeh page names only those its models need, by Bokeh's own rules (bokeh.embed.bundle):
    bokeh-gl for a WebGL plot, bokeh-mathjax for math text. Panel adds MathJax for any HTML pane, in
    case its text holds TeX; here a page keeps it when any model's text does. bokeh-tables and
    bokeh-widgets stay: panel.min.js requires bokehjs's tables module as it loads (without it the page
    stops with "Cannot find module '@bokehjs/models/widgets/tables'")."""
    from bokeh.embed.bundle import _use_gl, _use_mathjax

    models = set(doc.models)
    unneeded = []
    if not _use_gl(models):
        unneeded.append("bokeh-gl")
    tex = any(not getattr(m, "disable_math", False) and isinstance(getattr(m, prop, None), str) and _TEX.search(getattr(m, prop))
              for m in models for prop in _TEXT_PROPERTIES if prop in m.properties())
    if not tex and not _use_mathjax(models):
        unneeded.append("bokeh-mathjax")
    return unneeded


def _drop_bundles(page_html: str, bundles: list[str]) -> str:
    """Remove the script tags of `bundles` (Panel leaves bokeh-mathjax out itself on a page without an
    HTML pane). tests/site/test_build_site.py checks which bundles every built page names."""
    for bundle in bundles:
        page_html = re.sub(r'<script type="text/javascript" src="https://cdn\.bokeh\.org/bokeh/release/'
                           + re.escape(bundle) + r'-\d+\.\d+\.\d+(?:\.\w+)?\.min\.js"></script>\n?', "", page_html)
    return page_html


# The page template's own scripts (app/a11y.py writes them into every page the served app makes):
# the site ships each once, beside the bridge, and a page on kvlab's template names it instead of
# holding a copy (9.4 KB a page, 0.55 MB of the site's 30 MB in 58 pages).
SHARED_PAGE_SCRIPTS = ("a11y.js", "bokeh_paint.js")


def _share_page_scripts(page_html: str) -> str:
    from kvlab.app.a11y import inline_script

    for script in SHARED_PAGE_SCRIPTS:
        page_html = page_html.replace(f"<script>\n{inline_script(script)}\n</script>", f'<script src="./kvlab/{script}"></script>')
    return page_html


def render_page(page: Page, theme: str, roots: dict, needed: dict[str, Path], info: dict) -> tuple[str, str]:
    """(the page's HTML with every resource local, its title)."""
    import io

    from bokeh.core.validation.check import silenced
    from bokeh.core.validation.warnings import EMPTY_LAYOUT
    from bokeh.resources import CDN
    from panel.io.resources import set_resource_mode
    from panel.io.save import save
    from panel.io.state import set_curdoc

    specs = None
    if page.group == "lesson":
        from kvlab.lessons import render as lesson_render

        lesson_render.BUILD_LIVE_SPECS.clear()
    doc = run_page(page.source, theme)
    if page.group == "lesson":
        specs = [dict(spec) for spec in lesson_render.BUILD_LIVE_SPECS]
    _name_models(doc, page.bridge == "panel", specs)
    defer_collapsed_cards(doc)
    defer_later_sections(doc)
    share_stylesheets(doc)
    unneeded = unneeded_bokeh_bundles(doc)
    if specs:  # the live views answer their controls: the worker starts at the first move (see kvlab-bridge.js)
        page = replace(page, bridge="lesson", live=tuple(specs))
    buf = io.StringIO()
    # Inside the page's own document: Panel's per-session config (the template's design, which
    # names Bootstrap's JavaScript) applies only there.
    # The layouts deferred above are empty on purpose until the page fills them: Bokeh's warning for
    # an empty layout (W-1002) would name each of them at every build.
    with set_curdoc(doc), set_resource_mode("cdn"), silenced(EMPTY_LAYOUT):
        save(doc, buf, resources=CDN, template=doc.template, template_variables=doc._template_variables, title=doc.title)
    page_html = buf.getvalue()
    # The template's own scripts (Bootstrap's, for the sidebar toggle) are listed in its resources
    # but only a served page loads them; name them in the page's <head>.
    scripts = doc._template_variables.get("template_resources", {}).get("js", {}).values()
    tags = "".join(f'<script type="text/javascript" src="{html.escape(src)}"></script>\n' for src in scripts if src not in page_html)
    page_html = page_html.replace("<head>", "<head>\n" + tags, 1)
    page_html = _drop_bundles(page_html, unneeded)
    page_html = _localise(page_html, roots, needed)
    page_html = _share_page_scripts(page_html)
    end = page_html.rfind("</body>")
    if end < 0:
        raise BuildError(f"the saved page {page.name} has no </body>")
    page_html = page_html[:end] + _shell(page, theme, info) + page_html[end:]
    if page.bridge != "static":
        charset = re.search(r"<meta charset=[^>]*>\n?", page_html)
        at = charset.end() if charset else page_html.index("<head>") + len("<head>")
        page_html = page_html[:at] + _boot_script(page, theme, info) + page_html[at:]
    return page_html, doc.title


# ---- the build -------------------------------------------------------------------------------------

def _check_out(out: Path) -> None:
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not (out / MARKER_FILE).is_file())):
        raise BuildError(f"--out: {out} is not empty and was not written by kvlab build-site; remove it or choose another folder")


def _staging_dir(out: Path) -> Path:
    """An empty folder beside `out`: the site is built there and swapped in only when complete, so
    a failed build leaves the previous site being served as it was."""
    out.parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f".{out.name}-building-", dir=out.parent))
    (stage / MARKER_FILE).write_text("written by kvlab build-site; the whole folder is replaced on each build\n", encoding="utf-8")
    return stage


def _swap_in(stage: Path, out: Path) -> None:
    if out.exists():
        shutil.rmtree(out)
    stage.rename(out)


def _world_readable(folder: Path) -> None:
    """Any web server's user can read the site: files 644, folders 755 (mkdtemp makes 700)."""
    folder.chmod(0o755)
    for path in folder.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)


def pyodide_source(opts: SiteOptions) -> tuple[Path | None, str | None]:
    """(the folder of Pyodide's npm core package to copy, or None when pages use the CDN; a note)."""
    if opts.pyodide_cdn:
        return None, None
    folder = opts.pyodide_dir or PYODIDE_NPM_DIR
    missing = [f for f in PYODIDE_FILES if not (folder / f).is_file()]
    if missing:
        if opts.pyodide_dir is None:  # an installed kvlab has no node_modules: still build, and say so
            return None, (f"Pyodide {PYODIDE_VERSION} (npm package `pyodide`) is not installed at {folder}, so pages load "
                          f"it from {PYODIDE_CDN}; for a site that needs no other host, run `npm ci --prefix tests/pyodide` "
                          "in a checkout or pass --pyodide-dir DIR")
        raise BuildError(f"--pyodide-dir: {folder} lacks {', '.join(missing)} (give the folder of the npm `pyodide` package)")
    version = json.loads((folder / "package.json").read_text(encoding="utf-8")).get("version") \
        if (folder / "package.json").is_file() else None
    if version != PYODIDE_VERSION:
        raise BuildError(f"--pyodide-dir: {folder} holds Pyodide {version}; this site runs {PYODIDE_VERSION}")
    return folder, None


def _index_html(pages: list[Page], title: str) -> str:
    """pages.html: a plain list of every page; it works with JavaScript off."""
    parts = []
    for key, heading in (("panel", "Panels"), ("lesson", "Lessons")):
        items = [p for p in pages if p.group == key]
        if not items:
            continue
        lis = "\n".join(f'<li><a href="./{html.escape(p.name)}.html">{html.escape(p.title)}</a>'
                        + (f" — {html.escape(p.summary)}" if p.summary and p.summary != p.title else "") + "</li>" for p in items)
        parts.append(f"<h2>{heading}</h2>\n<ul>\n{lis}\n</ul>")
    body = "\n".join(parts)
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)}</title>
<link rel="stylesheet" href="./kvlab/kvlab-site.css" type="text/css">
</head>
<body class="kvlab-index">
<h1>{html.escape(title)}</h1>
<p>An interactive teaching simulator of the KV cache of LLM serving. Each page shows its default state at
once and runs the simulator in your browser (Python in WebAssembly) a few seconds later.</p>
{body}
</body>
</html>
"""


def build(opts: SiteOptions) -> SiteReport:
    """Build the site; raise BuildError with a message that names the option or page at fault."""
    pages = discover_pages(opts.page_globs)
    if not pages:
        raise BuildError(f"no pages found: looked for scripts calling .servable( in {', '.join(opts.page_globs)}")
    pyodide_dir, note = pyodide_source(opts)
    final_out = opts.out_dir.resolve()
    _check_out(final_out)
    out = _staging_dir(final_out)
    previous = os.environ.get(BUILD_ENV_VAR)
    os.environ[BUILD_ENV_VAR] = "1"
    try:
        info, pages = _build_into(out, pages, opts, pyodide_dir)
        _world_readable(out)
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)
        raise
    finally:
        if previous is None:
            os.environ.pop(BUILD_ENV_VAR, None)
        else:
            os.environ[BUILD_ENV_VAR] = previous
    _swap_in(out, final_out)
    notes = tuple(n for n in (note, info.get("snapshot_note")) if n)
    return SiteReport(final_out, tuple(pages), info, notes)


def _build_into(out: Path, pages: list[Page], opts: SiteOptions, pyodide_dir: Path | None) -> tuple[dict, list[Page]]:
    import bokeh
    import panel

    wheels = [build_wheel(spec, out / "wheels") for spec in SITE_WHEELS]
    pyodide_url = "./pyodide/" if pyodide_dir is not None else PYODIDE_CDN
    shell_info = {"pyodide_url": pyodide_url, "wheels": " ".join(f"./wheels/{w.name}" for w in wheels),
                  "kvlab_version": kvlab_version()}
    if pyodide_dir is not None:
        _copy_pyodide(pyodide_dir, out / "pyodide")
    snapshot, note = None, None
    if pyodide_dir is None:
        note = "no Pyodide memory snapshot: it is made only with the Pyodide the build copies into the site"
    elif not opts.snapshot:
        note = "no Pyodide memory snapshot (--no-snapshot)"
    else:
        snapshot, note = make_snapshot(pyodide_dir, PYODIDE_VERSION, wheels, out)
    if snapshot is not None:  # the worker restores it (static/kvlab-worker.mjs); the version pins it
        shell_info.update(snapshot=f"./{snapshot['file']}", snapshot_pyodide=snapshot["pyodide_version"])
    from kvlab.app.viewlayer.lab_page import LabPage

    opening = write_lab_opening(out) if any(p.name == LabPage.page for p in pages) else None
    roots = _vendor_roots()
    needed: dict[str, Path] = {}
    built = []
    for page in pages:
        title = page.title
        page_info = {**shell_info, "opening": f"./{opening}"} if opening and page.name == LabPage.page else shell_info
        for theme in THEMES:
            page_html, doc_title = render_page(page, theme, roots, needed, page_info)
            name = f"{page.name}.html" if theme == "light" else f"{page.name}.dark.html"
            (out / name).write_text(page_html, encoding="utf-8")
            if doc_title not in ("", "Panel Application", "Bokeh Application"):
                title = re.sub(r"^kvlab\s*[·|-]\s*", "", doc_title)
        built.append(replace(page, title=title))
    # Panel's template names ./favicon.ico beside the page: ship Panel's own icon there.
    needed["favicon.ico"] = roots_panel_dist(roots) / "images" / "favicon.ico"
    _copy_css_dependencies(needed)
    for rel, src in sorted(needed.items()):
        dest = out / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest)
    if not STATIC_DIR.is_dir():
        raise BuildError(f"kvlab's static assets are missing: no folder {STATIC_DIR}")
    shutil.copytree(STATIC_DIR, out / "kvlab")
    from kvlab.app.a11y import TEMPLATES

    for script in SHARED_PAGE_SCRIPTS:
        shutil.copyfile(TEMPLATES / script, out / "kvlab" / script)
    (out / "pages.html").write_text(_index_html(built, opts.title), encoding="utf-8")
    if not any(p.name == "index" for p in built):
        (out / "index.html").write_text(_index_html(built, opts.title), encoding="utf-8")
    info = {
        "kvlab_version": kvlab_version(), "panel_version": panel.__version__, "bokeh_version": bokeh.__version__,
        "pyodide_version": PYODIDE_VERSION, "pyodide_url": pyodide_url, "pyodide_self_hosted": pyodide_dir is not None,
        "snapshot": snapshot, "snapshot_note": note, "lab_opening": opening,
        "wheels": {w.name: file_sha256(w) for w in wheels},
        "vendor_files": len(needed),
        "pages": [{**asdict(p), "source": _display_path(p.source), "html": f"{p.name}.html", "dark": f"{p.name}.dark.html"}
                  for p in built],
    }
    (out / INFO_FILE).write_text(json.dumps(info, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return info, built


def write_lab_opening(out: Path) -> str:
    """The serving lab's opening run, computed here by the same engine (viewlayer.lab_page.opening_json),
    gzip-compressed into data/, named by its sha256 (a browser never uses a cached copy made for
    other files). The lab page names it; its worker hands it to LabPage, which takes it instead of
    running the run again (0.3-0.6 s of Pyodide while the page loads here) when it is the run of
    the page's state. Returns its path in the site."""
    import gzip
    import hashlib

    from kvlab.app.viewlayer.lab_page import opening_json

    data = gzip.compress(opening_json().encode("utf-8"), compresslevel=9, mtime=0)
    name = f"data/lab-opening-{hashlib.sha256(data).hexdigest()[:16]}.json.gz"
    (out / name).parent.mkdir(parents=True, exist_ok=True)
    (out / name).write_bytes(data)
    return name


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


def _display_path(path: Path) -> str:
    try:
        return path.relative_to(ROOT).as_posix()
    except ValueError:
        return str(path)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kvlab build-site", description="Write kvlab's static site: every panel and lesson page, "
                                "pre-rendered, with every file it needs (BokehJS, Panel's CSS, Pyodide's core, kvlab's wheels). "
                                "Offline; the site needs no other host.")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder to write (default: site/ in the current folder); "
                   "replaced on each build")
    p.add_argument("--pages", nargs="+", metavar="GLOB", default=list(DEFAULT_PAGE_GLOBS),
                   help="page scripts to build, as globs relative to the repository or absolute (default: %(default)s)")
    host = p.add_mutually_exclusive_group()
    host.add_argument("--pyodide-dir", type=Path, metavar="DIR", help=f"the npm `pyodide` {PYODIDE_VERSION} package to copy "
                      "into the site (default: tests/pyodide/node_modules/pyodide, installed by `npm ci --prefix tests/pyodide`)")
    host.add_argument("--pyodide-cdn", action="store_true", help=f"do not copy Pyodide's core; pages load it from {PYODIDE_CDN}")
    p.add_argument("--no-snapshot", action="store_true", help="do not make the Pyodide memory snapshot (made by default "
                   "with Node when Pyodide is copied into the site; pages then start Python from scratch)")
    p.add_argument("--title", default="kvlab", help="title of the plain page list, pages.html (default: %(default)s)")
    return p


NEXT_STEPS = """\
Next: serve the folder over HTTP and open it in a browser, for example
    python -m http.server --bind 127.0.0.1 --directory {out} 8000      # then http://127.0.0.1:8000/
or copy it to any static host (a course page, GitHub Pages). Opening {out}/index.html directly
(file://) will not work: browsers refuse to start a web worker and to fetch Pyodide's WebAssembly
and kvlab's wheels from file:// pages, so the pages would stay at their pre-rendered state."""


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.pyodide_dir is not None and not args.pyodide_dir.is_dir():
        parser.error(f"--pyodide-dir: {args.pyodide_dir} is not a folder")
    opts = SiteOptions(out_dir=args.out, page_globs=tuple(args.pages), pyodide_dir=args.pyodide_dir,
                       pyodide_cdn=args.pyodide_cdn, snapshot=not args.no_snapshot, title=args.title)
    try:
        report = build(opts)
    except BuildError as e:
        print(f"kvlab build-site: error: {e}", file=sys.stderr)
        return 1
    info = report.info
    size = sum(p.stat().st_size for p in report.out_dir.rglob("*") if p.is_file())
    print(f"kvlab build-site: {len(report.pages)} pages (light and dark) into {report.out_dir}, {size / 1e6:.1f} MB")
    for page in report.pages:
        live = "live" if page.bridge == "panel" else "static"
        print(f"  {page.name}.html  <- {_display_path(page.source)}  ({live})")
    print(f"  Pyodide {info['pyodide_version']} from {info['pyodide_url']}; BokehJS {info['bokeh_version']}, "
          f"Panel {info['panel_version']} files copied; wheels: {', '.join(info['wheels'])}")
    if snap := info["snapshot"]:
        print(f"  Pyodide memory snapshot with kvlab imported: {snap['file']}, {snap['bytes'] / 1e6:.1f} MB gzip "
              f"({snap['raw_bytes'] / 1e6:.1f} MB restored), made in {(snap['boot_ms'] + snap['import_ms']) / 1000:.1f} s")
    for note in report.notes:
        print(f"  note: {note}")
    print(NEXT_STEPS.format(out=_display_path(report.out_dir)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
