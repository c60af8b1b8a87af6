"""Every patch of Panel, Bokeh and Tornado (app/server/patches.py) checks the releases it was written
for: applied on those, skipped with a warning that names the patch, package, version and range on
any other, and the pins in pyproject.toml keep an install inside the ranges."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

pytest.importorskip("panel")

from kvlab.app.server import patches  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def test_this_installation_is_one_every_patch_was_written_for():
    assert patches.version_problems() == []
    assert len(patches.PATCHES) == 11 and {p.package for p in patches.PATCHES.values()} <= set(patches.WRITTEN_FOR)


@pytest.mark.parametrize(("installed", "low", "below", "inside"), [
    ("3.9.2", "3.7", "3.10", True), ("3.10.0", "3.7", "3.10", False), ("3.7", "3.7", "3.10", True),
    ("3.6.9", "3.7", "3.10", False), ("1.10.0rc1", "1.9", "1.11", True), ("1.11.0.dev3", "1.9", "1.11", False),
    ("6.6.1", "6.2", "7", True), ("7.0", "6.2", "7", False),
])
def test_ranges_compare_releases_as_numbers(installed, low, below, inside):
    assert patches.in_range(installed, low, below) is inside


def test_a_release_outside_the_range_is_named_and_the_patch_skipped(monkeypatch):
    from bokeh.server.views.ws import WSHandler

    before = WSHandler.open
    monkeypatch.setattr(patches, "installed_version", lambda package: "3.10.0" if package == "bokeh" else "99")
    line = patches.problem(patches.PATCHES["nodelay"])
    assert line == ("kvlab patch 'nodelay' not applied: it was written for bokeh >=3.7,<3.10 and bokeh 3.10.0 is installed "
                    "(no Nagle delay on replies); install a release in that range (pyproject.toml pins it) or check "
                    "bokeh.server.views.ws:WSHandler.open in app/server/patches.py against the new release")
    with pytest.warns(patches.PatchVersionWarning, match=re.escape(line)):
        assert patches.apply("nodelay") is False
    assert WSHandler.open is before
    assert len(patches.version_problems()) == len(patches.PATCHES)  # panel and tornado "99" too


def test_a_missing_attribute_is_named():
    gone = patches.Patch("gone", "bokeh", "bokeh.server.views.ws:WSHandler.no_such_method", "a test", lambda: None)
    assert patches.problem(gone) == (f"kvlab patch 'gone' not applied: bokeh {patches.installed_version('bokeh')} has no "
                                     "bokeh.server.views.ws:WSHandler.no_such_method (a test)")


def test_the_pins_match_the_ranges_the_patches_were_written_for():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    for package in ("panel", "bokeh"):
        low, below = patches.WRITTEN_FOR[package]
        assert f"{package}>={low},<{below}" in deps, (package, deps)


def test_every_patch_applies_once_in_a_fresh_process():
    # A child process: the patches change classes, which must not leak into this test session.
    code = ("from kvlab.app.server import patches; import warnings; warnings.simplefilter('error');"
            "first = patches.apply_server_patches(); patches.apply_server_patches();"
            "import tornado.websocket as w; f = w.WebSocketHandler.write_message;"
            "inner = [c.cell_contents for c in f.__closure__ if callable(c.cell_contents) and hasattr(c.cell_contents, '__code__')];"
            "print(len(first), f._kvlab_patch, [g.__qualname__ for g in inner if not hasattr(g, '_kvlab_patch')])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    # the wrapper wraps Tornado's own write, not a second wrapper
    assert out == ["11", "quiet_closed_writes", "['WebSocketHandler.write_message']"]


def test_kvlab_serve_names_a_skipped_patch_before_it_starts(monkeypatch, capsys):
    import signal

    from kvlab.app.server import serve

    started = []

    class Server:  # stands in for the `panel serve` child: the warning comes before it starts
        def __init__(self, cmd, cwd):
            started.append(cmd)

        def wait(self, timeout=None):
            return 0

    monkeypatch.setattr(patches, "installed_version", lambda package: "1.11.0" if package == "panel" else "3.9.2" if
                        package == "bokeh" else "6.6.1")
    monkeypatch.setattr(serve.subprocess, "Popen", Server)
    monkeypatch.setattr(signal, "signal", lambda *args: None)
    assert serve.main(["--port", str(serve.free_port()), "--no-show"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert len(started) == 1
    assert [line.split(":")[1].strip() for line in err] == ["warning"] * 4  # Panel's three server patches and the location guard
    assert all("it was written for panel >=1.9,<1.11 and panel 1.11.0 is installed" in line for line in err)
