"""One build of the real site shared by the site tests (every page, light and dark), and the
helpers that run `kvlab build-site` as a user runs it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from kvlab.app.site.wheels import ROOT

FIXTURE_PAGES = str(Path(__file__).parent / "fixtures" / "pages" / "*.py")


def _build_command(out: Path, options: tuple[str, ...], offline: bool) -> list[str]:
    """`kvlab build-site` as a user runs it; inside an empty network namespace (unshare -n) when
    `offline`, which proves the build reaches no host at all."""
    cmd = [sys.executable, "-m", "kvlab.cli", "build-site", "--out", str(out), *options]
    return ["unshare", "-n", *cmd] if offline else cmd


def build_site(out: Path, *options: str, offline: bool = False) -> subprocess.CompletedProcess:
    return subprocess.run(_build_command(out, options, offline), cwd=ROOT, capture_output=True, text=True, timeout=600)


# The default build takes about a minute of one core. In a single pytest it starts in the
# background as soon as collection knows a test needs it, so it overlaps the tests that run before
# the site tests (pytest itself uses one core; CI machines have two). Under pytest-xdist every
# worker collects every test, but only the one given tests/site (tests/conftest.py, WORKER_GROUPS) builds,
# when its first site test asks: the other worker's tests fill the second core meanwhile.
_background: dict = {}


def pytest_collection_finish(session) -> None:
    if not hasattr(session.config, "workerinput") and any("real_site" in getattr(item, "fixturenames", ()) for item in session.items):
        offline = can_unshare_network()
        out = session.config._tmp_path_factory.mktemp("site") / "site"
        # Files, not pipes: nobody reads a pipe until the fixture runs, and a full pipe would stop
        # the build there.
        logs = [open(out.parent / name, "w+") for name in ("build.out", "build.err")]
        _background.update(out=out, offline=offline, logs=logs, proc=subprocess.Popen(
            _build_command(out, (), offline), cwd=ROOT, stdout=logs[0], stderr=logs[1], text=True))


def pytest_sessionfinish(session) -> None:
    if "proc" in _background and _background["proc"].poll() is None:
        _background["proc"].kill()


def can_unshare_network() -> bool:
    return shutil.which("unshare") is not None and subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0


@pytest.fixture(scope="session")
def real_site(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess, bool]:
    """The default build of every page (Pyodide's core copied in when the npm package is
    installed), offline when the machine allows a network namespace: (folder, process, offline)."""
    if "proc" in _background:  # started at collection (pytest_collection_finish)
        popen, out, offline = _background["proc"], _background["out"], _background["offline"]
        popen.wait(timeout=600)
        stdout, stderr = ((log.seek(0), log.read())[1] for log in _background["logs"])
        proc = subprocess.CompletedProcess(popen.args, popen.returncode, stdout, stderr)
    else:
        offline = can_unshare_network()
        out = tmp_path_factory.mktemp("site") / "site"
        proc = build_site(out, offline=offline)
    assert proc.returncode == 0, f"build failed:\n{proc.stdout}\n{proc.stderr[-6000:]}"
    return out, proc, offline
