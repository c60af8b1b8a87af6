"""Run Python inside real Pyodide (npm packages), under Node or Chromium.

Shared by the Pyodide tests, the site tests and benchmarks/pyodide_*.py. No pytest here: callers
decide whether a missing runtime is a skip (tests) or an error (benchmarks).

Runtimes are named by role, not version: "newest" is the Pyodide the static site ships, the very
npm package `kvlab build-site` copies (app/site/package.json pins it); "site" is the release Panel's
`panel convert` pins (devtools/package.json aliases it as pyodide-panel), kept as a second runtime
sim is proven in.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .chromium import CHROMIUM, CHROMIUM_ARGS, chromium_page, in_own_thread, serve_directory  # noqa: F401 (callers use them from here)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
NODE_MODULES = HERE / "node_modules"  # devtools/package.json: Panel's Pyodide
RUNTIME_DIRS = {"newest": ROOT / "app" / "site" / "node_modules" / "pyodide", "site": NODE_MODULES / "pyodide-panel"}
INSTALL_HINTS = {"newest": "run `npm ci --prefix app/site` (scripts/test does this)",
                 "site": "run `npm ci --prefix devtools` (scripts/test does this)"}


@dataclass(frozen=True)
class Runtime:
    role: str
    path: Path
    version: str


def runtime(role: str) -> Runtime | None:
    """The npm Pyodide package for a role, or None when node_modules has not been installed."""
    path = RUNTIME_DIRS[role]
    meta = path / "package.json"
    if not meta.is_file():
        return None
    return Runtime(role, path, json.loads(meta.read_text(encoding="utf-8"))["version"])


def missing_reason(role: str) -> str:
    return f"{role} Pyodide is not installed at {RUNTIME_DIRS[role]}: {INSTALL_HINTS[role]}"


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
