"""Memory of `kvlab serve`'s process over many serving-lab sessions: prints its resident memory
after a warm-up and after 100 more sessions were opened and closed and the server destroyed them.

    python benchmarks/lab_sessions.py [sessions]

Each session is what a browser makes: the page fetched over HTTP, its websocket connected with
the page's token, then closed (tests/app/test_lab_sessions.py). Bokeh destroys a session 15 s
after its last connection closes and checks every 17 s, so the figures are read after 40 s idle.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.app.test_lab_sessions import open_and_close  # noqa: E402
from tests.browser.support import free_port, start_server, stop_server  # noqa: E402

WARM_UP = 20
IDLE_S = 40


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS")) / 1024


def main() -> None:
    sessions = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    port = free_port()
    proc = start_server(port, pages=[ROOT / "app" / "pages" / "serving_lab.py"], ready_path="/serving_lab")
    base = f"http://127.0.0.1:{port}"
    try:
        print(f"started: {rss_mb(proc.pid):.1f} MB")
        for _ in range(WARM_UP):
            open_and_close(base)
        time.sleep(IDLE_S)
        before = rss_mb(proc.pid)
        t0 = time.perf_counter()
        for _ in range(sessions):
            open_and_close(base)
        spent = time.perf_counter() - t0
        time.sleep(IDLE_S)
        after = rss_mb(proc.pid)
        print(f"after {WARM_UP} warm-up sessions: {before:.1f} MB; after {sessions} more ({spent:.0f} s): {after:.1f} MB "
              f"({(after - before) / sessions * 1024:+.0f} KB per session)")
    finally:
        stop_server(proc)


if __name__ == "__main__":
    main()
