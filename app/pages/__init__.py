"""The page scripts `kvlab serve` and the site build run (one file a page), and where they live.

A page is a script that publishes something with `.servable(`. Page scripts live in three folders,
named here by path, never imported (app imports nothing of the lessons or of the composition root
above it): app/pages/ (the panels), kvlab/pages/ (pages that put app and the lessons together: the
front page) and lessons/ (one page a lesson; helpers beside them publish nothing and are skipped).
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # a checkout's root, or the installed kvlab package
CHECKOUT = (ROOT / "kvlab" / "__init__.py").is_file()
PAGE_GLOBS = ("app/pages/*.py", "kvlab/pages/*.py", "lessons/*.py")
# Set to "1" while `kvlab build-site` runs the pages (app/site/): links end in .html, views name their
# Bokeh models for the browser's bridge, lessons lay out their reveals and publish the answer key.
BUILD_ENV_VAR = "KVLAB_BUILD_SITE"


def building_site() -> bool:
    """Whether the pages are being run by the site build rather than served."""
    return os.environ.get(BUILD_ENV_VAR) == "1"


def repo_glob(pattern: str, root: Path = ROOT) -> list[Path]:
    """The files of a glob written relative to the repository (or absolute), sorted. Installed, the
    repository's folder X/ is kvlab/X/ and its kvlab/ is the package itself (setup.py's ROOTS), so
    "kvlab/pages/*.py" finds the same scripts in a checkout and in an installed kvlab."""
    base = Path(pattern)
    if base.is_absolute():
        return sorted(base.parent.glob(base.name))
    if root == ROOT and not CHECKOUT and base.parts[:1] == ("kvlab",):
        pattern = str(Path(*base.parts[1:]))
    return sorted(root.glob(pattern))


def is_page(path: Path) -> bool:
    return not path.name.startswith("_") and ".servable(" in path.read_text(encoding="utf-8")


def page_scripts(globs: tuple[str, ...] = PAGE_GLOBS) -> list[Path]:
    """Every page script of `globs`, in their order."""
    return [path for pattern in globs for path in repo_glob(pattern) if is_page(path)]
