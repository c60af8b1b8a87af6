"""`kvlab build-site`: write the static site into ./site (or --out). The overview is in
app/site/__init__.py; this module puts the parts together and swaps the finished site in."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import tempfile
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from kvlab.app.pages import BUILD_ENV_VAR

from . import marks
from .assets import (
    PYODIDE_CDN,
    PYODIDE_VERSION,
    SHARED_PAGE_SCRIPTS,
    STATIC_DIR,
    _copy_css_dependencies,
    _copy_pyodide,
    _vendor_roots,
    pyodide_source,
    roots_panel_dist,
)
from .compress import precompress, site_bytes
from .discover import DEFAULT_PAGE_GLOBS, BuildError, Page, discover_pages
from .render import THEMES, render_page
from .snapshot import make_snapshot
from .wheels import ROOT, SITE_WHEELS, build_wheel, file_sha256, kvlab_version

DEFAULT_OUT = Path("site")
INFO_FILE = "build-info.json"
# Written first, so a folder left by a failed build is still recognised as ours and replaced.
MARKER_FILE = ".kvlab-site"


@dataclass(frozen=True)
class SiteOptions:
    out_dir: Path = DEFAULT_OUT
    page_globs: tuple[str, ...] = DEFAULT_PAGE_GLOBS
    pyodide_dir: Path | None = None  # None: the npm package of app/site/package.json
    pyodide_cdn: bool = False
    snapshot: bool = True  # a Pyodide memory snapshot, when Node is there and Pyodide is copied into the site
    precompress: bool = True  # F.gz and F.br beside each compressible file (app/site/compress.py)
    title: str = "kvlab"


@dataclass(frozen=True)
class SiteReport:
    out_dir: Path
    pages: tuple[Page, ...]
    info: dict = field(repr=False)
    notes: tuple[str, ...] = ()


# ---- the build -------------------------------------------------------------------------------------

def _check_out(out: Path) -> None:
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not (out / MARKER_FILE).is_file())):
        raise BuildError(f"--out: {out} is not empty and was not written by kvlab build-site; remove it or choose another folder")


def _staging_dir(out: Path) -> Path:
    """An empty folder beside `out`: the site is built there and swapped in only when complete, so
    a failed build leaves the previous site being served as it was."""
    out.parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f".{out.name}-building-", dir=out.parent))
    (stage / MARKER_FILE).write_text("written by kvlab build-site; the whole folder is replaced on each build\n", encoding="utf-8")
    return stage


def _swap_in(stage: Path, out: Path) -> None:
    if out.exists():
        shutil.rmtree(out)
    stage.rename(out)


def _world_readable(folder: Path) -> None:
    """Any web server's user can read the site: files 644, folders 755 (mkdtemp makes 700)."""
    folder.chmod(0o755)
    for path in folder.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)


