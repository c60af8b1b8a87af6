"""Precompressed copies of the site's files: `F.gz` and `F.br` beside each file a browser gets
compressible, for static hosts that serve such siblings (nginx `gzip_static`/`brotli_static`,
Caddy's `file_server { precompressed }`; docs/site.md says which do).

Served as they are, a live page's cold load is about 23 MB; most of it (Pyodide's WebAssembly,
the JavaScript bundles, the pages) compresses 3-6x, which on a slow link is most of the wait. A
host that compresses on the fly spends CPU per request and most use a fast level; a sibling is
compressed once, at the highest level.

- gzip: Python's `gzip`, level 9, mtime 0 (the same input gives the same bytes).
- brotli: Python's standard library has none; the build runs Node already (the snapshot), and
  Node's `zlib.brotliCompress` is built in (`compress.mjs`, quality 11; 10 for the snapshot, the one
  large file compressed in every build). Without Node the site gets gzip siblings only, and the build
  says so in a note.

A sibling is written only when it is smaller than the file as served. Files that are compressed
already (wheels, zips, PNG, WOFF) get none. The snapshot is gzip itself, and a sibling of it must
decode to what the worker can read: its `.br` holds the snapshot's memory (the gzip file
decompressed) brotli-compressed, so a host that serves it hands the worker the memory as it is,
which `static/kvlab-worker.mjs` recognises by its first bytes (a gzip file starts 1f 8b); a `.gz`
sibling of it would be the file itself, so none is written.

The site's size bound counts the files a browser gets (`original_files`), not the siblings: a
host that serves them sends one of the three forms, never more.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

COMPRESS_SCRIPT = Path(__file__).resolve().with_name("compress.mjs")
ENCODINGS = {"gzip": ".gz", "br": ".br"}  # content coding -> sibling suffix, the names nginx and Caddy look for
# What a browser gets uncompressed: text, WebAssembly, the icon. Not .whl/.zip/.png/.woff2/.gz: compressed already.
COMPRESSIBLE_SUFFIXES = frozenset((".html", ".js", ".mjs", ".css", ".json", ".wasm", ".svg", ".ico", ".txt", ".map", ".ttf"))
GZIP_LEVEL = 9
BROTLI_QUALITY = 11  # the highest
# The snapshot's memory (31 MB) at quality 11 took 87 s of one core on the 2-core VM, at 10 about a
# third of that for 4% more bytes (4.22 against 4.07 MB, 0.12 s on a 10 Mbit/s link), against a
# minute more of every build. A third-party file is compressed once per machine (SiblingCache), so
# it gets 11 at any size: Pyodide's WebAssembly, 2.74 MB against 2.86 MB at 10 (24 s of one core, once).
BROTLI_LARGE_BYTES, BROTLI_LARGE_QUALITY = 4_000_000, 10
# Brotli's window, log2 of bytes: 24 (16 MB) is the largest a browser decodes, and the default for
# every file; a third-party file also tries 22, the encoder's own default, and keeps the smaller copy.
# Pyodide's WebAssembly came out 2% smaller at 22 (2.741 against 2.767 MB at quality 11, 2.793
# against 2.863 MB at 10; Node 20's zlib on 4 December).
BROTLI_WINDOWS, BROTLI_WINDOWS_CACHED = (24,), (22, 24)
TIMEOUT_S = 600
CACHED_FOLDERS = frozenset({"pyodide", "vendor"})  # the site's folders of third-party files (SiblingCache)


@dataclass(frozen=True)
class Precompressed:
    """What the build wrote: how many siblings of each coding, their bytes, and the originals' bytes."""
    gzip_files: int
    br_files: int
    sibling_bytes: int
    original_bytes: int  # of the files that got a sibling
    note: str | None = None
    from_cache: int = 0  # siblings of third-party files taken from SiblingCache instead of compressed again

    def to_dict(self) -> dict:
        return {"gzip_files": self.gzip_files, "br_files": self.br_files, "sibling_bytes": self.sibling_bytes,
                "original_bytes": self.original_bytes, "gzip_level": GZIP_LEVEL, "brotli_quality": BROTLI_QUALITY,
                "brotli_quality_from_4mb": BROTLI_LARGE_QUALITY, "from_cache": self.from_cache}


