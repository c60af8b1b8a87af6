"""The core path in a real Chromium: each lesson's reveal is hidden until a choice is made, a
pick reveals the simulator's answer and explanation, a "try this" link opens its panel in a new
tab at the starting state, and the lesson tab keeps its place and its revealed answers (also
across a reload, from the address bar)."""

import pytest
from kvlab.app.viewlayer.hbm_bar import EDGE_LABEL
from kvlab.lessons import course
from playwright import sync_api as playwright_api

from .support import DEEP_ACTIVE, DEEP_ALL

pytestmark = pytest.mark.browser

TRY_THIS_CHECKED = {"A3"}  # the lesson whose try-this link the walk follows, and where it comes back
TWO_EDGES = {"A3"}  # a lesson with two live views of the HBM bar, each with its utilisation edge


def _chosen(lesson):
    """The lesson's first step with choices (a numeric step takes an estimate: test_lesson_numeric.py)."""
    return next(s for s in lesson.steps if not s.prediction.numeric)


def _answer(page, lesson):
    for i, step in enumerate(lesson.steps):
        p = step.prediction
        probe = page.locator(".kv-reveal").get_by_text(p.gives_away[0].replace("**", ""))
        assert probe.count() == 0 or not probe.first.is_visible(), f"{p.key}: answer shown before the pick"
        if p.numeric:
            page.locator(".kv-predict").nth(i).get_by_role("textbox").fill(f"{p.figure * 2:g}")
            page.locator(".kv-predict").nth(i).get_by_role("button", name="Check my estimate").click()
            probe.first.wait_for(timeout=15_000)
            continue
        wrong = next(c.label for c in p.choices if c.label != p.answer)
        page.locator(".kv-predict").nth(i).get_by_role("button", name=wrong, exact=True).click()
        page.get_by_text(f"You predicted {wrong}. Not quite").first.wait_for(timeout=15_000)
        probe.first.wait_for(timeout=15_000)


def test_core_path(kv_page):
    page = kv_page.page
    for code in [c for c in course.CORE_PATH if c in course.written()]:
        lesson = course.lesson(code)
        page.goto(f"{kv_page.base}/{lesson.slug}")
        page.get_by_text(lesson.steps[0].prediction.question[:60]).first.wait_for(timeout=30_000)
        _answer(page, lesson)
        page.get_by_text("Recap").first.wait_for(timeout=15_000)
        for step in lesson.steps:
            assert f"{step.prediction.key}=" in page.url
        if code in TWO_EDGES:
            _edges_are_named_apart(page)
        if code in TRY_THIS_CHECKED:
            _follow_try_this_and_return(kv_page, lesson)
    assert kv_page.errors == []


def _edges_are_named_apart(page):
    """A3 shows the HBM bar in two live views, each with its utilisation edge's handle: a screen
    reader's list of sliders tells them apart by their order on the page."""
    handles = page.get_by_role("slider", name=EDGE_LABEL)
    playwright_api.expect(handles).to_have_count(2, timeout=15_000)
    names = [handles.nth(i).get_attribute("aria-label") for i in range(2)]
    assert names == [f"{EDGE_LABEL}, 1 of 2 on this page", f"{EDGE_LABEL}, 2 of 2 on this page"], names


def _follow_try_this_and_return(kv_page, lesson):
    page = kv_page.page
    step = next(s for s in lesson.steps if s.try_this)  # the page's first try-this link is its
    scroll = page.evaluate("window.scrollY")
    with page.context.expect_page() as new_tab:
        page.get_by_role("link", name="at the starting state (new tab)").first.click()
    panel = new_tab.value
    panel.wait_for_selector('[data-kv="max_sequences"]', timeout=30_000)
    for key, value in step.try_this[0].start.items():
        assert f"{key}={value}" in panel.url
    panel.close()
    # Back on the lesson: same place, answers still revealed.
    assert page.evaluate("window.scrollY") == scroll
    assert page.get_by_text("You predicted").first.is_visible()
    # A reload restores the answers from the address bar.
    page.reload()
    page.locator(".kv-reveal").get_by_text(step.prediction.gives_away[0].replace("**", "")).first.wait_for(timeout=30_000)
    page.get_by_text("Recap").first.wait_for(timeout=15_000)