def _index_html(pages: list[Page], title: str) -> str:
    """pages.html: a plain list of every page; it works with JavaScript off."""
    parts = []
    for key, heading in (("panel", "Panels"), ("lesson", "Lessons")):
        items = [p for p in pages if p.group == key]
        if not items:
            continue
        lis = "\n".join(f'<li><a href="./{html.escape(p.name)}.html">{html.escape(p.title)}</a>'
                        + (f" — {html.escape(p.summary)}" if p.summary and p.summary != p.title else "") + "</li>" for p in items)
        parts.append(f"<h2>{heading}</h2>\n<ul>\n{lis}\n</ul>")
    body = "\n".join(parts)
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)}</title>
<link rel="stylesheet" href="./kvlab/kvlab-site.css" type="text/css">
</head>
<body class="kvlab-index">
<h1>{html.escape(title)}</h1>
<p>An interactive teaching simulator of the KV cache of LLM serving. Each page shows its default state at
once and runs the simulator in your browser (Python in WebAssembly) a few seconds later.</p>
{body}
</body>
</html>
"""


def build(opts: SiteOptions) -> SiteReport:
    """Build the site; raise BuildError with a message that names the option or page at fault."""
    pages = discover_pages(opts.page_globs)
    if not pages:
        raise BuildError(f"no pages found: looked for scripts calling .servable( in {', '.join(opts.page_globs)}")
    pyodide_dir = pyodide_source(opts.pyodide_dir, opts.pyodide_cdn)
    final_out = opts.out_dir.resolve()
    _check_out(final_out)
    out = _staging_dir(final_out)
    previous = os.environ.get(BUILD_ENV_VAR)
    os.environ[BUILD_ENV_VAR] = "1"
    try:
        info, pages = _build_into(out, pages, opts, pyodide_dir)
        _world_readable(out)
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)
        raise
    finally:
        if previous is None:
            os.environ.pop(BUILD_ENV_VAR, None)
        else:
            os.environ[BUILD_ENV_VAR] = previous
    _swap_in(out, final_out)
    notes = tuple(n for n in (info.get("snapshot_note"), info.get("precompressed_note")) if n)
    return SiteReport(final_out, tuple(pages), info, notes)


def _build_into(out: Path, pages: list[Page], opts: SiteOptions, pyodide_dir: Path | None) -> tuple[dict, list[Page]]:
    import bokeh
    import panel

    wheels = [build_wheel(spec, out / "wheels") for spec in SITE_WHEELS]
    pyodide_url = "./pyodide/" if pyodide_dir is not None else PYODIDE_CDN
    shell_info = {"pyodide_url": pyodide_url, "wheels": " ".join(f"./wheels/{w.name}" for w in wheels),
                  "kvlab_version": kvlab_version()}
    if pyodide_dir is not None:
        _copy_pyodide(pyodide_dir, out / "pyodide")
    snapshot, note = None, None
    if pyodide_dir is None:
        note = "no Pyodide memory snapshot: it is made only with the Pyodide the build copies into the site"
    elif not opts.snapshot:
        note = "no Pyodide memory snapshot (--no-snapshot)"
    else:
        snapshot, note = make_snapshot(pyodide_dir, PYODIDE_VERSION, wheels, out)
    if snapshot is not None:  # the worker restores it (static/kvlab-worker.mjs); the version pins it
        shell_info.update(snapshot=f"./{snapshot['file']}", snapshot_pyodide=snapshot["pyodide_version"],
                          snapshot_stdlib=f"./{snapshot['stdlib']}", snapshot_data=f"./{snapshot['data']}")
    from kvlab.app.viewlayer.lab_page import LabPage

    opening = write_lab_opening(out) if any(p.name == LabPage.page for p in pages) else None
    roots = _vendor_roots()
    needed: dict[str, Path] = {}
    built = []
    marks.BUILD_FILES.clear()
    for page in pages:
        title = page.title
        page_info = {**shell_info, "opening": f"./{opening}"} if opening and page.name == LabPage.page else shell_info
        for theme in THEMES:
            page_html, doc_title = render_page(page, theme, roots, needed, page_info)
            name = f"{page.name}.html" if theme == "light" else f"{page.name}.dark.html"
            (out / name).write_text(page_html, encoding="utf-8")
            if doc_title not in ("", "Panel Application", "Bokeh Application"):
                title = re.sub(r"^kvlab\s*[·|-]\s*", "", doc_title)
        built.append(replace(page, title=title))
    for name, text in sorted(marks.BUILD_FILES.items()):  # what pages hand the site (the answer key's answers.json)
        (out / name).write_text(text, encoding="utf-8")
    # Panel's template names ./favicon.ico beside the page: ship Panel's own icon there.
    needed["favicon.ico"] = roots_panel_dist(roots) / "images" / "favicon.ico"
    _copy_css_dependencies(needed)
    for rel, src in sorted(needed.items()):
        dest = out / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest)
    if not STATIC_DIR.is_dir():
        raise BuildError(f"kvlab's static assets are missing: no folder {STATIC_DIR}")
    shutil.copytree(STATIC_DIR, out / "kvlab")
    from kvlab.app.shell.a11y import TEMPLATES

    for script in SHARED_PAGE_SCRIPTS:
        shutil.copyfile(TEMPLATES / script, out / "kvlab" / script)
    (out / "pages.html").write_text(_index_html(built, opts.title), encoding="utf-8")
    if not any(p.name == "index" for p in built):
        (out / "index.html").write_text(_index_html(built, opts.title), encoding="utf-8")
    packed = None
    if opts.precompress:  # last: every file a browser gets is written
        # The snapshot, its standard library and the lab's opening run are gzip files the worker also
        # reads decoded (fetchGzip): their brotli copies hold what they decode to.
        wrapped = [out / snapshot["file"], out / snapshot["stdlib"]] if snapshot else []
        packed = precompress(out, tuple(wrapped + ([out / opening] if opening else [])))
    originals, _ = site_bytes(out)
    info = {
        "kvlab_version": kvlab_version(), "panel_version": panel.__version__, "bokeh_version": bokeh.__version__,
        "pyodide_version": PYODIDE_VERSION, "pyodide_url": pyodide_url, "pyodide_self_hosted": pyodide_dir is not None,
        "snapshot": snapshot, "snapshot_note": note, "lab_opening": opening,
        "wheels": {w.name: file_sha256(w) for w in wheels},
        "vendor_files": len(needed),
        # The size bound counts what a browser gets: the files (all but this one), not their precompressed copies.
        "site_bytes": originals, "precompressed": packed.to_dict() if packed else None,
        "precompressed_note": packed.note if packed else None,
        "pages": [{**asdict(p), "source": _display_path(p.source), "html": f"{p.name}.html", "dark": f"{p.name}.dark.html"}
                  for p in built],
    }
    (out / INFO_FILE).write_text(json.dumps(info, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return info, built


def write_lab_opening(out: Path) -> str:
    """The serving lab's opening run, computed here by the same engine (viewlayer.lab_page.opening_json),
    gzip-compressed into data/, named by its sha256 (a browser never uses a cached copy made for
    other files). The lab page names it; its worker hands it to LabPage, which takes it instead of
    running the run again (0.3-0.6 s of Pyodide while the page loads here) when it is the run of
    the page's state. Returns its path in the site."""
    import gzip
    import hashlib

    from kvlab.app.viewlayer.lab_page import opening_json

    data = gzip.compress(opening_json().encode("utf-8"), compresslevel=9, mtime=0)
    name = f"data/lab-opening-{hashlib.sha256(data).hexdigest()[:16]}.json.gz"
    (out / name).parent.mkdir(parents=True, exist_ok=True)
    (out / name).write_bytes(data)
    return name


def _display_path(path: Path) -> str:
    try:
        return path.relative_to(ROOT).as_posix()
    except ValueError:
        return str(path)

