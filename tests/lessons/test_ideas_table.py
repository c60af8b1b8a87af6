"""docs/lessons.md's table of where each idea of the five source documents is taught stays true: every
idea a lesson claims has a row for that lesson, the row's step exists, and the phrase it gives is in that
step's question, choices, reveal or prose (so an instructor who looks there finds it)."""

import re
from pathlib import Path

from kvlab.lessons import course

DOC = Path(__file__).resolve().parents[2] / "docs" / "lessons.md"
ROW = re.compile(r"^\| `([a-z0-9-]+)` \| (\w+) \| (.+?) \| ([A-E]\d) \| (\d+) \| (.+?) \|$", re.M)


def step_text(step) -> str:
    p = step.prediction
    return " ".join([p.question, p.reveal, step.prose, *(c.label for c in p.choices), *(c.why for c in p.choices),
                     *(c.text for c in p.peek)]).lower()


def test_every_claimed_idea_has_a_true_row():
    rows = ROW.findall(DOC.read_text(encoding="utf-8"))
    assert rows, "no idea table in docs/lessons.md"
    listed = {(row[0], row[3]) for row in rows}  # (idea, lesson)
    claimed = {(idea, code) for code in course.written() for idea in course.lesson(code).ideas}
    assert listed == claimed, f"missing: {sorted(claimed - listed)}; not claimed: {sorted(listed - claimed)}"
    for idea, source, _, code, step, phrase in rows:
        assert source == course.IDEAS[idea][0], idea
        steps = course.lesson(code).steps
        assert 1 <= int(step) <= len(steps), (idea, code, step)
        assert phrase.lower() in step_text(steps[int(step) - 1]), f"{idea}: {phrase!r} is not in {code} step {step}"
    assert {idea for idea, _ in listed} == set(course.IDEAS)  # every idea of the sources is in the table
