"""The published key cannot change unseen: lessons/answers.json is the key `kvlab build-site` writes into
the site (answers.json, less its version stamp, figures to 4 significant digits: answer_key.comparable).
When the lessons' key differs from it, this test fails naming each question that differs. After a
reviewed change (a new question, a rewritten choice, a figure sim now computes differently):
    KVLAB_UPDATE_ANSWERS=1 .venv/bin/python -m pytest tests/lessons/test_answers_file.py
and commit the diff with the change. (tests/lessons/test_answer_keys.py reads the same file: it names a
key that flipped and checks every figure's distance from its buckets' edges.)"""

import json
import os

from kvlab.lessons.answer_key import ANSWERS_FILE, answer_key, comparable, to_json


def _questions(key: dict) -> dict[str, dict]:
    return {f"{lesson['code']} {q['key']}": {**q, "lesson": lesson["title"]} for lesson in key["lessons"] for q in lesson["questions"]}


def differing_questions(saved: dict, now: dict) -> list[str]:
    """Each question that is new, gone or changed, with the fields that changed."""
    old, new = _questions(saved), _questions(now)
    out = [f"{name}: new" for name in new if name not in old] + [f"{name}: gone" for name in old if name not in new]
    for name in (n for n in new if n in old and new[n] != old[n]):
        fields = sorted(k for k in new[name] if new[name][k] != old[name].get(k))
        out.append(f"{name}: {', '.join(fields)} changed" + (f" (key {old[name]['answer']!r} -> {new[name]['answer']!r})"
                                                               if "answer" in fields else ""))
    if not out and saved != now:
        out.append("the lessons' order or titles changed")
    return out


def test_the_committed_key_is_the_lessons_key():
    now = comparable(answer_key())
    if os.environ.get("KVLAB_UPDATE_ANSWERS") == "1":
        ANSWERS_FILE.write_text(to_json(now), encoding="utf-8")
    differs = differing_questions(json.loads(ANSWERS_FILE.read_text(encoding="utf-8")), now)
    assert not differs, ("the answer key differs from lessons/answers.json (review, then regenerate: see this module's doc):\n  "
                         + "\n  ".join(differs))


def test_a_changed_key_is_named():
    saved = comparable(answer_key(("A1",)))
    changed = json.loads(json.dumps(saved))
    q = changed["lessons"][0]["questions"][0]
    q["answer"] = "something else"
    q["figure"] = 1.0
    assert differing_questions(saved, changed) == [f"A1 {q['key']}: answer, figure changed "
                                                    f"(key {saved['lessons'][0]['questions'][0]['answer']!r} -> 'something else')"]
    del changed["lessons"][0]["questions"][1]
    assert f"A1 {saved['lessons'][0]['questions'][1]['key']}: gone" in differing_questions(saved, changed)


def test_the_committed_key_has_no_version_stamp():
    assert list(json.loads(ANSWERS_FILE.read_text(encoding="utf-8"))) == ["lessons"]
