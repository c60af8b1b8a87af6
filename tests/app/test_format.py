"""One formatter for latencies and durations (app/viewlayer/format.py, `seconds`): the lab's tiles, its
charts' notes and the teaching figures read alike, and a long run never turns into "1.23e+03 s"."""

import pytest
from kvlab.app.viewlayer.format import DASH, seconds


@pytest.mark.parametrize(("t_s", "shown"), [
    (0.0046123, "4.61 ms"), (0.084, "84.0 ms"), (0.2354, "235 ms"), (1.2345, "1.23 s"), (12.345, "12.3 s"),
    (123.45, "123 s"), (1234.5, "1,234 s"), (None, DASH)])
def test_three_significant_figures_milliseconds_below_a_second(t_s, shown):
    assert seconds(t_s) == shown
