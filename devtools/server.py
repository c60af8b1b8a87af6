"""Starting and stopping `panel serve` on the app's pages as `kvlab serve` runs it, for the browser
tests and the latency benchmarks. No network: the server binds 127.0.0.1."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from kvlab.app.server.serve import SERVER_OPTIONS, SETUP, page_scripts

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerLog:
    """A server's log file, read in steps: each test is charged with what its server logged
    while it ran (tests/browser/conftest.py fails a test whose server logged a traceback)."""

    def __init__(self, path: Path):
        self.path = path
        self.offset = 0

    def read_new(self) -> str:
        with open(self.path, encoding="utf-8", errors="replace") as f:
            f.seek(self.offset)
            text = f.read()
        self.offset += len(text.encode("utf-8", errors="replace"))
        return text


# Logs of the servers running now, for the per-test check.
SERVER_LOGS: list[ServerLog] = []


def server_errors(text: str) -> bool:
    """A traceback or an ERROR record (Bokeh and Tornado log callback exceptions as ERROR)."""
    return "Traceback" in text or " ERROR " in text or "ERROR:" in text


def start_server(port: int, setup: bool = True, timeout_s: float = 180.0, log_path: Path | None = None,
                 pages: list[Path] | None = None, ready_path: str = "/index") -> subprocess.Popen:
    """`panel serve` on the app's pages (or `pages`), as `kvlab serve` runs it; returns once
    `ready_path` answers. The server's log goes to `log_path` (a file, not a pipe nobody reads,
    which would fill and stall the server) and is checked after every test."""
    pages = [str(p) for p in (pages or page_scripts())]
    cmd = [sys.executable, "-m", "panel", "serve", *pages, "--address", "127.0.0.1", "--port", str(port),
           "--allow-websocket-origin", f"127.0.0.1:{port}", *SERVER_OPTIONS]
    if any(Path(p).stem == "index" for p in pages):
        cmd += ["--index", "index"]
    if setup:
        cmd += ["--setup", str(SETUP)]
    log = open(log_path or os.devnull, "w")  # the child keeps its own descriptor; ours is closed below
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    log.close()
    if log_path is not None:
        proc.kvlab_log = ServerLog(log_path)
        SERVER_LOGS.append(proc.kvlab_log)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log_path.read_text()[-2000:] if log_path else ""
            raise RuntimeError(f"panel serve exited with {proc.returncode}: {tail}")
        try:
            # A first page render can take tens of seconds on a loaded 2-core machine.
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{ready_path}", timeout=60) as r:
                if r.status == 200:
                    return proc
        except OSError:
            time.sleep(0.3)
    stop_server(proc)
    raise RuntimeError("panel serve did not answer within the timeout")


def stop_server(proc: subprocess.Popen) -> None:
    """Stops the server, and raises if it logged an error after the last test that used it ended
    (tests/browser/conftest.py reads what it logs during each test, and before the next one)."""
    log = getattr(proc, "kvlab_log", None)
    late = ""
    if log in SERVER_LOGS:
        time.sleep(0.2)  # a callback's error is logged a moment after the page shows the last reply
        late = log.read_new()
        SERVER_LOGS.remove(log)
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    if server_errors(late):
        raise AssertionError(f"panel serve logged an error after the last test that used it ended ({log.path}):\n{late[-3000:]}")
