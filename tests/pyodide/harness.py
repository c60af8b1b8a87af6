"""Run Python inside real Pyodide (npm packages in tests/pyodide/node_modules), under Node or Chromium.

Shared by the Pyodide tests, the site tests and benchmarks/pyodide_*.py. No pytest here: callers
decide whether a missing runtime is a skip (tests) or an error (benchmarks).

Runtimes are named by role, not version: "newest" is the latest Pyodide on npm, the one the static
site ships (app/site/ pins it); "site" is the release Panel's `panel convert` pins
(package.json aliases it as pyodide-panel), kept as a second runtime sim is proven in.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import json
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
NODE_MODULES = HERE / "node_modules"
RUNTIME_PACKAGES = {"newest": "pyodide", "site": "pyodide-panel"}
CHROMIUM = "/usr/bin/chromium"
# Flags from design.md section 4: without the background-networking ones Chromium keeps trying
# Google's hosts, which this machine's closed network refuses.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
INSTALL_HINT = "run `npm ci --prefix tests/pyodide` (scripts/test does this)"


@dataclass(frozen=True)
class Runtime:
    role: str
    path: Path
    version: str


def runtime(role: str) -> Runtime | None:
    """The npm Pyodide package for a role, or None when node_modules has not been installed."""
    path = NODE_MODULES / RUNTIME_PACKAGES[role]
    meta = path / "package.json"
    if not meta.is_file():
        return None
    return Runtime(role, path, json.loads(meta.read_text(encoding="utf-8"))["version"])


def missing_reason(role: str) -> str:
    return f"npm package {RUNTIME_PACKAGES[role]} ({role} Pyodide) is not in {NODE_MODULES}: {INSTALL_HINT}"


def run_in_node(rt: Runtime, script: Path, func: str, payload: str, wheels: list[Path], timeout_s: float = 300) -> tuple[str, dict]:
    """Call `func(payload)` defined in `script` inside Pyodide under Node; return (its string, timings)."""
    with tempfile.TemporaryDirectory(prefix="kvlab-node-") as tmp:
        inp, out = Path(tmp) / "input.txt", Path(tmp) / "output.txt"
        inp.write_text(payload, encoding="utf-8")
        proc = subprocess.run(["node", str(HERE / "run_python.mjs"), str(rt.path), str(script), func, str(inp), str(out),
                               *map(str, wheels)], capture_output=True, text=True, timeout=timeout_s)
        if proc.returncode != 0:
            raise RuntimeError(f"Pyodide {rt.version} under Node failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
        timings = json.loads(proc.stderr.strip().splitlines()[-1])
        return out.read_text(encoding="utf-8"), timings


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    # Module scripts are refused unless served as JavaScript, and streaming wasm compilation needs
    # application/wasm; Python 3.11's mimetypes knows neither .mjs nor always .wasm.
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map,
                      ".mjs": "text/javascript", ".js": "text/javascript", ".wasm": "application/wasm"}

    def log_message(self, format, *args):  # noqa: A002 - signature fixed by the base class
        pass


@contextlib.contextmanager
def serve_directory(root: Path) -> Iterator[str]:
    """Serve `root` over HTTP on 127.0.0.1 (a free port) in a thread; yield the base URL."""
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def in_own_thread(func):
    """Run `func` in a fresh thread and return its result (or raise its exception).

    Playwright's sync API refuses to start while another sync Playwright is live in the same
    thread, and the browser tests keep one open for the whole pytest session. A Playwright session
    that starts, works and ends inside its own thread never meets theirs. Functions wrapped here
    must return plain data, never Playwright objects.
    """
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        box: dict = {}

        def target():
            try:
                box["result"] = func(*args, **kwargs)
            except BaseException as e:  # re-raised in the caller's thread
                box["error"] = e

        thread = threading.Thread(target=target, name=f"kvlab-{func.__name__}")
        thread.start()
        thread.join()
        if "error" in box:
            raise box["error"]
        return box["result"]

    return wrapper


@contextlib.contextmanager
def chromium_page(record: list[str] | None = None, block_outside: bool = True):
    """A fresh headless Debian Chromium page (Python Playwright). Requests that leave 127.0.0.1 are
    aborted when block_outside is set (nothing may depend on the network at test time) and their
    URLs appended to `record`. Use it inside a function wrapped with `in_own_thread`."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            if block_outside:
                def route(r):
                    url = r.request.url
                    if url.startswith(("http://127.0.0.1", "data:", "blob:")):
                        r.continue_()
                    else:
                        if record is not None:
                            record.append(url)
                        r.abort()
                page.route("**/*", route)
            yield page
        finally:
            browser.close()


@in_own_thread
def run_in_chromium(rt: Runtime, script: Path, func: str, payload: str, wheels: list[Path], timeout_s: float = 300) -> tuple[str, dict]:
    """Call `func(payload)` defined in `script` inside Pyodide in headless Chromium; return (string, timings)."""
    with tempfile.TemporaryDirectory(prefix="kvlab-chromium-") as tmp:
        root = Path(tmp)
        (root / "pyodide").symlink_to(rt.path, target_is_directory=True)
        shutil.copy(HERE / "run_python.html", root / "index.html")
        shutil.copy(script, root / "script.py")
        (root / "input.txt").write_text(payload, encoding="utf-8")
        names = []
        for whl in wheels:
            shutil.copy(whl, root / whl.name)
            names.append(f"./{whl.name}")
        (root / "job.json").write_text(json.dumps({"script": "./script.py", "func": func, "input": "./input.txt", "wheels": names}))
        outside: list[str] = []
        with serve_directory(root) as base, chromium_page(outside) as page:
            page.goto(base + "index.html")
            page.wait_for_function("window.kvlabDone !== undefined", timeout=timeout_s * 1000)
            done = page.evaluate("window.kvlabDone")
        if "error" in done:
            raise RuntimeError(f"Pyodide {rt.version} in Chromium failed:\n{done['error'][-4000:]}")
        if outside:
            raise RuntimeError(f"the page asked for outside URLs: {outside[:5]}")
        return done["result"], done["timings"]
