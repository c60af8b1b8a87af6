"""Answer keys that cannot drift silently.

Every key is a bucket over a simulated figure (model.keyed). The published key, lessons/answers.json,
holds each question's right label and the figure behind it (tests/lessons/test_answers_file.py keeps it
equal to the lessons' key, and says how to regenerate it). Here, when sim changes and a key flips, a
test names the question and the flip: its choices' explanations, reveal and prose were written for the
old answer and must be rewritten with it before the file is regenerated. Each figure must also sit at
least 10% from its buckets' edges, so a small change in sim cannot flip a key. A numeric question (an
estimate) has no buckets: only its figure's 10% drift is checked.
"""

import json

import pytest
from kvlab.lessons import course
from kvlab.lessons.answer_key import ANSWERS_FILE
from kvlab.lessons.content.model import edge_margin

MARGIN = 0.10  # a figure and its nearest edge differ by at least 10% of the smaller
FIGURE_TOLERANCE = 0.10  # a figure that moves further than this is a new key worth re-reading


def saved_keys() -> dict:
    """{lesson code: {question key: {answer, figure}}} from the published key."""
    published = json.loads(ANSWERS_FILE.read_text(encoding="utf-8"))
    return {lesson["code"]: {q["key"]: {"answer": q["answer"], "figure": q["figure"]} for q in lesson["questions"]}
            for lesson in published["lessons"]}


def current_keys() -> dict:
    return {code: {p.key: {"answer": p.answer, "figure": p.figure} for p in course.lesson(code).predictions}
            for code in course.written()}


PREDICTIONS = [(code, p) for code in course.written() for p in course.lesson(code).predictions]
CHOSEN = [(code, p) for code, p in PREDICTIONS if not p.numeric]


@pytest.fixture(scope="module")
def snapshot():
    return saved_keys()


def test_every_question_is_in_the_snapshot_and_nothing_else(snapshot):
    now = {(code, key) for code, keys in current_keys().items() for key in keys}
    saved = {(code, key) for code, keys in snapshot.items() for key in keys}
    assert now == saved, (f"new: {sorted(now - saved)}; gone: {sorted(saved - now)} "
                          "(regenerate lessons/answers.json: tests/lessons/test_answers_file.py)")


@pytest.mark.parametrize("code,p", PREDICTIONS, ids=[p.key for _, p in PREDICTIONS])
def test_key_matches_the_snapshot(snapshot, code, p):
    saved = snapshot[code][p.key]
    assert p.numeric or p.answer == saved["answer"], (
        f"{code} {p.key}: the key flipped from {saved['answer']!r} (figure {saved['figure']:g}) to {p.answer!r} "
        f"(figure {p.figure:.4g}). Rewrite its choices' explanations, reveal and prose, then regenerate lessons/answers.json.")
    assert abs(p.figure - saved["figure"]) <= FIGURE_TOLERANCE * abs(saved["figure"]), (
        f"{code} {p.key}: the figure behind {p.answer!r} moved from {saved['figure']:g} to {p.figure:.4g}; check the "
        "text still holds, then regenerate lessons/answers.json.")


@pytest.mark.parametrize("code,p", CHOSEN, ids=[p.key for _, p in CHOSEN])
def test_figure_sits_away_from_its_bucket_edges(code, p):
    assert p.figure is not None and p.edges, f"{code} {p.key}: key it with model.keyed (figure and edges)"
    assert p.answer in [c.label for c in p.choices]
    margin = edge_margin(p.figure, p.edges)
    assert margin >= MARGIN, (f"{code} {p.key}: figure {p.figure:.4g} is {margin:.1%} from an edge of {p.edges}; "
                              "move the edges (and the labels that name them) away from it")
