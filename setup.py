"""Which folders the `kvlab` wheel holds, computed (the rest of the metadata is in pyproject.toml).

The repository keeps its top-level folders (sim/, app/, lessons/, calibration/, static/); the wheel
installs each under the one `kvlab` package (`kvlab.sim`, ...), so nothing in a user's folder named
app.py or sim.py can shadow it. Every sub-folder is a package with all its files, found here rather
than listed by hand: a new folder (app/viewlayer/) or data file ships without a pyproject edit.
tests/test_packaging.py builds the wheel and checks it holds every tracked file of these folders.
"""

import os

from setuptools import setup

# repository folder -> package name in the wheel
ROOTS = {"kvlab": "kvlab", "sim": "kvlab.sim", "app": "kvlab.app", "lessons": "kvlab.lessons",
         "calibration": "kvlab.calibration", "static": "kvlab.static"}
# Folders that are never part of the package: caches and local outputs (also in .gitignore).
SKIP = {"__pycache__", "node_modules", "out", "logs"}


def packages() -> dict[str, str]:
    """package name -> folder, for every folder under ROOTS (links to folders are not followed:
    calibration/profiles points into sim/data and must not ship twice)."""
    found = {}
    for root, name in ROOTS.items():
        if not os.path.isdir(root):
            continue
        for folder, subdirs, _ in os.walk(root):
            subdirs[:] = sorted(d for d in subdirs if d not in SKIP and not d.startswith(".")
                                and not os.path.islink(os.path.join(folder, d)))
            rel = os.path.relpath(folder, root)
            found[name if rel == "." else f"{name}.{rel.replace(os.sep, '.')}"] = folder
    return found


PACKAGES = packages()
setup(
    packages=list(PACKAGES),
    package_dir=PACKAGES,
    package_data={name: ["*"] for name in PACKAGES},
    exclude_package_data={"": ["*.pyc", "*.pyo"]},
)
