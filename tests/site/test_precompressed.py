"""The site's precompressed copies (app/site/compress.py) on a small folder, and the static host
that serves them (devtools/static_host.py, which the site tests and the benchmark serve the site
with): each copy decodes to its file, is written only when smaller, is deterministic; the host
picks brotli, then gzip, as the request allows, with the original's type. The real build's copies
are checked in test_build_site.py, and served to Chromium in test_site_in_browser.py."""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import urllib.request

import pytest
from kvlab.app.site.compress import brotli_quality, is_sibling, original_files, precompress, site_bytes

from devtools.static_host import accepted_codings, serve_directory

TEXT = ("<p>the KV cache holds 2 x layers x kv_heads x head_dim x bytes per token</p>\n" * 400).encode()
RAW_SNAPSHOT = b"\0snp" + bytes(200_000) + TEXT  # what a Pyodide memory snapshot starts with, and much of it zeros
NODE = shutil.which("node")


def _unbrotli(path) -> bytes:
    script = "process.stdout.write(require('zlib').brotliDecompressSync(require('fs').readFileSync(process.argv[1])))"
    proc = subprocess.run([NODE, "-e", script, str(path)], capture_output=True, check=True, timeout=60)
    return proc.stdout


@pytest.fixture
def folder(tmp_path):
    site = tmp_path / "site"
    (site / "pyodide").mkdir(parents=True)
    (site / "page.html").write_bytes(TEXT)
    (site / "pyodide" / "core.wasm").write_bytes(TEXT * 3)
    (site / "tiny.js").write_bytes(b"x")  # gzip's header alone is larger: no copy
    (site / "kvlab_sim.whl").write_bytes(gzip.compress(TEXT))  # compressed already: no copy, whatever it holds
    (site / "picture.png").write_bytes(TEXT)
    (site / "snap.bin").write_bytes(gzip.compress(RAW_SNAPSHOT, mtime=0))
    return site


@pytest.mark.skipif(NODE is None, reason="Node.js makes the brotli copies")
def test_copies_decode_to_their_files_and_are_written_only_when_smaller(folder):
    packed = precompress(folder, (folder / "snap.bin",), cache=None)
    assert packed.note is None
    for name, data in (("page.html", TEXT), ("pyodide/core.wasm", TEXT * 3)):
        assert gzip.decompress((folder / f"{name}.gz").read_bytes()) == data
        assert _unbrotli(folder / f"{name}.br") == data
    # The snapshot's brotli copy holds its memory decoded (what the worker reads once the browser
    # has decoded it); a gzip copy of it would be the file itself, so there is none.
    assert _unbrotli(folder / "snap.bin.br") == RAW_SNAPSHOT and not (folder / "snap.bin.gz").exists()
    for name in ("tiny.js", "kvlab_sim.whl", "picture.png"):
        assert not (folder / f"{name}.gz").exists() and not (folder / f"{name}.br").exists(), name
    assert (packed.gzip_files, packed.br_files) == (2, 3)
    copies = [p for p in folder.rglob("*") if is_sibling(p)]
    assert sorted(p.name for p in copies) == sorted(["page.html.gz", "page.html.br", "core.wasm.gz", "core.wasm.br", "snap.bin.br"])
    assert set(original_files(folder)) == {p for p in folder.rglob("*") if p.is_file() and p not in copies}
    assert len(original_files(folder)) == 6
    assert site_bytes(folder) == (sum(p.stat().st_size for p in original_files(folder)), sum(p.stat().st_size for p in copies))
    assert packed.sibling_bytes == site_bytes(folder)[1]
    # The same files give the same bytes: gzip with mtime 0, brotli at a fixed quality.
    before = {p.name: p.read_bytes() for p in copies}
    for p in copies:
        p.unlink()
    precompress(folder, (folder / "snap.bin",), cache=None)
    assert {p.name: p.read_bytes() for p in folder.rglob("*") if is_sibling(p)} == before


@pytest.mark.skipif(NODE is None, reason="Node.js makes the brotli copies")
def test_third_party_copies_come_from_the_cache_by_content(folder, tmp_path):
    """Pyodide's and the vendored bundles' copies are kept between builds, by the SHA-256 of the file;
    the site's own files and the snapshot are compressed every time; a changed file is compressed again."""
    cache = tmp_path / "cache"
    first = precompress(folder, (folder / "snap.bin",), cache=cache)
    made = {p: p.read_bytes() for p in folder.rglob("*") if is_sibling(p)}
    # core.wasm's two copies only (it is under pyodide/), its brotli one at quality 11 whatever its
    # size, the smaller of two windows' copies (the key says which: a copy made otherwise is not reused)
    assert first.from_cache == 0 and sorted(p.suffix for p in cache.iterdir()) == [".br11w22-24", ".gzip9"]
    assert (brotli_quality(5_000_000), brotli_quality(5_000_000, cached=True), brotli_quality(3_000_000)) == (10, 11, 11)
    for p in made:
        p.unlink()
    # What the cache holds is what the build writes: a copy planted in it is served as it is.
    planted = next(p for p in cache.iterdir() if ".br" in p.suffix)
    planted.write_bytes(b"from the cache")
    again = precompress(folder, (folder / "snap.bin",), cache=cache)
    assert again.from_cache == 2 and (again.gzip_files, again.br_files) == (first.gzip_files, first.br_files)
    assert (folder / "pyodide" / "core.wasm.br").read_bytes() == b"from the cache"
    assert {p: p.read_bytes() for p in folder.rglob("*") if is_sibling(p) and p.parent == folder} == \
        {p: b for p, b in made.items() if p.parent == folder}
    (folder / "pyodide" / "core.wasm").write_bytes(TEXT * 4)  # a new Pyodide: a new key
    for p in folder.rglob("*"):
        if is_sibling(p):
            p.unlink()
    third = precompress(folder, (folder / "snap.bin",), cache=cache)
    assert third.from_cache == 0 and _unbrotli(folder / "pyodide" / "core.wasm.br") == TEXT * 4
    assert len(list(cache.iterdir())) == 4


