"""Starting `panel serve` and a real Chromium, shared by the browser tests and the latency benchmark.

No network: the server binds 127.0.0.1 and Chromium runs with its background services off.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from kvlab.app.serve import page_scripts

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(port: int, setup: bool = True, timeout_s: float = 60.0, log_path: Path | None = None) -> subprocess.Popen:
    """`panel serve` on the app's pages, as `kvlab serve` runs it; returns once a page answers.
    The server's log goes to `log_path` (a file, not a pipe nobody reads, which would fill and
    stall the server)."""
    pages = [str(p) for p in page_scripts()]
    cmd = [sys.executable, "-m", "panel", "serve", *pages, "--address", "127.0.0.1", "--port", str(port),
           "--allow-websocket-origin", f"127.0.0.1:{port}", "--index", "index"]
    if setup:
        cmd += ["--setup", str(ROOT / "app" / "server_setup.py")]
    log = open(log_path or os.devnull, "w")  # the child keeps its own descriptor; ours is closed below
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    log.close()
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log_path.read_text()[-2000:] if log_path else ""
            raise RuntimeError(f"panel serve exited with {proc.returncode}: {tail}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/index", timeout=5) as r:
                if r.status == 200:
                    return proc
        except OSError:
            time.sleep(0.3)
    proc.terminate()
    raise RuntimeError("panel serve did not answer within the timeout")


def stop_server(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


# Sets a Bokeh slider's value as a drag would (the recipe in design.md section 4): the model's
# change event goes through BokehJS exactly as a user's does.
SET_SLIDER_JS = """([title, value]) => {
  const m = [...window.Bokeh.documents[0]._all_models.values()].find(m => m.type === 'Slider' && m.title === title);
  if (!m) { throw new Error('no slider titled ' + title); }
  m.value = value;
}"""

# Finds an element by data-kv inside Panel's shadow roots.
DEEP_FIND_JS = """
window.kvFind = (key) => {
  const walk = (root) => {
    const hit = root.querySelector(`[data-kv="${key}"]`);
    if (hit) { return hit; }
    for (const el of root.querySelectorAll('*')) {
      if (el.shadowRoot) { const found = walk(el.shadowRoot); if (found) { return found; } }
    }
    return null;
  };
  return walk(document);
};
"""
