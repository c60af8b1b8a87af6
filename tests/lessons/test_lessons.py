"""Lessons are code: every claim holds in the simulator, every answer waits for its question,
every link and live view opens a valid state."""

import re

import pytest
from kvlab.lessons import course
from kvlab.lessons.content import runs
from kvlab.lessons.content.model import visible_blocks
from kvlab.sim import evaluate

LESSONS = [course.lesson(c) for c in course.written()]
CLAIMS = [(les.code, c) for les in LESSONS for c in les.claims]


@pytest.mark.parametrize("code,claim", CLAIMS, ids=[f"{code}: {c.text}" for code, c in CLAIMS])
def test_claim_holds(code, claim):
    assert claim.holds, f"{code}: {claim.text}; the simulator gives {claim.actual}"


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda les: les.code)
def test_predictions_are_well_formed(lesson):
    keys = [p.key for p in lesson.predictions]
    assert len(keys) == len(set(keys)), keys
    assert lesson.predictions, "a lesson asks at least one question"
    for p in lesson.predictions:
        assert p.gives_away, f"{p.key}: name the strings that state the answer"
        assert all(g in p.reveal or g in step_prose(lesson, p.key) for g in p.gives_away), p.key
        if p.numeric:  # an estimate: no choices, a unit, a positive figure and a math peek
            assert not p.choices and p.quantity and p.figure > 0 and p.peek, p.key
            continue
        labels = [c.label for c in p.choices]
        assert p.answer in labels, (p.question, p.answer, labels)
        assert len(labels) >= 2 and len(set(labels)) == len(labels), labels
        assert all(len(c.why) > 20 for c in p.choices), "every choice explains itself"


def step_prose(lesson, key):
    return next(s.prose for s in lesson.steps if s.prediction.key == key)


def _visible_text(lesson, answered):
    return " ".join(text for _, text in visible_blocks(lesson, answered))


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda les: les.code)
def test_no_answer_before_its_question(lesson):
    """Walk the lesson in order: before question k is answered, nothing on the page states its
    answer, no reveal or prose of an unanswered step shows, and the recap waits for the last."""
    answered: set[str] = set()
    for step in lesson.steps:
        p = step.prediction
        kinds = [kind for kind, _ in visible_blocks(lesson, answered)]
        assert "recap" not in kinds
        text = _visible_text(lesson, answered)
        for giveaway in p.gives_away:
            assert giveaway not in text, f"{lesson.code}: '{giveaway}' is on the page before {p.key} is answered"
        assert p.reveal not in text and step.prose not in text
        answered.add(p.key)
    assert "recap" in [kind for kind, _ in visible_blocks(lesson, answered)]
    # Nothing answered at all: only header, setup, questions and the limits box are on the page.
    assert {k for k, _ in visible_blocks(lesson, set())} <= {"header", "setup", "question", "not_captured"}


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda les: les.code)
def test_the_page_hides_what_the_rule_hides(lesson):
    """The Panel page follows visible_blocks: reveal, prose and recap appear only after the picks."""
    from kvlab.lessons.render import lesson_body

    body = lesson_body(lesson)
    steps, recap = body.steps, body.recap
    assert len(steps) == len(lesson.steps)
    for sv in steps:
        # An estimate's message region is on the page from the start (empty), so a screen reader hears it change.
        assert not sv.body.visible and not sv.body.objects and (sv.step.prediction.numeric or not sv.why.visible)
    assert not recap.visible
    for sv in steps:
        p = sv.step.prediction
        if p.numeric:  # a refused estimate reveals nothing; a taken one, everything
            assert not sv.check("") and not sv.body.visible and not sv.buttons[0].disabled
            assert sv.check(f"{p.figure * 3:g}") and sv.body.visible and sv.input.disabled and sv.buttons[0].disabled
            assert "off by 3x (too high)" in sv.why.object
            continue
        wrong = next(i for i, c in enumerate(p.choices) if c.label != p.answer)
        sv.commit(wrong)
        assert sv.body.visible and sv.why.visible and all(b.disabled for b in sv.buttons)
        assert "Not quite" in sv.why.object
    assert recap.visible


SEED_NAME = re.compile(r"seed[\s_-]*0\d\d", re.IGNORECASE)


