"""A lesson page's layout in a real Chromium (issue 37, "Charts and type"): the choices a student taps
and the estimate box are at least 44 x 44 CSS px with room between them (WCAG 2.5.5, AAA), and a
revealed step's live view sits beside its words on a wide screen, whose lines keep a reading measure,
and under them on a narrower one. One page load per width: lesson A3 opened with its first step (an
estimate, with a live view) answered from the link, so its second step's choices are still to be made."""

import pytest
from kvlab.lessons import course

from .support import DEEP_ALL

pytestmark = pytest.mark.browser

LESSON = course.lesson("A3")
FIRST, SECOND = (s.prediction for s in LESSON.steps[:2])
TARGET_PX = 44  # WCAG 2.5.5 (AAA) and Apple's Human Interface Guidelines
ROOM_PX = 8  # between two targets
MEASURE_CHARS = (60, 75)  # a reading measure, in characters a line

# What the tests measure, through Panel's shadow roots: each choice button and estimate box of the
# page (its box and label), the two columns of a revealed step, and the characters a line of each
# paragraph of its words holds (its width over the mean width of its characters in its own font).
LAYOUT_JS = "() => {" + DEEP_ALL + """
  const parentOf = (el) => el.parentElement || (el.parentNode && el.parentNode.host) || null;
  const within = (el, cls) => { for (let e = el; e; e = parentOf(e)) { if (e.classList && e.classList.contains(cls)) { return true; } }
                                return false; };
  const box = (e) => { const r = e.getBoundingClientRect(); return {x: r.x, y: r.y, w: r.width, h: r.height}; };
  const shown = (e) => e.getClientRects().length > 0;
  const ctx = document.createElement('canvas').getContext('2d');
  const targets = deepAll('button.bk-btn, input.bk-input').filter((e) => shown(e) && within(e, 'kv-predict'))
    .map((e) => ({what: (e.textContent || e.getAttribute('aria-label') || e.placeholder || '').trim().slice(0, 40),
                  kind: e.tagName, ...box(e)}));
  const lines = deepAll('p').filter((p) => shown(p) && within(p, 'kv-reveal-words') && p.textContent.length > 150).map((p) => {
    const s = getComputedStyle(p); ctx.font = `${s.fontStyle} ${s.fontWeight} ${s.fontSize} ${s.fontFamily}`;
    const t = p.textContent.replace(/\\s+/g, ' ');
    return {text: t.slice(0, 30), chars: p.getBoundingClientRect().width / (ctx.measureText(t).width / t.length)}; });
  const col = (cls) => deepAll('.' + cls).filter(shown).map(box);
  return {targets, lines, text: col('kv-reveal-words'), aside: col('kv-reveal-shown'), width: document.documentElement.clientWidth}; }"""


def _apart(a: dict, b: dict) -> float:
    """The gap between two boxes (0 where they touch or overlap)."""
    dx = max(b["x"] - (a["x"] + a["w"]), a["x"] - (b["x"] + b["w"]), 0)
    dy = max(b["y"] - (a["y"] + a["h"]), a["y"] - (b["y"] + b["h"]), 0)
    return max(dx, dy)


@pytest.mark.parametrize("width, theme", [(320, "dark"), (1280, "light")])
def test_choice_targets_and_the_figure_beside_the_words(browser, server, width, theme):
    from .axe import assert_accessible

    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    try:
        page.goto(f"{server}/{LESSON.slug}?{FIRST.key}={FIRST.figure:.4g}&theme={theme}")
        step = page.locator(".kv-predict").nth(1)
        step.get_by_role("button", name=SECOND.choices[0].label, exact=True).wait_for(timeout=30_000)
        page.locator(".kv-reveal .kv-live").first.wait_for(timeout=30_000)
        page.wait_for_timeout(300)  # the live view's charts lay out
        got = page.evaluate(LAYOUT_JS)

        # Every choice and the estimate box (with its "Check my estimate") is a large target, apart from the others.
        targets = got["targets"]
        assert {t["what"] for t in targets} >= {c.label[:40] for c in SECOND.choices} | {"Check my estimate"}, targets
        assert sum(t["kind"] == "INPUT" for t in targets) == 1, targets
        small = [t for t in targets if t["w"] < TARGET_PX or t["h"] < TARGET_PX]
        assert not small, f"targets under {TARGET_PX} x {TARGET_PX} px at {width} px: {small}"
        close = [(a["what"], b["what"], round(_apart(a, b), 1)) for i, a in enumerate(targets) for b in targets[i + 1:]
                 if _apart(a, b) < ROOM_PX]
        assert not close, f"targets closer than {ROOM_PX} px: {close}"

        # The revealed step: its words and its live view, side by side from 1,200 px, stacked below.
        (text,), (aside,) = got["text"], got["aside"]
        if width >= 1200:
            assert aside["x"] >= text["x"] + text["w"] + 16 and abs(aside["y"] - text["y"]) < 4, got
            assert aside["w"] >= 500, got  # room for the live view's charts
            assert got["lines"] and all(MEASURE_CHARS[0] <= line["chars"] <= MEASURE_CHARS[1] for line in got["lines"]), got["lines"]
        else:
            assert aside["y"] >= text["y"] + text["h"] - 1 and aside["x"] + aside["w"] <= got["width"], got
        assert_accessible(page, f"{LESSON.slug} at {width} px, {theme}")
    finally:
        context.close()
