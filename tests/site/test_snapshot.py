"""The Pyodide memory snapshot `kvlab build-site` makes (app/site/snapshot.py): in the session's one
build, recorded with what it was made with, named by every page; its import list closed; and a
clear note, not a failure, when Node is missing or the snapshot cannot be made. Its use in the
browser (restored, and the fallback when it is missing or corrupt) is checked in
test_site_in_browser.py."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import re
import subprocess
import sys
import textwrap
import zipfile

import pytest
from kvlab.app.site import snapshot as site_snapshot
from kvlab.app.site.assets import PYODIDE_VERSION
from kvlab.app.site.discover import LIVE_PAGES
from kvlab.app.site.snapshot import SNAPSHOT_IMPORTS, make_snapshot
from kvlab.app.site.wheels import ROOT, kvlab_version

from devtools import pyodide as harness


def _snapshot_info(out) -> dict:
    info = json.loads((out / "build-info.json").read_text())
    if not info["pyodide_self_hosted"]:
        pytest.skip(harness.missing_reason("newest"))
    if info["snapshot"] is None:
        pytest.skip(f"the build made no snapshot: {info['snapshot_note']}")
    return info


def test_the_snapshot_is_recorded_with_what_it_was_made_with(real_site):
    out, proc, _ = real_site
    info = _snapshot_info(out)
    snap = info["snapshot"]
    path = out / snap["file"]
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    assert snap["sha256"] == digest and path.name == f"kvlab-{digest[:16]}.bin"  # named by content: never a stale copy
    assert len(data) == snap["bytes"] and len(gzip.decompress(data)) == snap["raw_bytes"]
    # Made with the Pyodide the site ships (its BUILD_ID, which Pyodide checks on restore) and these wheels.
    build_id = re.search(r'BUILD_ID:"([0-9a-f]+)"', (out / "pyodide" / "pyodide.mjs").read_text())[1]
    assert (snap["pyodide_version"], snap["pyodide_build_id"]) == (PYODIDE_VERSION, build_id)
    assert snap["wheels"] == info["wheels"] and snap["kvlab_version"] == kvlab_version()
    assert snap["imports"] == list(SNAPSHOT_IMPORTS)
    # Its standard library: the modules it holds imported, cut from Pyodide's zip, each entry stored,
    # the zip gzip-compressed and named by content.
    stdlib = out / snap["stdlib"]
    stdlib_digest = hashlib.sha256(stdlib.read_bytes()).hexdigest()
    assert snap["stdlib_sha256"] == stdlib_digest and stdlib.name == f"stdlib-{stdlib_digest[:16]}.zip.gz"
    with zipfile.ZipFile(io.BytesIO(gzip.decompress(stdlib.read_bytes()))) as cut, \
            zipfile.ZipFile(out / "pyodide" / "python_stdlib.zip") as full:
        names = cut.namelist()
        assert len(names) == snap["stdlib_modules"] and set(names) < set(full.namelist())
        assert {"zipfile/__init__.py", "json/__init__.py", "encodings/utf_8.py"} <= set(names)  # what the worker runs
        assert all(cut.read(n) == full.read(n) for n in names)
        assert {i.compress_type for i in cut.infolist()} == {zipfile.ZIP_STORED}
    # sim's data files for a restored worker: the wheels' files other than modules, as text, named by content.
    data = out / snap["data"]
    assert snap["data_sha256"] == hashlib.sha256(data.read_bytes()).hexdigest() and data.name == f"data-{snap['data_sha256'][:16]}.json"
    files = json.loads(data.read_text())
    assert files == site_snapshot.data_files([out / "wheels" / name for name in info["wheels"]])
    assert "kvlab/sim/data/gpus.json" in files and not any(n.endswith(".py") or ".dist-info/" in n for n in files)
    assert json.loads(files["kvlab/sim/data/gpus.json"]) == json.loads((ROOT / "sim" / "data" / "gpus.json").read_text())
    assert snap["file"] in proc.stdout  # the build's summary names it
    for page in (*LIVE_PAGES, "lesson_a1"):
        text = (out / f"{page}.html").read_text()
        assert f'data-snapshot="./{snap["file"]}"' in text and f'data-snapshot-pyodide="{PYODIDE_VERSION}"' in text, page
        assert f'data-snapshot-stdlib="./{snap["stdlib"]}"' in text and f'data-snapshot-data="./{snap["data"]}"' in text, page


def test_the_lock_file_lists_no_package(real_site):
    """The worker loads no Pyodide package, so the site's lock file keeps only the file's `info`."""
    out, _, _ = real_site
    if not json.loads((out / "build-info.json").read_text())["pyodide_self_hosted"]:
        pytest.skip(harness.missing_reason("newest"))
    lock = json.loads((out / "pyodide" / "pyodide-lock.json").read_text())
    shipped = json.loads((harness.runtime("newest").path / "pyodide-lock.json").read_text())
    assert lock["packages"] == {} and lock["info"] == shipped["info"]


# Run in a fresh interpreter: after the snapshot's imports, every kind of page the worker serves
# (both panels, the lab with a run, a trace and a sweep, a lesson's steady and lab live views).
_EXERCISE = textwrap.dedent("""
    import base64, importlib, json, sys
    for name in json.loads(sys.argv[1]):
        importlib.import_module(name)
    before = set(sys.modules)
    from kvlab.app.viewlayer.sessions import page_for
    for name, widget, value in (("admission", "w.kv_dtype", 2), ("phases", "w.prompt_tokens", 7.0)):
        page = page_for(name, "?prompt_tokens=4096")
        page.start()
        page.change(widget, value)
        while page.busy:
            page.tick()
    lab = page_for("serving_lab", "?requests=60")
    lab.start(); lab.finish()
    lab.change("w.lab-seed", 3); lab.finish()
    lab.upload("t.csv", base64.b64encode(b"arrival_s,prompt_tokens,output_tokens\\n0,100,10\\n0.5,200,20\\n").decode())
    lab.finish()
    lab.click("w.lab-sweep"); lab.finish()
    live = [{"kind": "steady", "views": ["kv_formula", "hbm_bar"], "state": {}, "names": []},
            {"kind": "lab", "views": ["summary", "timeline"], "state": {"requests": 40}, "names": []}]
    lesson = page_for("lesson_a1", "", json.dumps(live))
    lesson.start()
    lesson.change("lv0:w.kv_dtype", 2)
    lesson.change("lv1:w.lab-seed", 2)
    while lesson.busy:
        lesson.tick()
    print(json.dumps(sorted(set(sys.modules) - before)))