def test_an_unwritable_cache_is_no_cache(folder, tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("a file where the cache's folder would be")
    packed = precompress(folder, (folder / "snap.bin",), cache=blocked / "precompressed")
    assert packed.from_cache == 0 and gzip.decompress((folder / "pyodide" / "core.wasm.gz").read_bytes()) == TEXT * 3


def test_without_node_the_site_gets_gzip_copies_and_a_note(folder, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    packed = precompress(folder, (folder / "snap.bin",), cache=None)
    assert packed.br_files == 0 and not list(folder.rglob("*.br"))
    assert "Node.js" in packed.note and "no brotli" in packed.note
    assert gzip.decompress((folder / "page.html.gz").read_bytes()) == TEXT


def test_accept_encoding_is_read_as_rfc_9110_says():
    assert accepted_codings("gzip, deflate, br, zstd") >= {"gzip", "br"}
    assert accepted_codings("gzip;q=1.0, br;q=0") == {"gzip"}
    assert accepted_codings("*;q=0.5, gzip;q=0") == {"br"}
    assert accepted_codings("") == set() and accepted_codings("identity") == {"identity"}


def _get(url: str, **headers) -> tuple[int, dict, bytes]:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10) as r:
            return r.status, {k.lower(): v for k, v in r.headers.items()}, r.read()
    except urllib.error.HTTPError as e:
        return e.code, {k.lower(): v for k, v in e.headers.items()}, b""


def test_the_host_serves_a_copy_the_request_allows_brotli_first(folder):
    (folder / "pyodide" / "core.wasm.gz").write_bytes(gzip.compress(TEXT * 3))
    (folder / "pyodide" / "core.wasm.br").write_bytes(b"brotli bytes")  # the host sends the file it finds
    log: list = []
    with serve_directory(folder, requests=log) as base:
        url = base + "pyodide/core.wasm?v=1"
        status, headers, body = _get(url, **{"Accept-Encoding": "gzip, deflate, br"})
        assert (status, headers["content-encoding"], body) == (200, "br", b"brotli bytes")
        assert headers["content-type"] == "application/wasm"  # the original's type: streaming compilation needs it
        assert headers["content-length"] == str(len(b"brotli bytes")) and headers["vary"] == "Accept-Encoding"
        status, headers, body = _get(url, **{"Accept-Encoding": "gzip, br;q=0"})
        assert headers["content-encoding"] == "gzip" and gzip.decompress(body) == TEXT * 3
        status, headers, body = _get(url)  # no Accept-Encoding: the file as it is, still Vary
        assert "content-encoding" not in headers and body == TEXT * 3 and headers["vary"] == "Accept-Encoding"
        status, headers, body = _get(url, **{"Accept-Encoding": "br", "If-Modified-Since": headers["last-modified"]})
        assert status == 304 and body == b""  # a revalidation of the copy costs no body
        status, headers, body = _get(base + "tiny.js", **{"Accept-Encoding": "br"})  # no copy: as it is, no Vary
        assert body == b"x" and "content-encoding" not in headers and "vary" not in headers
        assert headers["content-type"] == "text/javascript"
    assert log == [("/pyodide/core.wasm", 200, "br", 12), ("/pyodide/core.wasm", 200, "gzip", len(gzip.compress(TEXT * 3))),
                   ("/pyodide/core.wasm", 200, None, len(TEXT * 3)), ("/pyodide/core.wasm", 304, None, 0), ("/tiny.js", 200, None, 1)]
    with serve_directory(folder, precompressed=False) as base:  # a host that ignores the copies
        status, headers, body = _get(base + "pyodide/core.wasm", **{"Accept-Encoding": "br"})
        assert body == TEXT * 3 and "content-encoding" not in headers


def test_files_are_what_the_size_bound_counts(folder):
    os.makedirs(folder / "data")
    (folder / "data" / "run.json.gz").write_bytes(gzip.compress(b"{}"))  # a file of the site, not a copy: no run.json
    assert not is_sibling(folder / "data" / "run.json.gz")
    assert folder / "data" / "run.json.gz" in original_files(folder)