def _all_text(lesson):
    parts = [lesson.title, lesson.objective, lesson.setup, *lesson.recap, *lesson.not_captured]
    for s in lesson.steps:
        p = s.prediction
        parts += [p.question, p.reveal, s.prose, *(c.label + " " + c.why for c in p.choices), *(t.change for t in s.try_this)]
        if s.view is not None:
            parts.append(s.view.caption)
    return "\n".join(parts)


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda les: les.code)
def test_text_is_filled_and_names_scenarios_not_seeds(lesson):
    text = _all_text(lesson)
    assert not SEED_NAME.search(text), SEED_NAME.search(text).group(0)
    assert "{" not in text.replace("`{", "") and "}" not in text, "an unfilled f-string placeholder"
    assert 1 <= lesson.minutes <= 10


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda les: les.code)
def test_try_this_and_views_open_valid_states(lesson):
    from kvlab.sim.engine import simulate
    from kvlab.sim.engine.presets import preset

    for step in lesson.steps:
        for t in step.try_this:
            if t.panel == "serving_lab":
                start = dict(t.start)
                cfg = runs.lab_config(start.pop("preset"), **start)
                assert simulate(cfg.with_(num_requests=20)).ok, t.change
            else:
                assert t.panel in ("admission", "phases"), t.panel
                assert evaluate(runs.BASE.with_(**t.start)).ok, t.change
        if step.view is not None and step.view.kind == "steady":
            assert evaluate(runs.BASE.with_(**step.view.state)).errors == [], step.view.caption
        elif step.view is not None:
            state = dict(step.view.state)
            state.pop("compare_policy", None)
            assert simulate(preset(state.pop("preset")).with_(**{**state, "num_requests": 20})).ok, step.view.caption


def test_course_lists_24_lessons_and_known_ideas():
    assert len(course.ORDER) == 24 and len(set(course.ORDER)) == 24
    assert set(course.CORE_PATH) <= set(course.ORDER)
    for les in LESSONS:
        assert les.slug == course.slug(les.code)
        unknown = set(les.ideas) - set(course.IDEAS)
        assert not unknown, f"{les.code} claims ideas the course does not list: {unknown}"
        assert all(c in course.ORDER for c in les.prerequisites)


def test_the_course_map_and_links_build_no_lesson(monkeypatch):
    """The landing page's map and a lesson's links read the catalog: building every lesson (and
    running its simulations) to list titles cost the landing page 14 s."""
    from kvlab.lessons import render

    built = []
    monkeypatch.setattr(course, "lesson", lambda code: built.append(code))
    html = render.course_map_html()
    links = [render._link(code) for code in course.ORDER]
    assert built == []
    for les in LESSONS:
        assert f"{les.code}. {les.title}</a>" in html and f"{les.minutes} min" in html
        assert f'href="./{les.slug}"' in links[course.ORDER.index(les.code)]


def test_numbers_follow_the_simulator(monkeypatch):
    """Rebuild a lesson on another GPU: the quoted figures change with sim's."""
    from kvlab.lessons.content import a4_token_budget

    before = a4_token_budget.build()
    monkeypatch.setattr(runs, "BASE", runs.BASE.with_(gpu="h200"))
    runs.run.cache_clear()
    try:
        after = a4_token_budget.build()
        h200 = runs.run(prompt_tokens=32768)
    finally:
        runs.run.cache_clear()
    assert f"**{h200.max_sequences}** requests" in after.steps[0].prediction.reveal
    assert after.steps[0].prediction.reveal != before.steps[0].prediction.reveal


LIVE_GROUPS = [(code, i) for code in course.written() for i, s in enumerate(course.lesson(code).steps)
               if s.view is not None and {"tp", "kv_dtype", "allocation", "engine", "policy"} & set(s.view.controls)]


@pytest.mark.parametrize(("code", "index"), LIVE_GROUPS, ids=[f"{c}-{i + 1}" for c, i in LIVE_GROUPS])
def test_a_live_views_button_groups_carry_their_titles(code, index):
    """A live view's button group sits under the title the panels give it ("Tensor parallel size" over
    "1 2 4 8"), which the page script makes its accessible name; it had none."""
    import panel as pn
    from kvlab.lessons import render

    view = render.live_view(course.lesson(code).steps[index].view)
    groups = list(view.select(pn.widgets.RadioButtonGroup))
    assert groups
    for group in groups:
        holder = next(c for c in view.select(pn.Column) if group in c.objects)
        title = holder.objects[0]
        assert isinstance(title, pn.pane.HTML) and "kv-group-title" in title.css_classes
        if group.name:  # a setting's group: the panels' own title for it
            assert f">{group.name}</div>" in title.object
