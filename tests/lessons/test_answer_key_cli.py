"""`kvlab answer-key`: the instructor's key is the lesson data, every question of every lesson, with the
right choice marked, sim's figure, and each wrong choice's misconception; bad options exit 2."""

import json

from kvlab.lessons import course
from kvlab.sim import __version__

from kvlab.cli import main

from .test_answer_keys import saved_keys

SNAPSHOT = saved_keys()


def test_json_key_is_the_lessons_data(capsys):
    assert main(["answer-key", "--json"]) == 0
    key = json.loads(capsys.readouterr().out)
    assert key["version"] == __version__
    assert [lesson["code"] for lesson in key["lessons"]] == list(course.written())
    for lesson in key["lessons"]:
        predictions = course.lesson(lesson["code"]).predictions
        assert [q["key"] for q in lesson["questions"]] == [p.key for p in predictions]
        for q, p in zip(lesson["questions"], predictions, strict=True):
            assert q["answer"] == p.answer == SNAPSHOT[lesson["code"]][p.key]["answer"]
            assert q["unit"] == p.unit and q["peek"] == [c.text for c in p.peek]
            if p.numeric:  # an estimate: the figure and its equation, no choices
                assert q["choices"] == [] and q["peek"] and q["figure"] == p.figure
                continue
            assert [c["label"] for c in q["choices"] if c["right"]] == [p.answer]
            assert [c["why"] for c in q["choices"]] == [c.why for c in p.choices]  # every misconception
            assert q["figure"] == p.figure and q["reveal"] == p.reveal


def test_markdown_marks_one_key_per_question(capsys):
    assert main(["answer-key", "--lesson", "e3", "C2"]) == 0
    text = capsys.readouterr().out
    assert text.startswith(f"# kvlab {__version__}: answer key")
    assert text.index("## E3.") < text.index("## C2.")  # in the order asked for
    questions = course.lesson("E3").predictions + course.lesson("C2").predictions
    chosen = [p for p in questions if not p.numeric]
    assert text.count("(key):") == len(chosen) and text.count("\nKey: **") == len(questions)
    for p in chosen:
        assert f"- **{p.answer}** (key): {p.choice(p.answer).why}" in text
    estimate = next(p for p in questions if p.numeric)  # E3's: its figure and the equation filled in
    assert f"Key: **{estimate.answer}** (sim's figure: {estimate.figure:.4g})" in text
    assert all(f"- `{c.text}`" in text for c in estimate.peek)


def test_bad_options_exit_2_and_name_the_lessons(capsys):
    assert main(["answer-key", "--lesson", "Z9", "<b>"]) == 2
    err = capsys.readouterr().err
    assert "--lesson: no lesson 'Z9', '<B>'" in err and "the lessons are A1, " in err and "Traceback" not in err
    assert main(["answer-key", "--format", "pdf"]) == 2
    assert "unrecognized option '--format'" in capsys.readouterr().err


def test_the_answer_key_page_holds_every_question_and_key():
    """The instructor's page (lessons/answers.py, in kvlab serve and the site) is the same key."""
    import panel as pn
    from kvlab.lessons.answer_key import answer_key
    from kvlab.lessons.render import answers_page, course_page

    page = answers_page()
    text = "".join(str(obj.object) for item in page.main for obj in item.select(pn.pane.Markdown))
    key = answer_key()
    assert text.startswith(f"# kvlab {key['version']}: answer key")
    for lesson in key["lessons"]:
        assert f"## {lesson['code']}. {lesson['title']}" in text
        for q in lesson["questions"]:
            assert f"`{q['key']}`" in text and f"Key: **{q['answer']}**" in text
    course = "".join(str(obj.object) for item in course_page().main for obj in item.select(pn.pane.HTML))
    assert "answers" in course and "answer key" in course  # the course map links it
