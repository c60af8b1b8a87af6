"""The built wheel works anywhere: installed into a fresh virtual environment outside the
repository, `kvlab serve` serves a page, `kvlab build-site` builds the site, the CLI, `kvlab
calibrate --backend numpy` and the notebook API run, all from a folder that has its own app.py and sim.py, and nothing is written
into the installed package.

No network. The wheel is built from the tracked files only (as from a fresh clone) with the
test environment's own setuptools (`--no-build-isolation`, so nothing is downloaded). The fresh
venv gets kvlab from that wheel (`--no-deps --no-index`); its dependencies (Panel, Bokeh, param,
numpy) come from this test environment's site-packages through a `.pth` file, which puts those
folders on sys.path without running their own `.pth` files, so this environment's editable kvlab
is not active there: the test asserts that every kvlab module comes from the fresh venv.

Timings go to tests/artifacts/packaging.json and are printed (pytest -s).
"""

from __future__ import annotations

import json
import os
import shutil
import site
import socket
import subprocess
import sys
import sysconfig
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "tests" / "artifacts"
# What the wheel's `kvlab/` holds: repository folder -> folder inside kvlab/ (setup.py's ROOTS).
PACKAGE_FOLDERS = {"kvlab": "", "sim": "sim/", "app": "app/", "lessons": "lessons/", "calibration": "calibration/",
                   "static": "static/"}


def tracked_files() -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [f for f in out.split("\0") if f]


