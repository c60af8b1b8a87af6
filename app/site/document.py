"""Changes to a page's Bokeh Document before it is saved: model names the browser bridge looks up,
and less for the browser to build (shared stylesheets, deferred cards and sections, only the
BokehJS bundles the page needs)."""

from __future__ import annotations

import re

from .discover import BuildError
from .marks import BODY_CLASS, RECAP_CLASS, STEP_CLASS_PREFIX


def _name_lesson_views(doc, specs: list[dict]) -> None:
    """A lesson's live view number i (its layout carries the class kv-live-<i>): its view models and
    widgets are named `lv<i>:<name>` (a lesson may show one view twice, and BokehJS cannot look up a
    name two models share); spec i gets the names it has, which is all the browser may patch."""
    from kvlab.app.views.controls import WIDGET_CLASS_PREFIX

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
    step is answered, as the server's LessonBody does. Its column and steps (marks.BODY_CLASS,
    STEP_CLASS_PREFIX) are named for ?step=<key>, which shows one step alone."""
    seen: set[str] = set()
    for model in doc.models:
        for cls in getattr(model, "css_classes", None) or ():
            match = _ANSWER_CLASS.fullmatch(cls)
            name = (f"answer:{match[1]}:{int(match[2])}" if match else "lesson:recap" if cls == RECAP_CLASS
                    else "lesson:body" if cls == BODY_CLASS
                    else f"step:{cls[len(STEP_CLASS_PREFIX):]}" if cls.startswith(STEP_CLASS_PREFIX) else None)
            if name:
                if name in seen:
                    raise BuildError(f"two models of one page would be named {name}: a lesson's step keys must be unique")
                seen.add(name)
                model.name = name


def _name_models(doc, live: bool, specs: list[dict] | None = None) -> None:
    """Widgets get `w.<setting>` from their kv-w-* class (views named themselves while the page ran).
    A lesson's live views get their own prefix (`_name_lesson_views`); every other view name on a
    page the bridge does not drive is removed (BokehJS cannot look up a name two models share)."""
    from kvlab.app.views.controls import name_widget_models

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
    for nav in navs[:1]:  # the address bar (app/shell/share.py): the bridge hands it each new query
        nav.name = "nav"
    _name_lesson_answers(doc)


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
    from kvlab.app.shell.page import LATER_CLASS

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
