"""Builds of the static site shared by the site tests (each build takes a couple of seconds)."""

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
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)


def can_unshare_network() -> bool:
    return shutil.which("unshare") is not None and subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0


def build_offline(out: Path, *options: str) -> tuple[Path, bool]:
    """Build, inside an empty network namespace when the machine allows one; assert it worked."""
    offline = can_unshare_network()
    proc = build_site(out, *options, offline=offline)
    assert proc.returncode == 0, f"build failed:\n{proc.stdout}\n{proc.stderr[-6000:]}"
    return out, offline


@pytest.fixture(scope="session")
def cdn_site(tmp_path_factory) -> tuple[Path, bool]:
    """The default build (CDN for Pyodide, Panel, Bokeh) of the fixture page, offline when the
    machine allows a network namespace: what the tests of the build machinery read. Returns
    (folder, built_offline)."""
    return build_offline(tmp_path_factory.mktemp("site") / "static", "--pages", FIXTURE_PAGES)