def test_reveal_works_without_a_python_server(browser, tmp_path, monkeypatch):
    """The static site has no Python behind the page: a saved lesson still reveals on a pick, in
    the browser alone, with its live views laid out in advance."""
    import panel as pn
    from bokeh.resources import INLINE
    from kvlab.lessons.render import lesson_body

    monkeypatch.setenv("KVLAB_BUILD_SITE", "1")
    lesson = course.lesson("A6")
    path = tmp_path / "a6.html"
    pn.panel(lesson_body(lesson)).save(str(path), resources=INLINE)
    page = browser.new_page()
    try:
        page.goto(path.as_uri())
        q = lesson.steps[0].prediction
        page.get_by_text(q.question[:50]).first.wait_for(timeout=30_000)
        probe = page.locator(".kv-reveal").get_by_text(q.gives_away[0].replace("**", ""))
        assert probe.count() == 0 or not probe.first.is_visible()
        wrong = next(c.label for c in q.choices if c.label != q.answer)
        page.locator(".kv-predict").nth(0).get_by_role("button", name=wrong, exact=True).click()
        probe.first.wait_for(timeout=10_000)
        assert page.get_by_text(f"You predicted {wrong}").first.is_visible()
        assert page.locator(".kv-predict").nth(0).get_by_role("button", name=q.answer, exact=True).is_disabled()
        assert page.locator(".kv-reveal .kv-live").count() == sum(s.view is not None for s in lesson.steps)
    finally:
        page.close()


def test_a_lesson_link_keeps_its_answers_and_its_theme(kv_page):
    """A lesson opened from a link with answers and the dark theme: the address bar keeps both
    once the page is up (a second reload still shows the answers), and every link the lesson
    writes (prerequisites, next lesson, try this) and the nav's links stay in the dark theme."""
    page = kv_page.page
    lesson = course.lesson("A3")
    step = _chosen(lesson)
    key = step.prediction.key
    page.goto(f"{kv_page.base}/{lesson.slug}?{key}=0&theme=dark")
    page.locator(".kv-reveal").get_by_text(step.prediction.gives_away[0].replace("**", "")).first.wait_for(timeout=30_000)
    page.wait_for_timeout(800)  # past the nav's first write (app/shell/share.py, AddressBar)
    assert f"{key}=0" in page.url and "theme=dark" in page.url, page.url
    hrefs = page.evaluate("() => {" + DEEP_ALL + " return deepAll('a[href^=\"./\"]').map((a) => a.getAttribute('href')); }")
    assert len(hrefs) >= 8, hrefs  # 5 nav links, a prerequisite, the next lesson, a try-this link
    assert all("theme=dark" in h for h in hrefs), hrefs
    assert kv_page.errors == []


DEEP_ACTIVE_JS = f"""() => {{ {DEEP_ACTIVE} const el = deepActive();
  return el ? {{cls: String(el.className || ''), text: (el.textContent || '').trim().slice(0, 80)}} : null; }}"""


def test_a_choice_made_from_the_keyboard_hands_the_focus_to_its_explanation(kv_page):
    """A made choice disables its step's choices, the focused one too: the focus fell to <body> and
    a screen reader said nothing of the explanation. It now goes to the explanation; one re-applied
    from a link as the page opens leaves the focus where it was."""
    page = kv_page.page
    lesson = course.lesson("A1")
    p = _chosen(lesson).prediction
    page.goto(f"{kv_page.base}/{lesson.slug}")
    choice = page.locator(".kv-predict").nth(lesson.steps.index(_chosen(lesson))).get_by_role("button", name=p.answer, exact=True)
    choice.focus()
    page.keyboard.press("Enter")
    page.wait_for_function(f"() => ({DEEP_ACTIVE_JS})().cls.includes('kv-why')", timeout=15_000)
    assert page.evaluate(DEEP_ACTIVE_JS)["text"].startswith(f"You predicted {p.answer}. Right."), page.evaluate(DEEP_ACTIVE_JS)
    page.keyboard.press("Tab")  # on from the explanation, into the reveal below it
    assert "kv-why" not in page.evaluate(DEEP_ACTIVE_JS)["cls"]

    page.goto(f"{kv_page.base}/{lesson.slug}?{p.key}=0")
    page.get_by_text("You predicted").first.wait_for(timeout=30_000)
    page.wait_for_timeout(500)
    assert "kv-why" not in page.evaluate(DEEP_ACTIVE_JS)["cls"]
    assert kv_page.errors == []


