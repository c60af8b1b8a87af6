"""Click-to-numbers latency of the serving lab, in real headless Chromium against `panel serve`.

    .venv/bin/python benchmarks/engine_lab_latency.py              # 20 policy changes at the default settings
    .venv/bin/python benchmarks/engine_lab_latency.py --changes 40

Method (version 1): one page, one session, the default settings (600 requests, plus the comparison
policy). Each change clicks a policy button the page is not showing, and the clock runs from the
click to the moment the run's caption names the new policy (the main result has been simulated,
sent and drawn; the comparison run follows in the next slice and is not waited for). Three
warm-up changes are not counted. Reported: p50, p95, min, max, and the load average, because on a
shared machine the figure moves with it. Target (issue 5): results within a second at the
default settings.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from devtools.chromium import CHROMIUM, CHROMIUM_ARGS  # noqa: E402
from devtools.server import free_port, stop_server  # noqa: E402

METHOD_VERSION = 1
WARMUP = 3
CYCLE = [("lanes", "separate prefill / decode lanes"), ("fcfs", "shared FCFS queue"), ("chunked", "chunked prefill mixed")]


def start(port: int) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "panel", "serve", str(ROOT / "app" / "pages" / "serving_lab.py"), "--address", "127.0.0.1",
           "--port", str(port), "--allow-websocket-origin", f"127.0.0.1:{port}", "--setup", str(ROOT / "app" / "server" / "setup.py")]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/serving_lab", timeout=5):
                return proc
        except OSError:
            time.sleep(0.3)
    stop_server(proc)
    raise SystemExit("engine_lab_latency: panel serve did not answer within 60 s")


def measure(changes: int) -> list[float]:
    from playwright.sync_api import expect, sync_playwright

    port = free_port()
    proc = start(port)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1100})
            page.goto(f"http://127.0.0.1:{port}/serving_lab")
            page.locator('[data-kv="lab-ttft-p50"]').first.wait_for(timeout=60_000)
            caption = page.locator('[data-kv="lab-policy"]').first
            times = []
            for i in range(changes + WARMUP):
                policy, text = CYCLE[i % len(CYCLE)]
                t0 = time.perf_counter()
                page.locator(".kv-w-lab-policy").first.get_by_role("button", name=policy, exact=True).click()
                expect(caption).to_contain_text(text, timeout=30_000)
                if i >= WARMUP:
                    times.append(time.perf_counter() - t0)
            browser.close()
    finally:
        stop_server(proc)
    return times


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--changes", type=int, default=20)
    args = ap.parse_args(argv)
    load_before = os.getloadavg()[0]
    times = measure(args.changes)
    s = sorted(times)
    print(f"# kvlab serving lab latency, method v{METHOD_VERSION}")
    print(f"# {platform.platform()}, CPython {platform.python_version()}, {os.cpu_count()} CPUs, "
          f"load average {load_before:.2f} before / {os.getloadavg()[0]:.2f} after")
    print(f"policy change to new numbers on screen, {len(times)} changes: p50 {statistics.median(s) * 1e3:.0f} ms, "
          f"p95 {s[int(0.95 * (len(s) - 1))] * 1e3:.0f} ms, min {s[0] * 1e3:.0f} ms, max {s[-1] * 1e3:.0f} ms "
          f"(target: under 1 s at the default settings)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
