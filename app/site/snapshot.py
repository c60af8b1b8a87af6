"""The static site's Pyodide memory snapshot, made at `kvlab build-site` time with Node.

A live page's load is nearly all Python starting: Pyodide's own start-up (CPU-bound, seconds) and
importing kvlab (its sources compiled at each start). Both are the same on every page and every
visit, so the build does them once: `site_snapshot.mjs` boots the npm `pyodide` package that the
build copies into the site, unpacks the site's own wheels, imports `SNAPSHOT_IMPORTS` (what the
worker needs for every kind of page, and nothing page-specific) and writes Pyodide's memory
snapshot, gzip-compressed, into the site, with the standard library's zip cut to the modules it
holds imported (`stdlib-<sha256>.zip.gz`, gzip-compressed too: the snapshot's worker imports no
other module), which the worker restores it with instead of Pyodide's whole zip. The worker restores it instead of booting
(static/kvlab-worker.mjs), then writes sim's data files: a snapshot holds WebAssembly memory only,
not the files of Pyodide's in-memory file system. Its modules need nothing of the wheels, so the
build gathers the wheels' other files into `data-<sha256>.json` (write_data_files), which the
worker fetches instead of the wheels.

`_makeSnapshot`, `_loadSnapshot` and `makeMemorySnapshot` are private Pyodide APIs, locked to one
Pyodide build: the build makes a snapshot only with the Pyodide release it copies (PYODIDE_VERSION,
checked by `build_site.pyodide_source`), records what it was made with (Pyodide version and
BUILD_ID, kvlab version, the wheels' sha256) in build-info.json, and names the file by its content
hash, so a page never loads a snapshot made for other files (a browser's cached copy included).
Pyodide itself refuses a snapshot of another BUILD_ID, and the worker checks the version.
"""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import zipfile
from pathlib import Path

from kvlab.app.site.discover import BuildError
from kvlab.app.site.wheels import file_sha256, kvlab_version

SNAPSHOT_SCRIPT = Path(__file__).resolve().with_name("snapshot.mjs")
# What the worker imports for every kind of page: page_for (sessions) builds a PanelPage, and imports
# LabPage and LessonPage when a page needs them. tests/site/test_snapshot.py proves the list closed:
# running every kind of page after these imports imports no further module.
SNAPSHOT_IMPORTS = ("kvlab.app.viewlayer.sessions", "kvlab.app.viewlayer.lab_page", "kvlab.app.viewlayer.lesson_page")
SNAPSHOT_DIR = "snapshot"
# Booting Pyodide twice (make, then restore to check) takes about 6 s on an idle core here.
TIMEOUT_S = 300


def make_snapshot(pyodide_dir: Path, pyodide_version: str, wheels: list[Path], out: Path,
                  node: str | None = None) -> tuple[dict | None, str | None]:
    """Write `out`/snapshot/kvlab-<sha256>.bin (gzip) and return (what it was made with, None), or
    (None, a note saying why the site has no snapshot) when Node is missing or the snapshot fails."""
    node = node or shutil.which("node")
    without = "live pages start Python without a memory snapshot (slower to their first answer)"
    if node is None:
        return None, f"Node.js (`node`) is not on PATH, so {without}; install Node 20 or newer to make one"
    folder = out / SNAPSHOT_DIR
    folder.mkdir(exist_ok=True)
    tmp, tmp_stdlib = folder / "making.bin", folder / "making-stdlib.zip"
    cmd = [node, str(SNAPSHOT_SCRIPT), str(pyodide_dir), str(tmp), str(tmp_stdlib), ",".join(SNAPSHOT_IMPORTS), *map(str, wheels)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as e:
        proc, failure = None, str(e)
    else:
        failure = None if proc.returncode == 0 else (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
    info = None
    if failure is None:
        try:
            info = json.loads(proc.stdout.strip().splitlines()[-1])
        except (IndexError, ValueError):
            failure = f"unreadable output {proc.stdout[-200:]!r}"
    if info is not None and info.get("pyodide_version") != pyodide_version:
        failure = f"it was made with Pyodide {info.get('pyodide_version')}, the site runs {pyodide_version}"
    if failure is not None or not tmp.is_file() or not tmp_stdlib.is_file():
        shutil.rmtree(folder, ignore_errors=True)
        return None, f"the Pyodide memory snapshot could not be made ({failure}), so {without}"
    final, digest = _named_by_content(tmp, "kvlab", ".bin")
    # The standard library the snapshot was made with and is restored with: the modules it holds
    # imported, cut from Pyodide's zip, each entry stored (2.8 MB); shipped gzip-compressed (0.68 MB)
    # like the snapshot, whose brotli copy the host may send instead (0.53 MB).
    packed_stdlib = folder / "making-stdlib.zip.gz"
    packed_stdlib.write_bytes(gzip.compress(tmp_stdlib.read_bytes(), compresslevel=9, mtime=0))
    tmp_stdlib.unlink()
    stdlib, stdlib_digest = _named_by_content(packed_stdlib, "stdlib", ".zip.gz")
    data, data_digest = write_data_files(wheels, folder)
    info.update(file=f"{SNAPSHOT_DIR}/{final.name}", sha256=digest, compression="gzip", kvlab_version=kvlab_version(),
                wheels={w.name: file_sha256(w) for w in wheels}, stdlib=f"{SNAPSHOT_DIR}/{stdlib.name}", stdlib_sha256=stdlib_digest,
                data=f"{SNAPSHOT_DIR}/{data.name}", data_sha256=data_digest)
    return info, None


def _named_by_content(tmp: Path, prefix: str, suffix: str) -> tuple[Path, str]:
    """Rename `tmp` to <prefix>-<sha256, 16 digits><suffix> beside it (a browser never uses a cached
    copy made for other files); returns the new path and the whole sha256."""
    digest = file_sha256(tmp)
    final = tmp.with_name(f"{prefix}-{digest[:16]}{suffix}")
    tmp.rename(final)
    return final, digest


def data_files(wheels: list[Path]) -> dict[str, str]:
    """The wheels' files other than modules and metadata, by their path in the wheel (kvlab/sim/data/...):
    what a worker restored from the snapshot needs on its file system. All text (sim's JSON)."""
    files = {}
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as z:
            for name in z.namelist():
                if name.endswith("/") or name.endswith(".py") or name.split("/", 1)[0].endswith(".dist-info"):
                    continue
                try:
                    files[name] = z.read(name).decode("utf-8")
                except UnicodeDecodeError:
                    raise BuildError(f"{wheel.name}: {name} is not UTF-8 text; the snapshot's data file holds text only") from None
    return dict(sorted(files.items()))


def write_data_files(wheels: list[Path], folder: Path) -> tuple[Path, str]:
    """`folder`/data-<sha256>.json: {path in the wheel: text} of data_files, named by content like the
    snapshot (its path and sha256). JSON, not a zip: the worker writes each file as it is, and the
    host sends the build's brotli copy of it."""
    tmp = folder / "making-data.json"
    tmp.write_text(json.dumps(data_files(wheels), sort_keys=True, separators=(",", ":")), encoding="utf-8")
    return _named_by_content(tmp, "data", ".json")
