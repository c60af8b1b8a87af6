"""One build of the real site shared by the site tests (every page, light and dark), and the
helpers that run `kvlab build-site` as a user runs it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from kvlab.app.site_wheel import ROOT

FIXTURE_PAGES = str(Path(__file__).parent / "fixtures" / "pages" / "*.py")


def build_site(out: Path, *options: str, offline: bool = False) -> subprocess.CompletedProcess:
    """`kvlab build-site` in a subprocess, as a user runs it; inside an empty network namespace
    (unshare -n) when `offline`, which proves the build reaches no host at all."""
    cmd = [sys.executable, "-m", "kvlab.cli", "build-site", "--out", str(out), *options]
    if offline:
        cmd = ["unshare", "-n", *cmd]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)


def can_unshare_network() -> bool:
    return shutil.which("unshare") is not None and subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0


@pytest.fixture(scope="session")
def real_site(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess, bool]:
    """The default build of every page (Pyodide's core copied in when the npm package is
    installed), offline when the machine allows a network namespace: (folder, process, offline)."""
    offline = can_unshare_network()
    out = tmp_path_factory.mktemp("site") / "site"
    proc = build_site(out, offline=offline)
    assert proc.returncode == 0, f"build failed:\n{proc.stdout}\n{proc.stderr[-6000:]}"
    return out, proc, offline