""")


def test_the_snapshot_imports_everything_the_worker_imports():
    """SNAPSHOT_IMPORTS is closed: serving every kind of page after those imports loads no module
    of kvlab (or of the standard library) that the snapshot would not hold already. The worker
    depends on it: restored from the snapshot, its standard library holds only those modules."""
    proc = subprocess.run([sys.executable, "-c", _EXERCISE, json.dumps(SNAPSHOT_IMPORTS)], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == []


def test_no_node_means_no_snapshot_and_a_note(tmp_path, monkeypatch):
    monkeypatch.setattr(site_snapshot.shutil, "which", lambda name: None)
    info, note = make_snapshot(tmp_path, PYODIDE_VERSION, [], tmp_path)
    assert info is None and "Node.js" in note and "without a memory snapshot" in note
    assert not (tmp_path / "snapshot").exists()


def test_a_failed_snapshot_means_no_snapshot_and_a_note(tmp_path):
    """Node runs, but the folder holds no Pyodide: the build goes on without a snapshot and says why."""
    if harness.shutil.which("node") is None:
        pytest.skip("Node.js is not installed")
    out = tmp_path / "site"
    out.mkdir()
    info, note = make_snapshot(tmp_path / "no-pyodide", PYODIDE_VERSION, [], out)
    assert info is None and "could not be made" in note and "without a memory snapshot" in note
    assert list(out.iterdir()) == []  # nothing half-written is left in the site
