"""Pure-Python wheels of kvlab's own packages, for Pyodide (standard library only).

The static site's worker unpacks kvlab into Pyodide from wheels served by the site itself (one
shared copy per site; no micropip, no PyPI). Two wheels, because the two halves have different
audiences:

- `kvlab_sim`: `sim/` and its JSON data, nothing else. No dependencies; it is also what the
  Pyodide tests load, so the code proven there is byte for byte the code the site ships.
- `kvlab_view`: the view layer (`app/viewlayer/`, with the standard-library helpers it imports),
  and the lazy `app/__init__.py`. No Panel, Bokeh, param or numpy code: the browser runs none.

Why not `pip wheel` or `pyodide build`: the project's wheel would carry the CPython-side
dependencies (Panel, numpy) and every package at once; `pyodide build` (pyodide-build) downloads
a cross-build environment before building even a pure wheel, which fails offline (see docs/site.md).
A wheel is a zip with three metadata files, so this module writes it directly, byte-reproducibly:
fixed timestamps and sorted entries give the same sha256 for the same sources.
"""

from __future__ import annotations

import base64
import hashlib
import zipfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# 1980-01-01, the earliest time a zip entry can carry: a fixed stamp keeps builds reproducible.
ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)
SKIP_PARTS = ("__pycache__",)
SKIP_SUFFIXES = (".pyc", ".pyo")


@dataclass(frozen=True)
class WheelSpec:
    """What goes into one wheel: a distribution name and the repository folders it packs, each
    installed under the `kvlab` namespace (sim/ becomes kvlab/sim/)."""

    name: str
    packages: tuple[str, ...]  # repository folders or single files, packed under kvlab/
    summary: str
    namespace_init: bool = False  # carries kvlab/__init__.py (exactly one of the wheels must)


SIM_WHEEL = WheelSpec("kvlab_sim", ("sim",), "kvlab's simulator (pure Python, for Pyodide)", namespace_init=True)
# Exactly what `import kvlab.app.viewlayer` loads (tests/app/test_viewlayer.py proves the list is closed).
VIEW_WHEEL = WheelSpec("kvlab_view", ("app/__init__.py", "app/viewlayer"), "kvlab's view layer (pure Python, for Pyodide)")
SITE_WHEELS = (SIM_WHEEL, VIEW_WHEEL)


def kvlab_version(root: Path = ROOT) -> str:
    """The version in sim/__init__.py (read, not imported, so a build never depends on import side effects)."""
    for line in (root / "sim" / "__init__.py").read_text(encoding="utf-8").splitlines():
        if line.startswith("__version__"):
            return line.split("=", 1)[1].strip().strip("\"'")
    raise ValueError("sim/__init__.py has no __version__ line")


def file_sha256(path: Path) -> str:
    """A file's sha256, hex: how build-info.json names the wheels and the snapshot."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def package_files(spec: WheelSpec, root: Path = ROOT) -> list[tuple[Path, str]]:
    """(file on disk, name in the wheel) for every file of the spec's packages, sorted."""
    init = root / "kvlab" / "__init__.py"
    if not init.is_file():  # an installed wheel: root is the kvlab package itself (kvlab/sim, kvlab/app)
        init = root / "__init__.py"
    out = [(init, "kvlab/__init__.py")] if spec.namespace_init else []
    for package in spec.packages:
        base = root / package
        if not base.exists():
            continue
        for path in sorted(base.rglob("*")) if base.is_dir() else [base]:
            rel = path.relative_to(root).as_posix()
            if not path.is_file():
                continue
            if any(part in SKIP_PARTS for part in path.parts) or path.suffix in SKIP_SUFFIXES:
                continue
            out.append((path, f"kvlab/{rel}"))
    return out


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def build_wheel(spec: WheelSpec, out_dir: Path, root: Path = ROOT, version: str | None = None) -> Path:
    """Write `<name>-<version>-py3-none-any.whl` into out_dir and return its path.

    Raises ValueError when none of the spec's package folders exist (an empty wheel would install
    silently and fail later at import, far from the cause).
    """
    version = version or kvlab_version(root)
    files = package_files(spec, root)
    if not files:
        raise ValueError(f"no files for wheel {spec.name}: none of {', '.join(spec.packages)} exists under {root}")
    dist_info = f"{spec.name}-{version}.dist-info"
    metadata = (f"Metadata-Version: 2.1\nName: {spec.name}\nVersion: {version}\nSummary: {spec.summary}\n"
                "Requires-Python: >=3.11\n").encode()
    wheel_meta = b"Wheel-Version: 1.0\nGenerator: kvlab app/site/wheels.py\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    entries = [(rel, path.read_bytes()) for path, rel in files]
    entries += [(f"{dist_info}/METADATA", metadata), (f"{dist_info}/WHEEL", wheel_meta)]
    record = "\n".join([_record_line(n, d) for n, d in entries] + [f"{dist_info}/RECORD,,", ""]).encode()
    entries.append((f"{dist_info}/RECORD", record))

    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / f"{spec.name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in entries:
            info = zipfile.ZipInfo(name, date_time=ZIP_EPOCH)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return target
