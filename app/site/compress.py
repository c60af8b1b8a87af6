"""Precompressed copies of the site's files: `F.gz` and `F.br` beside each file a browser gets
compressible, for static hosts that serve such siblings (nginx `gzip_static`/`brotli_static`,
Caddy's `file_server { precompressed }`; docs/site.md says which do).

Served as they are, a live page's cold load is about 23 MB; most of it (Pyodide's WebAssembly,
the JavaScript bundles, the pages) compresses 3-6x, which on a slow link is most of the wait. A
host that compresses on the fly spends CPU per request and most use a fast level; a sibling is
compressed once, at the highest level.

- gzip: Python's `gzip`, level 9, mtime 0 (the same input gives the same bytes).
- brotli: Python's standard library has none; the build runs Node already (the snapshot), and
  Node's `zlib.brotliCompress` is built in (`compress.mjs`, quality 11; 10 for the two largest). Without Node the site
  gets gzip siblings only, and the build says so in a note.

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
import json
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
# Pyodide's WebAssembly (9.6 MB) and the snapshot's memory (31 MB) at quality 11 took 50 and 87 s of
# one core on the 2-core VM, at 10 about a third of that for 3-4% more bytes (2.86 against 2.77 MB,
# 4.22 against 4.07 MB): 0.2 s on a 10 Mbit/s link, against a minute more of every build.
BROTLI_LARGE_BYTES, BROTLI_LARGE_QUALITY = 4_000_000, 10
TIMEOUT_S = 600


@dataclass(frozen=True)
class Precompressed:
    """What the build wrote: how many siblings of each coding, their bytes, and the originals' bytes."""
    gzip_files: int
    br_files: int
    sibling_bytes: int
    original_bytes: int  # of the files that got a sibling
    note: str | None = None

    def to_dict(self) -> dict:
        return {"gzip_files": self.gzip_files, "br_files": self.br_files, "sibling_bytes": self.sibling_bytes,
                "original_bytes": self.original_bytes, "gzip_level": GZIP_LEVEL, "brotli_quality": BROTLI_QUALITY,
                "brotli_quality_from_4mb": BROTLI_LARGE_QUALITY}


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


def precompress(site: Path, gzip_wrapped: tuple[Path, ...] = (), node: str | None = None) -> Precompressed:
    """Write the siblings of every compressible file of `site`. `gzip_wrapped`: gzip files whose
    reader also takes their content decoded (the snapshot): they get a `.br` of that content."""
    files = [p for p in original_files(site) if p.suffix in COMPRESSIBLE_SUFFIXES]
    gz_count, sibling_bytes, original_bytes = 0, 0, 0
    for path in files:
        data = path.read_bytes()
        packed = gzip.compress(data, compresslevel=GZIP_LEVEL, mtime=0)
        if len(packed) < len(data):
            path.with_name(path.name + ".gz").write_bytes(packed)
            gz_count += 1
    node = node or shutil.which("node")
    note, br_count = None, 0
    if node is None:
        note = "Node.js (`node`) is not on PATH, so the site has gzip copies of its files but no brotli ones"
    else:
        jobs = [{"file": str(p), "gunzip": False} for p in files]
        jobs += [{"file": str(p), "gunzip": True} for p in gzip_wrapped]
        try:
            proc = subprocess.run([node, str(COMPRESS_SCRIPT), str(BROTLI_QUALITY), str(BROTLI_LARGE_BYTES),
                                   str(BROTLI_LARGE_QUALITY)], input=json.dumps(jobs),
                                  capture_output=True, text=True, timeout=TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired) as e:
            note = f"the brotli copies could not be made ({e}); the site has gzip copies only"
        else:
            if proc.returncode != 0:
                last = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
                note = f"the brotli copies could not be made ({last}); the site has gzip copies only"
                for p in site.rglob("*.br"):  # nothing half-written
                    p.unlink()
            else:
                br_count = int(proc.stdout.strip().splitlines()[-1])
    for path in [*files, *gzip_wrapped]:
        written = [s for s in (path.with_name(path.name + suffix) for suffix in ENCODINGS.values()) if s.is_file()]
        if written:
            original_bytes += path.stat().st_size
            sibling_bytes += sum(s.stat().st_size for s in written)
    return Precompressed(gz_count, br_count, sibling_bytes, original_bytes, note)
