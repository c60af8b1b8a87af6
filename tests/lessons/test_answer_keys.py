"""Answer keys that cannot drift silently.

Every key is a bucket over a simulated figure (model.keyed). answer_keys.json holds each question's right
label and the figure behind it, so when sim changes and a key flips, this test fails and names the question:
its choices' explanations, reveal and prose were written for the old answer and must be rewritten with it.
Each figure must also sit at least 10% from its buckets' edges, so a small change in sim cannot flip a key.
A numeric question (an estimate) has no buckets: only its figure's 10% drift is checked.

After rewriting a lesson for a new key (or adding a question), regenerate the file:
    KVLAB_UPDATE_ANSWER_KEYS=1 .venv/bin/python -m pytest tests/lessons/test_answer_keys.py
and commit the diff: it is the change an instructor's key sees.
"""

import json
import os
from pathlib import Path

import pytest
from kvlab.lessons import course
from kvlab.lessons.content.model import edge_margin

SNAPSHOT = Path(__file__).with_name("answer_keys.json")
MARGIN = 0.10  # a figure and its nearest edge differ by at least 10% of the smaller
FIGURE_TOLERANCE = 0.10  # a figure that moves further than this is a new key worth re-reading


def _significant(x: float) -> float:
    return float(f"{x:.4g}")


def current_keys() -> dict:
    return {code: {p.key: {"answer": p.answer, "figure": _significant(p.figure)} for p in course.lesson(code).predictions}
            for code in course.written()}


PREDICTIONS = [(code, p) for code in course.written() for p in course.lesson(code).predictions]
CHOSEN = [(code, p) for code, p in PREDICTIONS if not p.numeric]


@pytest.fixture(scope="module")
def snapshot():
    if os.environ.get("KVLAB_UPDATE_ANSWER_KEYS") == "1":
        SNAPSHOT.write_text(json.dumps(current_keys(), indent=1, ensure_ascii=False) + "\n")
    return json.loads(SNAPSHOT.read_text())


def test_every_question_is_in_the_snapshot_and_nothing_else(snapshot):
    now = {(code, key) for code, keys in current_keys().items() for key in keys}
    saved = {(code, key) for code, keys in snapshot.items() for key in keys}
    assert now == saved, f"new: {sorted(now - saved)}; gone: {sorted(saved - now)} (regenerate, see the module's doc)"


@pytest.mark.parametrize("code,p", PREDICTIONS, ids=[p.key for _, p in PREDICTIONS])
def test_key_matches_the_snapshot(snapshot, code, p):
    saved = snapshot[code][p.key]
    assert p.numeric or p.answer == saved["answer"], (
        f"{code} {p.key}: the key flipped from {saved['answer']!r} (figure {saved['figure']:g}) to {p.answer!r} "
        f"(figure {p.figure:.4g}). Rewrite its choices' explanations, reveal and prose, then regenerate answer_keys.json.")
    assert abs(p.figure - saved["figure"]) <= FIGURE_TOLERANCE * abs(saved["figure"]), (
        f"{code} {p.key}: the figure behind {p.answer!r} moved from {saved['figure']:g} to {p.figure:.4g}; check the "
        "text still holds, then regenerate answer_keys.json.")


@pytest.mark.parametrize("code,p", CHOSEN, ids=[p.key for _, p in CHOSEN])
def test_figure_sits_away_from_its_bucket_edges(code, p):
    assert p.figure is not None and p.edges, f"{code} {p.key}: key it with model.keyed (figure and edges)"
    assert p.answer in [c.label for c in p.choices]
    margin = edge_margin(p.figure, p.edges)
    assert margin >= MARGIN, (f"{code} {p.key}: figure {p.figure:.4g} is {margin:.1%} from an edge of {p.edges}; "
                              "move the edges (and the labels that name them) away from it")
