"""The instructor's answer key: every question of every written lesson with its choices, the right one,
the simulated figure the key is read from, and the misconception behind each wrong choice, stamped with
kvlab's version so a printed key says which release it answers for.

    kvlab answer-key                  # Markdown, every lesson in course order
    kvlab answer-key --lesson C2 E3   # some lessons
    kvlab answer-key --json           # the same, as JSON

Everything comes from the lesson data (`course.lesson(code).predictions`), computed by sim now: nothing
here is typed twice, so the key cannot disagree with the page.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from kvlab.sim import __version__
from kvlab.sim.cliargs import Parser, parse, report

from . import course

PROG = "kvlab answer-key"
# The key as published, committed: `kvlab build-site` writes the key into the site as answers.json, and
# tests/lessons/test_answers_file.py fails, naming each question that differs, when the lessons' key no
# longer equals this file (KVLAB_UPDATE_ANSWERS=1 rewrites it), so a changed answer is a reviewed diff.
ANSWERS_FILE = Path(__file__).with_name("answers.json")


def answer_key(codes: tuple[str, ...] | None = None) -> dict:
    """{version, lessons: [{code, title, questions: [{key, question, choices: [{label, right, why}],
    answer, figure, reveal, unit, peek}]}]} for `codes` (every written lesson by default), in course order.
    A numeric question has no choices; its `unit` says what the student types and `peek` is its math
    peek, the equation with the state's numbers (empty for a choice question)."""
    lessons = []
    for code in codes or course.written():
        lesson = course.lesson(code)
        questions = [{
            "key": p.key,
            "question": p.question,
            "choices": [{"label": c.label, "right": c.label == p.answer, "why": c.why} for c in p.choices],
            "answer": p.answer,
            "figure": p.figure,
            "reveal": p.reveal,
            "unit": p.unit,
            "peek": [c.text for c in p.peek],
        } for p in lesson.predictions]
        lessons.append({"code": code, "title": lesson.title, "questions": questions})
    return {"version": __version__, "lessons": lessons}


def to_json(key: dict) -> str:
    return json.dumps(key, indent=1, ensure_ascii=False) + "\n"


def comparable(key: dict) -> dict:
    """The key as ANSWERS_FILE holds it: without the version stamp (a release that changes no answer
    changes no line) and with each figure to 4 significant digits, as the key prints it (the last
    digits of a float are the platform's arithmetic, not the lesson's)."""
    def rounded(q: dict) -> dict:
        return {**q, "figure": None if q["figure"] is None else float(f"{q['figure']:.4g}")}
    return {"lessons": [{**lesson, "questions": [rounded(q) for q in lesson["questions"]]} for lesson in key["lessons"]]}


def to_markdown(key: dict) -> str:
    count = sum(len(lesson["questions"]) for lesson in key["lessons"])
    lines = [f"# kvlab {key['version']}: answer key", "",
             f"{len(key['lessons'])} lesson(s), {count} question(s). Each key is read from the simulated figure "
             "given beside it; each wrong choice carries the misconception it tests."]
    for lesson in key["lessons"]:
        lines += ["", f"## {lesson['code']}. {lesson['title']}"]
        for n, q in enumerate(lesson["questions"], 1):
            figure = "" if q["figure"] is None else f" (sim's figure: {q['figure']:.4g})"
            lines += ["", f"### {lesson['code']}.{n} `{q['key']}`", "", q["question"], ""]
            lines += [f"- {'**' + c['label'] + '** (key)' if c['right'] else c['label']}: {c['why']}" for c in q["choices"]]
            if q["unit"]:
                lines += [f"The student types an estimate in {q['unit']} and is told how many times off it is."]
            lines += ["", f"Key: **{q['answer']}**{figure}. Revealed: {q['reveal']}"]
            if q["peek"]:
                lines += ["", "Math peek:", ""] + [f"- `{line}`" for line in q["peek"]]
    return "\n".join(lines) + "\n"


def build_parser() -> Parser:
    p = Parser(prog=PROG, description="Print the lessons' answer key: every question, its key and sim's figure "
                                      "behind it, and the misconception behind each wrong choice.")
    p.add_argument("--lesson", nargs="+", metavar="CODE", help="only these lessons (e.g. A1 C2); default: all")
    p.add_argument("--json", action="store_true", help="JSON instead of Markdown")
    return p


def main(argv: list[str] | None = None) -> int:
    parsed = parse(build_parser(), sys.argv[1:] if argv is None else argv)
    written = course.written()
    codes = tuple(c.upper() for c in parsed.args.lesson) if parsed.args and parsed.args.lesson else None
    unknown = [c for c in codes or () if c not in written]
    if unknown:
        parsed.problems.append(f"--lesson: no lesson {', '.join(repr(c[:8]) for c in unknown)}; "
                               f"the lessons are {', '.join(written)}")
    if parsed.problems:
        report(PROG, parsed.problems)
        return 2
    args = parsed.args
    key = answer_key(codes)
    sys.stdout.write(to_json(key) if args.json else to_markdown(key))
    return 0
