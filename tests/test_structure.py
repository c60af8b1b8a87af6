"""The repository's shape, read from the source with ast (nothing is imported): small modules, imports
that run one way only (config -> sim -> view layer -> Panel views and the browser bridge -> lessons),
and no import cycle.

Layers, lowest first: sim/ (standard library only) < app/ < lessons/; calibration/ writes what sim
reads and sits beside app; kvlab/ (the command line, the front page) is the composition root above
them all. Inside app/, app/viewlayer/ is the standard-library view layer that the Panel folders
(views/, engine_views/, shell/, pages/, server/, site/) build on, and that runs in Pyodide.
"""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 450
# Repository folder -> the package it is installed as (setup.py's ROOTS).
PACKAGES = {"kvlab": "kvlab", "sim": "kvlab.sim", "app": "kvlab.app", "lessons": "kvlab.lessons",
            "calibration": "kvlab.calibration"}
# Folders outside the wheel: imports of them from shipped code cannot work once installed.
NOT_SHIPPED = ("tests", "devtools", "benchmarks")
PANEL_LIBRARIES = ("panel", "bokeh", "param")


def _tracked_python() -> list[Path]:
    out = subprocess.run(["git", "ls-files", "-z", "*.py"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [ROOT / f for f in out.split("\0") if f and (ROOT / f).is_file()]


def module_name(path: Path) -> str | None:
    """kvlab.app.viewlayer.html for app/viewlayer/html.py; tests.x / devtools.x / benchmarks.x as they
    import themselves; None for a file outside every package."""
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    if parts[0] in PACKAGES:
        return ".".join([PACKAGES[parts[0]], *parts[1:]])
    if parts[0] in NOT_SHIPPED:
        return ".".join(parts)
    return None


FILES = {name: path for path in _tracked_python() if (name := module_name(path))}


def imports(path: Path, known=FILES) -> list[tuple[str, bool]]:
    """(absolute name of what the file imports, whether at module level) for every import statement,
    the ones inside functions included, those under `if TYPE_CHECKING:` left out (they never run).
    `from X import y` gives X.y when that is a module, else X."""
    name = module_name(path) or ""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    top = {id(node) for node in tree.body}
    typing_only = set()
    for node in tree.body:  # a module-level `if`/`try` block still runs at import
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            typing_only |= {id(n) for n in ast.walk(node)}
        elif isinstance(node, (ast.If, ast.Try)):
            top |= {id(n) for n in ast.walk(node)}
    found = []
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found += [(alias.name, id(node) in top) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.append((sub if sub in known else base, id(node) in top))
    return found


def _in(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def _shipped(name: str) -> bool:
    return any(_in(name, p) for p in PACKAGES.values()) and not _in(name, "kvlab.static")


RULES = [
    # (the importing modules, what they may not import, why)
    (lambda m: _in(m, "kvlab.sim"), lambda i: any(_in(i, f"kvlab.{p}") for p in ("app", "lessons", "calibration")) or
     any(_in(i, lib) for lib in (*PANEL_LIBRARIES, "numpy")), "sim is the bottom layer, standard library only"),
    (lambda m: _in(m, "kvlab.app.viewlayer"), lambda i: any(_in(i, lib) for lib in PANEL_LIBRARIES) or
     (_in(i, "kvlab.app") and not _in(i, "kvlab.app.viewlayer") and i != "kvlab.app"),
     "the view layer is standard library only and runs in Pyodide: no Panel, Bokeh or param, nothing of app's Panel folders"),
    (lambda m: _in(m, "kvlab.app"), lambda i: _in(i, "kvlab.lessons") or i in ("kvlab.cli", "kvlab.__main__") or
     _in(i, "kvlab.pages"),
     "the lessons and the composition root (kvlab/) sit above app"),
    (lambda m: _shipped(m), lambda i: any(_in(i, p) for p in NOT_SHIPPED),
     "tests, devtools and benchmarks are not in the wheel"),
    (lambda m: _in(m, "benchmarks") or _in(m, "devtools"), lambda i: _in(i, "tests"),
     "the benchmarks share their drivers with the tests through devtools/, not tests/"),
]


def upward_imports(files: dict[str, Path] = FILES) -> list[str]:
    problems = []
    for name, path in sorted(files.items()):
        for target in sorted({t for t, _ in imports(path, {**FILES, **files})}):
            for applies, forbidden, why in RULES:
                if applies(name) and forbidden(target):
                    problems.append(f"{path.relative_to(ROOT)} imports {target}: {why}")
    return problems


def cycles(files: dict[str, Path] = FILES) -> list[list[str]]:
    """Every strongly connected group of two or more modules (Tarjan), or one that imports itself,
    over all imports (inside functions too: a cycle hidden in a function is still a cycle)."""
    known = {**FILES, **files}
    graph = {name: sorted({t for t, _ in imports(path, known) if t in files and t != name}) for name, path in files.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return groups


def test_no_module_of_sim_or_app_is_over_450_lines():
    long = {}
    for path in FILES.values():
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith(("sim/", "app/")):
            lines = len(path.read_text(encoding="utf-8").splitlines())
            if lines > MAX_LINES:
                long[rel] = lines
    assert long == {}, f"modules over {MAX_LINES} lines: {long}"


def test_no_import_runs_upward():
    assert upward_imports() == []


def test_no_import_cycle():
    assert cycles() == []


@pytest.mark.parametrize(("importer", "source", "why"), [
    ("sim/fake.py", "from kvlab.app.viewlayer import html\n", "sim is the bottom layer"),
    ("sim/fake.py", "def f():\n    import panel\n", "sim is the bottom layer"),
    ("app/viewlayer/fake.py", "from ..views.store import Store\n", "the view layer is standard library only"),
    ("app/viewlayer/fake.py", "import bokeh.models\n", "the view layer is standard library only"),
    ("app/shell/fake.py", "from kvlab.lessons.render import COURSE_CSS\n", "the lessons and the composition root"),
    ("app/site/fake.py", "def f():\n    from kvlab.lessons import render\n", "the lessons and the composition root"),
    ("lessons/fake.py", "from tests.wcag import contrast\n", "tests, devtools and benchmarks are not in the wheel"),
    ("app/server/fake.py", "import devtools.server\n", "tests, devtools and benchmarks are not in the wheel"),
    ("benchmarks/fake.py", "from tests.browser.support import DEEP_ALL\n", "through devtools/, not tests/"),
])
def test_the_rules_catch_an_upward_import(importer, source, why):
    """Each rule fails on the import it names (a file written where the rule applies, then removed)."""
    path = ROOT / importer
    assert not path.exists()
    path.write_text(source, encoding="utf-8")
    try:
        name = module_name(path)
        found = upward_imports({name: path})
    finally:
        path.unlink()
    assert len(found) == 1 and why in found[0], found


def test_a_cycle_is_caught_even_inside_a_function_but_not_a_typing_only_import():
    a, b = ROOT / "app" / "viewlayer" / "fake_a.py", ROOT / "app" / "viewlayer" / "fake_b.py"
    a.write_text("from . import fake_b\n", encoding="utf-8")
    b.write_text("def f():\n    from .fake_a import x\n", encoding="utf-8")
    try:
        files = {module_name(p): p for p in (a, b)}
        assert cycles(files) == [["kvlab.app.viewlayer.fake_a", "kvlab.app.viewlayer.fake_b"]]
        b.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .fake_a import x\n", encoding="utf-8")
        assert cycles(files) == []
    finally:
        a.unlink()
        b.unlink()


def test_what_the_browser_runs_needs_no_docstring_and_no_assert():
    """The static site's snapshot is made under -OO (app/site/snapshot.mjs): docstrings and assert
    statements are gone in every page's worker. So sim/ and app/viewlayer/ (the two wheels' code)
    must not read a docstring or rely on an assert: this fails on either."""
    found = []
    for path in FILES.values():
        rel = path.relative_to(ROOT).as_posix()
        if not rel.startswith(("sim/", "app/viewlayer/")):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Assert):
                found.append(f"{rel}:{node.lineno} assert")
            elif isinstance(node, ast.Attribute) and node.attr == "__doc__":
                found.append(f"{rel}:{node.lineno} __doc__")
            elif isinstance(node, ast.Name) and node.id in ("getdoc", "cleandoc"):
                found.append(f"{rel}:{node.lineno} {node.id}")
    assert found == []