def expected_wheel_names(files: list[str]) -> set[str]:
    """kvlab/... names for every tracked file under the package folders (links to folders excluded)."""
    names = set()
    for f in files:
        top, _, rest = f.partition("/")
        if top in PACKAGE_FOLDERS and rest and not (ROOT / f).is_symlink():
            names.add(f"kvlab/{PACKAGE_FOLDERS[top]}{rest}")
    return names


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(cmd, cwd, timeout=300, env=None, check=True):
    out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    if check:
        assert out.returncode == 0, f"{cmd}: status {out.returncode}\n{out.stdout[-2000:]}\n{out.stderr[-4000:]}"
    assert "Traceback" not in out.stderr, out.stderr[-4000:]
    return out


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel built from a copy of the tracked files (what a fresh clone holds)."""
    src = tmp_path_factory.mktemp("clone")
    for f in tracked_files():
        dest = src / f
        dest.parent.mkdir(parents=True, exist_ok=True)
        if (ROOT / f).is_symlink():
            dest.symlink_to(os.readlink(ROOT / f))
        elif (ROOT / f).exists():  # a file deleted but not yet committed is not in the clone either
            shutil.copy2(ROOT / f, dest)
    out_dir = tmp_path_factory.mktemp("wheel")
    t = time.perf_counter()
    build = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", str(out_dir),
                  str(src)], cwd=src, timeout=300)
    TIMINGS["build_wheel_s"] = time.perf_counter() - t
    # No setuptools warning or deprecation banner in the build.
    for needle in ("Warning", "deprecat", "!!"):
        assert needle not in build.stdout + build.stderr, (build.stdout + build.stderr)[-3000:]
    (whl,) = out_dir.glob("kvlab-*.whl")
    return whl


TIMINGS: dict[str, float] = {}


def test_wheel_holds_every_tracked_file_of_the_package(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = expected_wheel_names(tracked_files()) - names
    assert not missing, sorted(missing)
    version = wheel.name.split("-")[1]
    assert {n.split("/")[0] for n in names} == {"kvlab", f"kvlab-{version}.dist-info"}  # one import name: kvlab
    assert "kvlab/sim/data/gpus.json" in names and "kvlab/app/pages/admission.py" in names


@pytest.mark.slow
def test_installed_wheel_works_outside_the_repository(wheel, tmp_path):
    venv = tmp_path / "venv"
    t0 = time.perf_counter()
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=tmp_path)
    py = venv / "bin" / "python"
    purelib = Path(_run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=tmp_path).stdout.strip())
    ours = {sysconfig.get_paths()["purelib"], *site.getsitepackages()}
    (purelib / "kvlab_test_dependencies.pth").write_text("\n".join(sorted(ours)) + "\n")
    _run([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps", "--no-index", "-q", str(wheel)], cwd=tmp_path)
    TIMINGS["venv_and_install_s"] = time.perf_counter() - t0
    installed = {p.relative_to(purelib).as_posix() for p in (purelib / "kvlab").rglob("*") if p.is_file()
                 and "__pycache__" not in p.parts}

    # A course folder with its own app.py and sim.py: neither may be what kvlab imports.
    work = tmp_path / "course"
    work.mkdir()
    for name in ("app.py", "sim.py"):
        (work / name).write_text(f"raise SystemExit('the folder\\'s own {name} was imported instead of kvlab')\n")
    kvlab_cmd = str(venv / "bin" / "kvlab")
    env = {**os.environ, "HOME": str(tmp_path / "home"), "PYTHONDONTWRITEBYTECODE": "1"}
    for var in ("PYTHONPATH", "KVLAB_DATA_DIR", "XDG_DATA_HOME", "KVLAB_PROFILE_PATH"):
        env.pop(var, None)

    t = time.perf_counter()
    out = _run([kvlab_cmd, "--model", "qwen3-8b", "--prompt-tokens", "32768", "--kv-dtype", "fp8", "--json"], cwd=work, env=env)
    assert json.loads(out.stdout)["max_sequences"] == 24
    bad = _run([kvlab_cmd, "--prompt-tokens", "x", "--tp", "3"], cwd=work, env=env, check=False)
    assert bad.returncode == 2 and bad.stdout == "" and len(bad.stderr.splitlines()) == 2
    out = _run([kvlab_cmd, "engine", "--num-requests", "30", "--json"], cwd=work, env=env)
    assert json.loads(out.stdout)["completed"] == 30
    assert "serve" in _run([kvlab_cmd, "--help"], cwd=work, env=env).stdout
    TIMINGS["cli_s"] = time.perf_counter() - t
    t = time.perf_counter()
    out = _run([kvlab_cmd, "calibrate", "--backend", "numpy", "--quick"], cwd=work, env=env)
    assert (tmp_path / "home" / ".local" / "share" / "kvlab" / "cpu-checks" / "cpu-check-numpy.json").is_file(), out.stdout[-1000:]
    TIMINGS["calibrate_numpy_s"] = time.perf_counter() - t

    # The notebook API, with the course folder first on sys.path (python -c puts it there).
    t = time.perf_counter()
    code = ("import panel as pn, kvlab, kvlab.sim, kvlab.app\n"
            "from kvlab.app import admission_panel, phases_panel\n"
            "root = pn.panel(admission_panel(model='qwen3-32b', prompt_tokens=32768)).get_root()\n"
            "pn.panel(phases_panel()).get_root()\n"
            "print(kvlab.__file__, kvlab.sim.__file__, kvlab.app.__file__, type(root).__name__)\n")
    files = _run([str(py), "-c", code], cwd=work, env=env).stdout.split()
    assert all(f.startswith(str(purelib / "kvlab")) for f in files[:3]), files
    TIMINGS["notebook_api_s"] = time.perf_counter() - t

    # kvlab build-site from the installed package, into the current folder by default. The app's
    # pages and one lesson (a lesson's own page kind): tests/site builds all 29 pages from the
    # checkout, and the wheel's file list is checked above, so a full second build would only
    # cost a minute of CI time.
    t = time.perf_counter()
    # Pyodide from the CDN: an installed kvlab has no npm package of its own (a checkout's is app/site's).
    _run([kvlab_cmd, "build-site", "--pages", "app/pages/*.py", "kvlab/pages/*.py", "lessons/lesson_a1.py", "--pyodide-cdn"],
         cwd=work, env=env, timeout=600)  # default: ./site
    built = {p.name for p in (work / "site").glob("*.html")}
    assert {"index.html", "admission.html", "phases.html", "serving_lab.html", "lesson_a1.html",
            "lesson_a1.dark.html"} <= built, sorted(built)
    TIMINGS["build_site_s"] = time.perf_counter() - t

    # kvlab serve: one page fetched over HTTP; the server's log has no traceback.
    t = time.perf_counter()
    port = _free_port()
    log_path = tmp_path / "serve.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen([kvlab_cmd, "serve", "--port", str(port), "--no-show"], cwd=work, env=env, stdout=log,
                                stderr=subprocess.STDOUT)
    try:
        page = None
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and page is None:
            assert proc.poll() is None, log_path.read_text()[-3000:]
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/admission", timeout=60) as r:
                    page = (r.status, r.read().decode())
            except OSError:
                time.sleep(0.5)
        assert page is not None and page[0] == 200, log_path.read_text()[-3000:]
        assert "<html" in page[1].lower() and "bokeh" in page[1].lower()
        TIMINGS["serve_first_page_s"] = time.perf_counter() - t
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    assert "Traceback" not in log_path.read_text(), log_path.read_text()[-3000:]

    # Nothing was written into the installed package.
    after = {p.relative_to(purelib).as_posix() for p in (purelib / "kvlab").rglob("*") if p.is_file()
             and "__pycache__" not in p.parts}
    assert after == installed, sorted(after ^ installed)

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "packaging.json").write_text(json.dumps({k: round(v, 2) for k, v in TIMINGS.items()}, indent=2) + "\n")
    print("\nfresh-venv install test timings (s):", ", ".join(f"{k} {v:.1f}" for k, v in TIMINGS.items()))
