"""A lab session given finished runs (`known_runs`, what the site build keeps while it renders each
lesson's live views in both themes) shows them for the same configurations without running the
engine, and runs any other state as usual."""

from __future__ import annotations

from kvlab.app.viewlayer.lab_session import LabSession

SMALL = {"model": "qwen3-0.6b", "num_requests": 60}


def finished(s: LabSession) -> LabSession:
    s.run()
    while s.busy:
        s.advance(5_000)
    return s


def test_known_runs_are_shown_and_other_states_run():
    first = finished(LabSession(dict(LabSession().values, **SMALL)))
    assert first.result is not None and first.result.completed == 60
    known = {(first.config(), first.comparison_config()): (first.result, first.compare)}
    again = LabSession(dict(first.values), known_runs=known)
    again.run()
    assert not again.busy  # nothing left to run: the known results are shown at once
    assert again.result is first.result and again.compare is first.compare and again.running is False
    other = LabSession(dict(first.values, seed=first.values["seed"] + 1), known_runs=known)
    other.run()
    assert other.busy  # another seed is another run
    finished(other)
    assert other.result is not None and other.result is not first.result
