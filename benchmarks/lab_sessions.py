"""Memory of `kvlab serve`'s process over many serving-lab sessions: opens and closes 100 (after
a warm-up), as a browser does, and prints the process's memory at checkpoints, read once Bokeh has
destroyed the closed sessions.

    python benchmarks/lab_sessions.py [sessions] [checkpoints]

The server is `kvlab serve`'s command (app/server/serve.py) for the lab page, with its setup script wrapped
by benchmarks/lab_sessions_probe.py, which reports on SIGUSR1. kvlab serve discards a closed page's
session at its next check, every second (app/server/patches.py), so each checkpoint waits IDLE_S
idle for the last sessions' destroy to finish. Figures: resident memory (RSS), RSS after
malloc_trim(0) (glibc's free pages handed back), and Python's own memory (sys.getallocatedblocks and
the bytes in pymalloc's blocks; every object, strings included), gc-tracked objects, live LabStores
and Documents. RSS that grows while Python's memory stays flat is the allocators' high-water mark
and fragmentation (several closed sessions alive at once), not objects kept.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kvlab.app.server.serve import IMPORT_ROOT, SETUP, command  # noqa: E402

from devtools.lab_client import LabClient  # noqa: E402
from devtools.server import free_port, stop_server  # noqa: E402

WARM_UP = 10
IDLE_S = 5
PROBE = Path(__file__).resolve().parent / "lab_sessions_probe.py"


def main() -> None:
    sessions = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    checkpoints = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    port = free_port()
    out = Path(tempfile.mkdtemp(prefix="kvlab-lab-sessions-")) / "probe.jsonl"
    cmd = [str(PROBE) if a == str(SETUP) else a for a in command(port, False, [ROOT / "app" / "pages" / "serving_lab.py"])]
    i = cmd.index("--index")  # the home page is not served here
    del cmd[i:i + 2]
    log = open(out.with_suffix(".log"), "w")
    proc = subprocess.Popen(cmd, cwd=IMPORT_ROOT, env={**os.environ, "KVLAB_PROBE_OUT": str(out)}, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    client = LabClient()

    def probe(label: str, done: int, t0: float) -> dict:
        time.sleep(IDLE_S)
        n = len(out.read_text().splitlines()) if out.exists() else 0
        proc.send_signal(signal.SIGUSR1)
        while not out.exists() or len(out.read_text().splitlines()) == n:
            time.sleep(0.2)
        row = json.loads(out.read_text().splitlines()[-1])
        print(f"{label:>22} ({done:3d} sessions, {time.perf_counter() - t0:4.0f} s): RSS {row['rss_mb']:6.1f} MB, "
              f"trimmed {row['rss_trimmed_mb']:6.1f} MB | Python {row['block_mb']:6.2f} MB in {row['blocks']:,} blocks, "
              f"{row['arenas']} arenas, {row['gc_objects']:,} gc objects | LabStores {row['lab_stores']}, "
              f"Documents {row['documents']}", flush=True)
        return row

    try:
        deadline = time.monotonic() + 300
        while True:
            try:
                urllib.request.urlopen(f"{base}/serving_lab", timeout=60).read()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the server did not start: {out.with_suffix('.log').read_text()[-2000:]}") from None
                time.sleep(0.5)
        t0 = time.perf_counter()
        for _ in range(WARM_UP):
            client.open_and_close(base)
        first = probe("after warm-up", WARM_UP, t0)
        step = sessions // checkpoints
        done = 0
        while done < sessions:
            for _ in range(min(step, sessions - done)):
                client.open_and_close(base)
                done += 1
            last = probe(f"after {done} more", WARM_UP + done, t0)
        d_rss, d_trim = last["rss_mb"] - first["rss_mb"], last["rss_trimmed_mb"] - first["rss_trimmed_mb"]
        d_py = last["block_mb"] - first["block_mb"]
        print(f"over {sessions} sessions: RSS {d_rss:+.1f} MB ({d_rss / sessions * 1024:+.0f} KB per session), "
              f"trimmed {d_trim:+.1f} MB ({d_trim / sessions * 1024:+.0f} KB per session), Python {d_py:+.2f} MB "
              f"({d_py / sessions * 1024:+.1f} KB per session), blocks {last['blocks'] - first['blocks']:+,}, "
              f"gc objects {last['gc_objects'] - first['gc_objects']:+,}")
    finally:
        client.close()
        stop_server(proc)
        log.close()


if __name__ == "__main__":
    main()
