"""Slider-to-DOM latency of the admission panel, in real headless Chromium against `panel serve`.

    .venv/bin/python benchmarks/app_latency.py             # 50 changes, server tuned as `kvlab serve` runs it
    .venv/bin/python benchmarks/app_latency.py --compare   # also without app/server/setup.py, to show what it buys
    .venv/bin/python benchmarks/app_latency.py --changes 200
    .venv/bin/python benchmarks/app_latency.py --page phases   # panel 2: time to the new TTFT

Method (version 1): one page, one session. For each change the prompt slider's Bokeh model is
given a new value (what a drag does), and the clock runs from that assignment to the moment the
"sequences that fit" number (panel 2: the time to first token) shows the value sim gives for the new prompt, observed with a
MutationObserver on the number's shadow root (no polling interval). Every change is chosen so the
number does change. Five warm-up changes are not counted. Reported: p50, p95, min, max.
Target (issue 3): p95 under 50 ms.
"""

from __future__ import annotations

import argparse
import math
import platform
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kvlab.app.viewlayer.format import ms  # noqa: E402
from kvlab.sim import Scenario, evaluate  # noqa: E402

from devtools.chromium import CHROMIUM, CHROMIUM_ARGS, DEEP_FIND_JS  # noqa: E402
from devtools.server import free_port, start_server, stop_server  # noqa: E402

METHOD_VERSION = 1
WARMUP = 5
SLIDER = "Prompt tokens (log scale)"
# page -> (data-kv of the number watched, its text for a sim.Result as the page writes it)
WATCHED = {
    "admission": ("max_sequences", lambda r: f"{r.max_sequences:,}"),
    "phases": ("ttft", lambda r: ms(r.ttft_s).rsplit(" ", 1)[0]),
}

MEASURE_JS = """async ([title, value, key, expected]) => {
  const slider = [...window.Bokeh.documents[0]._all_models.values()].find(m => m.type === 'Slider' && m.title === title);
  const root = window.kvFind(key).getRootNode();
  return await new Promise((resolve) => {
    let t0 = 0;
    const done = () => { const el = window.kvFind(key); return el !== null && el.textContent === expected; };
    const observer = new MutationObserver(() => {
      if (done()) { observer.disconnect(); resolve(performance.now() - t0); }
    });
    observer.observe(root, {subtree: true, childList: true, characterData: true});
    setTimeout(() => { observer.disconnect(); resolve(-1); }, 5000);
    t0 = performance.now();
    window.kvMoveStart = t0;  // benchmarks/upload_latency.py times the server's reply from here
    slider.value = value;
  });
}"""


def plan(changes: int, page: str = "admission") -> list[tuple[float, str]]:
    """Slider positions (log2 tokens) walking up and down 1k..32k, each changing the number."""
    shown = WATCHED[page][1]
    stops = [10 + i / 8 for i in range(41)]
    walk = stops + stops[-2:0:-1]
    out: list[tuple[float, str]] = []
    previous = shown(evaluate(Scenario()))
    i = 0
    while len(out) < changes + WARMUP:
        v = walk[i % len(walk)]
        i += 1
        expected = shown(evaluate(Scenario(prompt_tokens=round(2 ** v))))
        if expected != previous:
            out.append((v, expected))
            previous = expected
    return out


def percentile(xs: list[float], q: float) -> float:
    s = sorted(xs)
    k = (len(s) - 1) * q
    lo, hi = math.floor(k), math.ceil(k)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def measure(changes: int, setup: bool, page_name: str = "admission") -> list[float]:
    from playwright.sync_api import sync_playwright

    port = free_port()
    proc = start_server(port, setup=setup)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            key = WATCHED[page_name][0]
            page.goto(f"http://127.0.0.1:{port}/{page_name}")
            page.wait_for_selector(f'[data-kv="{key}"]', timeout=60_000)
            page.evaluate(DEEP_FIND_JS)
            times = []
            for value, expected in plan(changes, page_name):
                elapsed_ms = page.evaluate(MEASURE_JS, [SLIDER, value, key, expected])
                if elapsed_ms < 0:
                    raise RuntimeError(f"the number never showed {expected} after setting the slider to {value}")
                times.append(elapsed_ms)
            version = browser.version
            browser.close()
    finally:
        stop_server(proc)
    print(f"# chromium {version}")
    return times[WARMUP:]


def report(label: str, times: list[float]) -> None:
    print(f"{label}: n={len(times)}  p50 {percentile(times, 0.5):.1f} ms  p95 {percentile(times, 0.95):.1f} ms  "
          f"min {min(times):.1f}  max {max(times):.1f}  mean {statistics.fmean(times):.1f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--changes", type=int, default=50, help="measured slider changes (default 50)")
    parser.add_argument("--compare", action="store_true", help="also measure without app/server/setup.py")
    parser.add_argument("--page", choices=sorted(WATCHED), default="admission", help="which panel (default admission)")
    args = parser.parse_args(argv)
    if not 1 <= args.changes <= 10_000:
        parser.error(f"--changes must be between 1 and 10,000, got {args.changes}")
    import bokeh
    import panel

    print(f"# app_latency method v{METHOD_VERSION}; panel {panel.__version__}, bokeh {bokeh.__version__}, "
          f"python {platform.python_version()}, {platform.machine()}, cpus {len(__import__('os').sched_getaffinity(0))}")
    print(f"# command: {' '.join([Path(sys.argv[0]).name, *(argv if argv is not None else sys.argv[1:])])}")
    print(f"# page: /{args.page}, watching data-kv={WATCHED[args.page][0]}")
    tuned = measure(args.changes, setup=True, page_name=args.page)
    report("slider -> DOM, tuned as kvlab serve runs it (app/server/setup.py)", tuned)
    if args.compare:
        stock = measure(args.changes, setup=False, page_name=args.page)
        report("slider -> DOM, stock panel serve (no --setup)                   ", stock)
    return 0


if __name__ == "__main__":
    sys.exit(main())
