"""The built pages in real headless Chromium, with every request that leaves 127.0.0.1 aborted.

Panel itself cannot run in Pyodide offline here (its wheels and numpy come from CDNs), so these
tests prove what can be proven: the pre-rendered view shows the simulator's numbers before Python
runs, the progress bar follows the worker through its steps, and each way loading fails ends in
a message that names the step and says the view is a static preview.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.pyodide import harness
from tests.site.conftest import FIXTURE_PAGES, build_site

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@harness.in_own_thread
def _open(site: Path, timeout_s: float = 60) -> dict:
    """Load hello_kv.html and watch it until the loader reports failure or readiness."""
    outside: list[str] = []
    steps: list[str] = []
    with harness.serve_directory(site) as base, harness.chromium_page(outside) as page:
        page.goto(base + "hello_kv.html")
        deadline = time.monotonic() + timeout_s
        state = ""
        while time.monotonic() < deadline and not state:
            step = page.evaluate("(document.querySelector('.kvlab-progress') || {dataset: {}}).dataset.step || ''")
            if step and step not in steps:
                steps.append(step)
            state = page.evaluate("document.body.dataset.kvlabState || ''")
            time.sleep(0.1)
        alert = page.locator("[role=alert]")
        return {
            "state": state,
            "steps": steps,
            "stage": alert.get_attribute("data-stage") if alert.count() else None,
            "alert": alert.inner_text() if alert.count() else "",
            "preview": page.get_by_text("93 sequences fit").count(),
            "outside": outside,
        }


def test_cdn_blocked_pyodide_gives_a_clear_message_over_the_preview(tmp_path):
    site = tmp_path / "site"
    assert build_site(site, "--pages", FIXTURE_PAGES, "--inline").returncode == 0
    seen = _open(site)
    assert seen["preview"] == 1, "the pre-rendered numbers must show while Python loads (and after it fails)"
    assert seen["state"] == "failed" and seen["stage"] == "pyodide"
    assert "could not load https://cdn.jsdelivr.net/pyodide/v" in seen["alert"]
    assert "static preview" in seen["alert"]
    assert any("cdn.jsdelivr.net/pyodide" in u for u in seen["outside"])


def test_self_hosted_pyodide_loads_then_stops_at_packages(tmp_path):
    rt = harness.runtime("site")
    if rt is None:
        pytest.skip(harness.missing_reason("site"))
    site = tmp_path / "site"
    proc = build_site(site, "--pages", FIXTURE_PAGES, "--inline", "--pyodide-dir", str(rt.path))
    assert proc.returncode == 0, proc.stderr
    seen = _open(site, timeout_s=120)
    # Real Pyodide starts from the site's own folder (steps 1 and 2), then the npm core package has
    # no micropip: the failure is reported at the package step, with the exception line.
    assert seen["steps"][:2] == ["1", "2"], seen["steps"]
    assert seen["state"] == "failed" and seen["stage"] == "packages", seen
    assert "No module named 'micropip'" in seen["alert"]
    assert "full Pyodide release" in seen["alert"]
    assert seen["preview"] == 1
    assert not [u for u in seen["outside"] if "pyodide" in u or u.endswith(".js")], seen["outside"]


def test_blocked_javascript_cdn_is_explained(cdn_site):
    seen = _open(cdn_site[0])
    assert seen["state"] == "failed" and seen["stage"] == "bokeh"
    assert "BokehJS did not load from https://cdn.bokeh.org/" in seen["alert"]


def test_missing_worker_script_is_explained(tmp_path):
    site = tmp_path / "site"
    assert build_site(site, "--pages", FIXTURE_PAGES, "--inline").returncode == 0
    (site / "hello_kv.js").unlink()  # what a partial upload to a static host looks like
    seen = _open(site)
    assert seen["state"] == "failed" and seen["stage"] == "worker"
    assert "worker could not start" in seen["alert"]
    assert seen["preview"] == 1
