"""sim/ must import in bare Pyodide: every import is the standard library or sim itself."""

import ast
import sys
from pathlib import Path

SIM = Path(__file__).resolve().parents[2] / "sim"


def imported_top_level_names(path: Path):
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            yield node.module.split(".")[0]


def test_sim_imports_only_the_standard_library():
    files = sorted(SIM.rglob("*.py"))
    assert len(files) > 10
    allowed = set(sys.stdlib_module_names) | {"__future__", "kvlab"}
    offenders = {f"{p.relative_to(SIM.parent)}: {name}" for p in files for name in imported_top_level_names(p) if name not in allowed}
    assert not offenders, sorted(offenders)
