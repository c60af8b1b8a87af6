"""kvlab: every module lives under this one namespace (`kvlab.sim`, `kvlab.app`, `kvlab.lessons`,
`kvlab.calibration`) and the `kvlab` command is `kvlab.cli`.

An installed wheel holds the subpackages inside this folder. A source checkout keeps them as
top-level folders beside it (sim/, app/, ...), so there the package also searches the checkout's
root: `python -m pytest` or `python -m kvlab` in any clone or worktree imports that clone's code,
with no install step. The check looks for the layout's marker files, never true in site-packages.
"""

from pathlib import Path as _Path

_checkout = _Path(__file__).resolve().parent.parent
if (_checkout / "pyproject.toml").is_file() and (_checkout / "sim" / "__init__.py").is_file():
    __path__.append(str(_checkout))  # noqa: F821 -- a package's __path__ is defined by the import system
del _Path, _checkout
