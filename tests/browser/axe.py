"""axe-core (npm, tests/browser/node_modules) run inside a real page, and the list of every page
the app serves with the selector that says the page has finished rendering.

axe walks open shadow roots, so Panel's components (each in its own shadow DOM) are checked
too. "Critical", "serious" and "moderate" violations fail the test; "minor" ones are reported in
the failure message when there are failures, and by scripts that call `run_axe`.
"""

from __future__ import annotations

from pathlib import Path

from kvlab.app.server.serve import page_scripts
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from .support import PAINTED_JS

AXE_JS = Path(__file__).resolve().parent / "node_modules" / "axe-core" / "axe.min.js"
BLOCKING = ("critical", "serious", "moderate")

# What must be on a page before it is checked; any other page (the lessons, the course map, the
# glossary) is ready once its lesson text is drawn.
READY = {
    "/": "text=Panels",
    "/admission": '[data-kv="log"]',
    "/phases": '[data-kv="log"]',
    "/serving_lab": '[data-kv="lab-log"]',
}
LESSON_READY = ".kv-lesson"


def _pages() -> list[tuple[str, str]]:
    """(path, ready selector) for every page `kvlab serve` serves, so a new page is checked too."""
    paths = ["/" if p.stem == "index" else f"/{p.stem}" for p in page_scripts()]
    return [(path, READY.get(path, LESSON_READY)) for path in paths]


PAGES = _pages()


# The phone's checks (axe included, at 320 px) run on test_screenshots' phone load of every page, in the
# light theme (test_phone_screenshot_of_every_page); test_a11y loads the rest: 1280 px in both themes,
# a 320 px phone in the dark one, for the first lesson; test_a11y_lessons the same for the other lessons.
# Loading every page once more for axe alone took about 80 s of the suite.
VIEWPORTS = {"desktop": {"width": 1280, "height": 900}, "phone": {"width": 390, "height": 844},
             "narrow": {"width": 320, "height": 640}}  # WCAG 1.4.10's reflow width, a small phone's screen

# axe's own options: WCAG 2.x A and AA rules plus its best practices (landmarks, one h1, skip link).
RUN_JS = """async () => {
  const r = await axe.run(document, {resultTypes: ['violations']});
  return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
                                 nodes: v.nodes.map(n => ({target: JSON.stringify(n.target), html: n.html.slice(0, 160),
                                                          summary: (n.failureSummary || '').slice(0, 300)}))}));
}"""


def run_axe(page) -> list[dict]:
    """Inject axe-core into `page` (once) and return its violations, once the page is drawn. Every
    page has a level-one heading, drawn by BokehJS like the rest: under load a page's ready element
    can come before it (loaded CI runs axed /lesson_e1 and the built site's lesson_a1 with no h1 yet),
    so wait for it first; then for every Bokeh document to be idle and named (PAINTED_JS: a loaded run
    axed the built site's index while its links were still undrawn, and its empty scrolling main
    failed scrollable-region-focusable). A page still unfinished after these waits is axe's to report."""
    try:
        page.locator("h1").first.wait_for(state="attached", timeout=30_000)
    except PlaywrightTimeoutError:
        pass
    if page.evaluate("((window.Bokeh && window.Bokeh.documents) || []).length > 0"):
        page.evaluate(PAINTED_JS)
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE_JS))
    return page.evaluate(RUN_JS)


def counts(violations: list[dict]) -> dict[str, int]:
    """Violating nodes by impact."""
    out = {"critical": 0, "serious": 0, "moderate": 0, "minor": 0}
    for v in violations:
        out[v["impact"] or "minor"] += len(v["nodes"])
    return out


def describe(violations: list[dict], impacts=BLOCKING) -> str:
    lines = []
    for v in violations:
        if v["impact"] in impacts:
            lines.append(f"{v['impact']} {v['id']} ({v['help']}): {len(v['nodes'])} node(s)")
            lines += [f"    {n['target']} {n['html'][:120]}\n      {n['summary'][:240]}" for n in v["nodes"][:4]]
    return "\n".join(lines)


def assert_accessible(page, where: str) -> None:
    """The checks every page gets on one load: axe finds no critical, serious or moderate violation, every
    control's outline reaches 3:1 against what is behind it (WCAG 1.4.11, which axe does not
    check), and the page shows one <h1> (axe asks for at least one)."""
    import pytest

    from .support import faint_controls, h1_texts

    if not AXE_JS.is_file():  # scripts/test installs it (npm ci in tests/browser)
        pytest.fail(f"axe-core is not installed: run `npm ci --prefix tests/browser` ({AXE_JS} missing)", pytrace=False)
    violations = run_axe(page)
    found = counts(violations)
    assert not any(found[impact] for impact in BLOCKING), f"{where}: {found}\n{describe(violations)}"
    assert faint_controls(page) == [], where
    assert len(h1_texts(page)) == 1, f"{where}: {h1_texts(page)}"
