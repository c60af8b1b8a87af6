"""Predict first: before a pick, the rendered page must not give the pick away.

Reads each lesson's Panel page as it stands when each question first shows (a question shows once the one
before it is answered: model.step_shown; header, setup, the questions so far and their choices, the limits
box) and, for each question, the text outside its own question, outside the choice buttons (they offer
options and state nothing) and outside the earlier steps' reveals (what they teach, a later question may
build on). It checks that each question appears only then, and fails when that text holds
- a number of the right choice's label (A4's second question said "at most 12 running" above the first's
  "about 12"), or
- four words in a row of the right choice's explanation (D1's title, "the pool, not the limit", was the
  explanation of its second answer).
Leaks by paraphrase (an objective that states a result in other words) are beyond a string test; the
lessons' titles, objectives and setups are written to pose, not answer (docs/lessons.md).
"""

import html
import re
from collections import Counter

import pytest

pn = pytest.importorskip("panel")

from kvlab.lessons import course  # noqa: E402
from kvlab.lessons.render import lesson_body  # noqa: E402

PHRASE_WORDS = 4
# A number standing alone in the page's text ("12 running", "x1.4", "67%"), not part of a name ("Qwen3-8B")
# or of a unit-suffixed figure ("32k").
STANDALONE_NUMBER = re.compile(r"(?<![\w.\-])[x\u00d7]?(\d+(?:\.\d+)?%?)(?![\w%]|\.\d)")


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+(?:\.[0-9]+)?%?", text.lower().replace("\u00d7", "x"))


def _numbers(label: str) -> list[str]:
    return re.findall(r"\d+(?:\.\d+)?%?", label.replace(",", ""))


def _visible_text(obj, skip: set[int]) -> list[str]:
    if getattr(obj, "visible", True) is False or id(obj) in skip:
        return []
    if isinstance(obj, pn.widgets.Button):
        return [obj.label]
    out = []
    if isinstance(obj, (pn.pane.Markdown, pn.pane.HTML)) and isinstance(obj.object, str):
        out.append(html.unescape(re.sub(r"<[^>]+>", " ", obj.object)))
    if hasattr(obj, "objects"):
        for child in obj.objects:
            out += _visible_text(child, skip)
    elif hasattr(obj, "__panel__"):
        out += _visible_text(obj.__panel__(), skip)
    return out


def _answer(sv) -> None:
    """Make a step's pick (its key, or sim's figure for an estimate), as a student would."""
    p = sv.step.prediction
    if p.numeric:
        sv.check(repr(p.figure))
    else:
        sv.commit([c.label for c in p.choices].index(p.answer))


def leaks(lesson) -> list[str]:
    """What gives each step's pick away on the page as it stands when that question first shows (every
    step before it answered, none after: model.step_shown). The earlier steps' reveals are left out: what
    they teach, a later question may build on (A1's formula, then its head_dim trap)."""
    found = []
    for n in range(len(lesson.steps)):
        body = lesson_body(lesson)
        for earlier in body.steps[:n]:
            _answer(earlier)
        assert [sv.layout.visible for sv in body.steps] == [i <= n for i in range(len(body.steps))]
        taught = {id(part) for earlier in body.steps[:n] for part in (earlier.why, earlier.body)}
        found += _leaks_at(body, body.steps[n], taught)
    return found


def _leaks_at(body, sv, taught: set[int]) -> list[str]:
    """What on `body`'s page, outside `sv`'s question, every choice button and the panes in `taught`,
    states `sv`'s answer."""
    p = sv.step.prediction
    question_pane = sv.layout.objects[0].objects[0]
    # Choice buttons offer options and state nothing; the header's reading time is no figure.
    skip = {id(question_pane), *(id(b) for other in body.steps for b in other.buttons), *taught}
    text = re.sub(r"\b\d+ minutes\b", " ", " ".join(_visible_text(body.layout, skip)))
    padded = " " + " ".join(_words(text)) + " "
    numbers = set(STANDALONE_NUMBER.findall(text.replace(",", "")))
    found = [f"{p.key}: the number {n} of its answer {p.answer!r}" for n in _numbers(p.answer) if n in numbers]
    if p.numeric:  # an estimate: its figure (above) is all there is to give away
        return found
    why = _words(p.choice(p.answer).why)
    phrases = {" ".join(why[i:i + PHRASE_WORDS]) for i in range(len(why) - PHRASE_WORDS + 1)}
    return found + [f"{p.key}: '{g}' of its answer's explanation" for g in sorted(phrases) if f" {g} " in padded]


@pytest.mark.parametrize("code", course.written())
def test_nothing_before_a_pick_gives_it_away(code):
    found = leaks(course.lesson(code))
    assert not found, f"{code}: visible before the pick: {found}"


def test_right_answers_are_spread_over_the_positions():
    """Done when of issue 34: no position holds more than half of the right answers (the written order
    had the middle choice right in 24 of 41 three-choice questions)."""
    positions = Counter()
    for code in course.written():
        for p in course.lesson(code).predictions:
            if p.numeric:
                continue
            positions[[c.label for c in p.choices].index(p.answer)] += 1
    total = sum(positions.values())
    assert max(positions.values()) <= total / 2, positions
    assert min(positions[i] for i in range(3)) >= total / 5, positions  # every one of the first three places is used


def test_the_right_answer_is_not_the_longest_label_by_habit():
    """A student who picks the longest label should do no better than chance: the right answer is the
    one longest label in at most a third of the choice questions (it was in 21 of 51, most of them by a
    leading "about" the wrong labels lacked)."""
    alone_longest, total = [], 0
    for code in course.written():
        for p in course.lesson(code).predictions:
            if p.numeric:
                continue
            total += 1
            lengths = [len(c.label) for c in p.choices]
            if len(p.answer) == max(lengths) and lengths.count(max(lengths)) == 1:
                alone_longest.append(p.key)
    assert len(alone_longest) <= total / 3, (len(alone_longest), total, alone_longest)
