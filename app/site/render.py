"""One page into static HTML: run it, adjust its document (app/site/document.py), save it with every
resource local (app/site/assets.py), and add the shell that starts the browser bridge."""

from __future__ import annotations

import html
import json
import re
from dataclasses import replace
from pathlib import Path

from kvlab.app.viewlayer.query import RESERVED_KEYS

from . import marks
from .assets import _localise, _share_page_scripts
from .discover import BuildError, Page, run_page
from .document import _drop_bundles, _name_models, defer_collapsed_cards, defer_later_sections, share_stylesheets, unneeded_bokeh_bundles
from .pack import pack_documents

THEMES = ("light", "dark")


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
        marks.BUILD_LIVE_SPECS.clear()
    doc = run_page(page.source, theme)
    if page.group == "lesson":
        specs = [dict(spec) for spec in marks.BUILD_LIVE_SPECS]
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
    page_html = pack_documents(page_html)
    end = page_html.rfind("</body>")
    if end < 0:
        raise BuildError(f"the saved page {page.name} has no </body>")
    page_html = page_html[:end] + _shell(page, theme, info) + page_html[end:]
    if page.bridge != "static":
        charset = re.search(r"<meta charset=[^>]*>\n?", page_html)
        at = charset.end() if charset else page_html.index("<head>") + len("<head>")
        page_html = page_html[:at] + _boot_script(page, theme, info) + page_html[at:]
    return page_html, doc.title

