"""A numeric step in a real Chromium (issue 34), under kvlab serve and as the static site builds it: a refused
estimate gets a message naming the field and its range and reveals nothing; a taken one says how far off it is
(the sentence model.estimate_verdict writes), then the reveal and the math peek; the address bar keeps it, and
a reload comes back answered. The site's own page, bridge included, is tests/site/test_site_in_browser.py's."""

import pytest
from kvlab.lessons import course
from kvlab.lessons.content.model import estimate_problem, estimate_verdict, number
from kvlab.lessons.render import NUMBER_JS

from .support import DEEP_ACTIVE

pytestmark = pytest.mark.browser

LESSON = course.lesson("A1")
STEP = LESSON.steps.index(next(s for s in LESSON.steps if s.prediction.numeric))
P = LESSON.steps[STEP].prediction
ACTIVE_CLASS_JS = f"() => {{ {DEEP_ACTIVE} const el = deepActive(); return el ? String(el.className || '') : ''; }}"


def _answer_earlier_steps(page) -> None:
    """Pick the first choice of every step before the estimate: a question shows once the one before it is answered."""
    for n in range(STEP):
        page.locator(".kv-predict").nth(n).locator("button").first.click()
        page.locator(".kv-predict").nth(n).locator(".kv-why").first.wait_for(timeout=15_000)


def _refuse_then_take(page, submit_with_enter: bool) -> None:
    _answer_earlier_steps(page)
    step = page.locator(".kv-predict").nth(STEP)
    box = step.get_by_label(f"Your estimate: {P.quantity}, in {P.unit}")
    box.fill("abc")
    box.press("Enter")
    step.locator(".kv-estimate-msg .kv-refused").get_by_text(estimate_problem(P)).wait_for(timeout=15_000)
    assert box.input_value() == "abc"  # the box keeps what was typed
    assert not page.get_by_text("Math peek").first.is_visible()
    assert not page.locator(".kv-reveal").nth(STEP).is_visible()
    box.fill("491,520")  # three times sim's figure, with a separator
    if submit_with_enter:
        box.press("Enter")
    else:
        step.get_by_role("button", name="Check my estimate").click()
    step.locator(".kv-estimate-msg .kv-why").get_by_text(estimate_verdict(491520, P)).wait_for(timeout=15_000)
    reveal = page.locator(".kv-reveal").nth(STEP)
    reveal.get_by_text(P.gives_away[0].replace("**", "")).first.wait_for(timeout=15_000)
    for line in P.peek:
        assert reveal.get_by_text(line.text).first.is_visible()


def test_an_estimate_under_kvlab_serve(kv_page):
    page = kv_page.page
    page.goto(f"{kv_page.base}/{LESSON.slug}")
    _refuse_then_take(page, submit_with_enter=False)
    page.wait_for_function(f"() => ({ACTIVE_CLASS_JS})().includes('kv-why')", timeout=15_000)  # focus on the result
    page.wait_for_function(f"() => window.location.search.includes('{P.key}=491520')", timeout=15_000)
    page.reload()
    step = page.locator(".kv-predict").nth(STEP)
    step.get_by_text(estimate_verdict(491520, P)).wait_for(timeout=30_000)
    assert step.get_by_role("textbox").input_value() == "491520" and step.get_by_role("textbox").is_disabled()
    assert page.locator(".kv-reveal").nth(STEP).get_by_text(P.peek[0].text).is_visible()
    assert kv_page.errors == []


def test_an_estimate_without_a_python_server(browser, tmp_path, monkeypatch):
    """The page as the site builds it (KVLAB_BUILD_SITE), saved and opened from a file: the check runs in the
    browser (render.ESTIMATE_JS) and writes what the server writes; Enter submits."""
    import panel as pn
    from bokeh.resources import INLINE
    from kvlab.lessons.render import lesson_body

    monkeypatch.setenv("KVLAB_BUILD_SITE", "1")
    path = tmp_path / "a1.html"
    pn.panel(lesson_body(LESSON)).save(str(path), resources=INLINE)
    page = browser.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(path.as_uri())
        _refuse_then_take(page, submit_with_enter=True)
        assert f"{P.key}=491520" in page.url
        # The browser's number formatter is model.number's twin.
        values = [327680, 55.70230674743652, 128.2949, 0.6237396, 24000.0, 999.96, 0.125, 2.5, 1e9, 0.3, 150000.5, 3.0]
        written = page.evaluate(f"(xs) => {{ {NUMBER_JS} return xs.map(number); }}", values)
        assert written == [number(x) for x in values]
        assert errors == []
    finally:
        page.close()


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_an_estimate_is_axe_clean_and_fits_320_px(browser, server, theme):
    """At 320 px (WCAG 1.4.10's reflow width), in each theme: the refused message (light) and the answered
    step with its verdict, reveal and math peek (dark, from a link) pass axe and make the page no wider."""
    from .axe import assert_accessible

    context = browser.new_context(viewport={"width": 320, "height": 700}, is_mobile=True, has_touch=True)
    page = context.new_page()
    try:
        step = page.locator(".kv-predict").nth(STEP)
        if theme == "light":
            page.goto(f"{server}/{LESSON.slug}")
            _answer_earlier_steps(page)
            step.get_by_role("textbox").fill("-1")
            step.get_by_role("textbox").press("Enter")
            step.get_by_text(estimate_problem(P)).wait_for(timeout=30_000)
        else:
            page.goto(f"{server}/{LESSON.slug}?{P.key}=491520&theme=dark")
            page.locator(".kv-reveal").nth(STEP).get_by_text(P.peek[0].text).wait_for(timeout=30_000)
        page.wait_for_timeout(600)  # the naming script runs on the next animation frame after each render
        assert_accessible(page, f"{LESSON.slug} estimate 320px {theme}")
        assert page.evaluate("document.scrollingElement.scrollWidth") <= 320
    finally:
        context.close()
