"""C4's text is a closed loop (8 or 64 clients, as many running, the same 640 requests); its live views and
try-this links opened the preset's open queue instead, an overloaded experiment with other figures."""

from kvlab.lessons import course
from kvlab.lessons.content import runs
from kvlab.lessons.content.c4_cpu_costs import REQUESTS


def _states(lesson):
    for step in lesson.steps:
        yield step, step.view.state
        for t in step.try_this:
            yield step, t.start


def test_views_and_try_this_are_the_closed_loop_of_the_text():
    for _, state in _states(course.lesson("C4")):
        assert state.get("arrival") == "closed", state
        assert state.get("clients") in (8, 64) and state.get("max_num_seqs") == state["clients"], state
        assert state.get("num_requests") == REQUESTS, state


def test_step_one_view_shows_the_run_its_prose_quotes():
    step = course.lesson("C4").steps[0]
    state = dict(step.view.state)
    r = runs.lab(state.pop("preset"), **state)
    assert f"to {r.throughput_per_s:.2f} requests/s" in step.prose, (step.view.state, r.throughput_per_s)


def test_step_one_view_shows_the_scheduler_time_its_question_asks_about():
    """The question is about the scheduler's block-table time: the live view's summary shows it (the
    lab's "Scheduler CPU time" tile), the figure the reveal quotes for 64 clients."""
    from kvlab.app.viewlayer.format import seconds
    from kvlab.app.viewlayer.lab_status import view_lab_summary

    step = course.lesson("C4").steps[0]
    state = dict(step.view.state)
    r = runs.lab(state.pop("preset"), **state)

    class Run:
        result = r

    tiles = view_lab_summary(Run, {"engine": "vllm"})["pane"]["html"]
    number, unit = seconds(r.scheduler_s).split(" ")
    assert f'data-kv="lab-cpu">{number}</span><small> {unit}</small>' in tiles, tiles
    assert f"to {r.scheduler_s:.1f} s" in step.prediction.reveal
