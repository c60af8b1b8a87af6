"""Log axes carry readable ticks along their whole length (app/views/base.log_ticker): BokehJS's
own LogTicker put even linear steps on ranges under two decades, which crowd into the top of a log
axis (a 5 ms to 0.3 s latency axis drew "0.20.250.3" in a heap at its right end). The ticker's code
runs here in BokehJS, on the served pages, over ranges from a sliver of a decade to nine decades."""

from __future__ import annotations

import math

import pytest

pytestmark = pytest.mark.browser

RANGES = [(0.005, 0.3), (0.2, 0.25), (0.2, 0.3), (0.0123, 0.0131), (0.01, 1000.0), (1e-3, 1e6), (256, 131072),
          (3.7, 41.0), (0.8, 1.25), (1.0, 10.0)]

# The ticks each log axis on the page gets from its own ticker, for each range.
TICKS_JS = """(ranges) => {
  const models = Bokeh.documents.flatMap((d) => [...d._all_models.values()]);
  return models.filter((m) => m.type === 'LogAxis')
               .map((a) => ranges.map(([lo, hi]) => [...a.ticker.get_ticks(lo, hi, null, null).major]));
}"""


def spread_problems(lo: float, hi: float, ticks: list[float]) -> list[str]:
    """What is wrong with a log axis's ticks from lo to hi: too few or too many, outside the range,
    two closer than a ninth of the axis (labels touch on a phone), or none in its lower half."""
    span = math.log10(hi / lo)
    where = [math.log10(t / lo) / span for t in ticks]  # 0 at lo, 1 at hi
    found = []
    if not 2 <= len(ticks) <= 8:
        found.append(f"{len(ticks)} ticks")
    if any(not lo * (1 - 1e-9) <= t <= hi * (1 + 1e-9) for t in ticks):
        found.append("a tick outside the range")
    if any(b - a < 1 / 9 for a, b in zip(where, where[1:], strict=False)):
        found.append("two ticks closer than a ninth of the axis")
    if where and min(where) > 0.5:
        found.append("no tick in the axis's lower half")
    return found


@pytest.mark.parametrize("path", ["/admission", "/serving_lab"])
def test_log_axes_spread_their_ticks(kv_page, path):
    kv_page.open(path, wait_for="log" if path == "/admission" else "lab-log")
    axes = kv_page.page.evaluate(TICKS_JS, [list(r) for r in RANGES])
    assert axes, f"no log axis on {path}"
    bad = {f"axis {n}, {lo:g} to {hi:g}: {ticks}": spread_problems(lo, hi, ticks)
           for n, found in enumerate(axes) for (lo, hi), ticks in zip(RANGES, found, strict=True) if spread_problems(lo, hi, ticks)}
    assert not bad, bad