def is_sibling(path: Path) -> bool:
    """A precompressed copy of another file of the site (`F.gz` or `F.br` beside `F`)."""
    return path.suffix in ENCODINGS.values() and path.with_suffix("").is_file()


def original_files(site: Path) -> list[Path]:
    """Every file a browser may be sent as it is: the site without its precompressed siblings."""
    return sorted(p for p in site.rglob("*") if p.is_file() and not is_sibling(p))


def site_bytes(site: Path) -> tuple[int, int]:
    """(bytes of the original files, bytes of the precompressed siblings)."""
    originals = sum(p.stat().st_size for p in original_files(site))
    siblings = sum(p.stat().st_size for p in site.rglob("*") if p.is_file() and is_sibling(p))
    return originals, siblings


def cache_dir() -> Path | None:
    """Where the siblings of third-party files are kept between builds (KVLAB_CACHE_DIR, else
    $XDG_CACHE_HOME/kvlab or ~/.cache/kvlab, then precompressed/); None when KVLAB_CACHE_DIR is "off"."""
    root = os.environ.get("KVLAB_CACHE_DIR") or os.path.join(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache", "kvlab")
    return None if root == "off" else Path(root) / "precompressed"


class SiblingCache:
    """Compressed copies of the site's third-party files (Pyodide's core, the vendored BokehJS and Panel
    bundles: CACHED_FOLDERS), kept between builds under `folder` by the SHA-256 of the file and the
    coding and level that made them. Those files are the same bytes in every build of one installed
    version, and compressing them (Pyodide's 9.6 MB of WebAssembly at brotli 10 above all: about 15 s
    of one core) was a third of the build's compression time. The site's own files and the snapshot
    change with the code and are compressed in every build. A cache that cannot be read or written
    (a read-only home) is no cache: the build compresses as without one."""

    def __init__(self, folder: Path | None, site: Path):
        self.folder, self.site = folder, site

    def third_party(self, path: Path) -> bool:
        return path.relative_to(self.site).parts[0] in CACHED_FOLDERS

    def key(self, path: Path, data: bytes, coding: str, level: int, variant: str = "") -> Path | None:
        if self.folder is None or not self.third_party(path):
            return None
        return self.folder / f"{hashlib.sha256(data).hexdigest()}.{coding}{level}{variant}"

    def get(self, key: Path | None) -> bytes | None:
        try:
            return key.read_bytes() if key is not None else None
        except OSError:
            return None

    def put(self, key: Path | None, packed: bytes) -> None:
        if key is None:
            return
        try:
            key.parent.mkdir(parents=True, exist_ok=True)
            part = key.with_name(f"{key.name}.{os.getpid()}.part")
            part.write_bytes(packed)
            os.replace(part, key)  # whole or absent: two builds at once never read half a file
        except OSError:
            pass


def _windows_tag(windows: tuple[int, ...]) -> str:
    return "w" + "-".join(map(str, windows))  # in a cache key: a copy made with other windows is not reused


def brotli_quality(size_bytes: int, cached: bool = False) -> int:
    """The quality of a file's brotli copy; `cached`: a third-party file, compressed once per machine."""
    return BROTLI_QUALITY if cached or size_bytes < BROTLI_LARGE_BYTES else BROTLI_LARGE_QUALITY


def brotli_settings(size_bytes: int, cached: bool) -> tuple[int, tuple[int, ...]]:
    """(quality, windows) of the brotli copy of `size_bytes` of content."""
    return brotli_quality(size_bytes, cached), (BROTLI_WINDOWS_CACHED if cached else BROTLI_WINDOWS)


def _gunzipped_size(path: Path) -> int:
    """The size of a gzip file's content, from its trailer (ISIZE: the size modulo 2**32)."""
    with open(path, "rb") as f:
        f.seek(-4, os.SEEK_END)
        return int.from_bytes(f.read(4), "little")


def precompress(site: Path, gzip_wrapped: tuple[Path, ...] = (), node: str | None = None,
                cache: Path | None | bool = True) -> Precompressed:
    """Write the siblings of every compressible file of `site`. `gzip_wrapped`: gzip files whose
    reader also takes their content decoded (the snapshot): they get a `.br` of that content.
    `cache`: the folder of SiblingCache (True: cache_dir(); None or False: none)."""
    files = [p for p in original_files(site) if p.suffix in COMPRESSIBLE_SUFFIXES]
    kept = SiblingCache(cache_dir() if cache is True else (cache or None), site)
    gz_count, sibling_bytes, original_bytes, from_cache = 0, 0, 0, 0
    br_keys: dict[Path, Path] = {}  # file -> its brotli copy's cache key, for the files the cache takes
    br_cached: set[Path] = set()  # files whose brotli copy came from the cache
    for path in files:
        data = path.read_bytes()
        key = kept.key(path, data, "gzip", GZIP_LEVEL)
        packed = kept.get(key)
        from_cache += packed is not None
        if packed is None:
            packed = gzip.compress(data, compresslevel=GZIP_LEVEL, mtime=0)
            kept.put(key, packed)
        if len(packed) < len(data):
            path.with_name(path.name + ".gz").write_bytes(packed)
            gz_count += 1
        quality, windows = brotli_settings(len(data), kept.third_party(path))
        br_key = kept.key(path, data, "br", quality, _windows_tag(windows))
        if br_key is not None:
            br = kept.get(br_key)
            if br is not None and len(br) < len(data):
                path.with_name(path.name + ".br").write_bytes(br)
                br_cached.add(path)
                from_cache += 1
            else:
                br_keys[path] = br_key
    node = node or shutil.which("node")
    note, br_count = None, 0
    if node is None:
        note = "Node.js (`node`) is not on PATH, so the site has gzip copies of its files but no brotli ones"
        for p in br_cached:  # gzip only, as the note says
            p.with_name(p.name + ".br").unlink()
    else:
        def job(path: Path, gunzip: bool) -> dict:
            size = _gunzipped_size(path) if gunzip else path.stat().st_size  # what is compressed: the content
            quality, windows = brotli_settings(size, kept.third_party(path))
            return {"file": str(path), "gunzip": gunzip, "quality": quality, "windows": list(windows)}

        jobs = [job(p, False) for p in files if p not in br_cached] + [job(p, True) for p in gzip_wrapped]
        try:
            proc = subprocess.run([node, str(COMPRESS_SCRIPT)], input=json.dumps(jobs), capture_output=True, text=True,
                                  timeout=TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired) as e:
            note = f"the brotli copies could not be made ({e}); the site has gzip copies only"
        else:
            if proc.returncode != 0:
                last = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
                note = f"the brotli copies could not be made ({last}); the site has gzip copies only"
                for p in site.rglob("*.br"):  # nothing half-written
                    p.unlink()
            else:
                br_count = int(proc.stdout.strip().splitlines()[-1]) + len(br_cached)
                for path, key in br_keys.items():
                    made = path.with_name(path.name + ".br")
                    if made.is_file():
                        kept.put(key, made.read_bytes())
    for path in [*files, *gzip_wrapped]:
        written = [s for s in (path.with_name(path.name + suffix) for suffix in ENCODINGS.values()) if s.is_file()]
        if written:
            original_bytes += path.stat().st_size
            sibling_bytes += sum(s.stat().st_size for s in written)
    return Precompressed(gz_count, br_count, sibling_bytes, original_bytes, note, from_cache)