def test_copy_link_on_a_lesson_carries_the_picks_made(browser, server):
    """A lesson page had no "Copy link": it now has one, and the link it copies holds the choices
    made so far (a student can send the page as answered)."""
    from .axe import VIEWPORTS

    context = browser.new_context(viewport=VIEWPORTS["desktop"])
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server)
    page = context.new_page()
    try:
        lesson = course.lesson("A1")
        p = lesson.steps[0].prediction
        page.goto(f"{server}/{lesson.slug}")
        page.locator(".kv-predict").first.get_by_role("button", name=p.answer, exact=True).click()
        page.get_by_text(f"You predicted {p.answer}. Right.").first.wait_for(timeout=15_000)
        page.wait_for_function(f"() => window.location.search.includes('{p.key}=')", timeout=15_000)
        assert page.get_by_role("button", name="Copy embed code", exact=True).count() == 1  # the whole lesson's
        page.get_by_role("button", name="Copy link", exact=True).click()
        page.get_by_role("button", name="Copied \u2713").wait_for(timeout=5_000)
        copied = page.evaluate("navigator.clipboard.readText()")
        assert f"/{lesson.slug}?" in copied and f"{p.key}={p.choices.index(p.choice(p.answer))}" in copied, copied
    finally:
        context.close()


# Each choice button of the first step: its text and fill, what is behind it, and the opacity it is drawn at.
CHOICE_COLOURS_JS = "() => {" + DEEP_ALL + """
  const parentOf = (el) => el.parentElement || (el.parentNode && el.parentNode.host) || null;
  const clear = (c) => c === 'transparent' || /^rgba\\(.*, 0\\)$/.test(c);
  const step = deepAll('.kv-predict')[0];
  const inside = (el) => { for (let e = el; e; e = parentOf(e)) { if (e === step) { return true; } } return false; };
  return deepAll('button.bk-btn').filter(inside).map((b) => {
    let behind = null, opacity = 1;
    for (let e = parentOf(b); e && !behind; e = parentOf(e)) {
      const c = getComputedStyle(e).backgroundColor; if (!clear(c)) { behind = c; } }
    for (let e = b; e; e = parentOf(e)) { opacity *= parseFloat(getComputedStyle(e).opacity); }
    const s = getComputedStyle(b);
    return {label: b.textContent.trim(), text: s.color, fill: s.backgroundColor, opacity, disabled: b.disabled,
            behind: behind || getComputedStyle(document.body).backgroundColor}; }); }"""


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_answered_choices_stay_legible_in_both_themes(kv_page, theme):
    """Once a step is answered its buttons are disabled, which axe's contrast rule skips; Bokeh drew
    them at 65% opacity, so the marked key read at 2.5:1 (light) and 3.3:1 (dark).
    Each must stay at 4.5:1, as the text a student reads next to learn what the answer was."""
    from tests.wcag import AA_TEXT, contrast, over

    lesson = course.lesson("A1")
    p = lesson.steps[0].prediction
    wrong = next(c.label for c in p.choices if c.label != p.answer)
    page = kv_page.page
    page.goto(f"{kv_page.base}/{lesson.slug}?theme={theme}")
    page.locator(".kv-predict").first.get_by_role("button", name=wrong, exact=True).click()
    page.get_by_text(f"You predicted {wrong}. Not quite").first.wait_for(timeout=15_000)
    page.wait_for_timeout(400)  # Bootstrap's colour transition (0.15 s) ends
    buttons = page.evaluate(CHOICE_COLOURS_JS)
    assert {b["label"] for b in buttons} == {c.label for c in p.choices} and all(b["disabled"] for b in buttons), buttons

    def seen(colour: str, b: dict) -> str:
        """An opaque colour of the button as drawn at its opacity over what is behind it."""
        rgb = over(colour, b["behind"])
        return "rgb({}, {}, {})".format(*over("rgba({}, {}, {}, {})".format(*rgb, b["opacity"]), b["behind"]))

    low = []
    for b in buttons:
        ratio = contrast(seen(b["text"], b), seen(b["fill"], b))
        if ratio < AA_TEXT:
            low.append(f"{b['label']!r}: {ratio:.2f}:1 ({b})")
    assert not low, low
