"""The suite's tiers (tests/conftest.py): every heavy test carries the marker the fast loop
deselects it by, an unmarked test cannot start anything heavy, and the dev Hypothesis profile
really lowers a test's own max_examples."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests import conftest
from tests.conftest import COLLECTED, FAST_LOOP, MARK_BY_FIXTURE, MARK_BY_FOLDER, MARK_BY_NODEID, TIERS

ROOT = Path(__file__).resolve().parents[1]


def test_every_test_that_uses_a_heavy_fixture_or_folder_carries_its_marker(request):
    """Over everything collected in this run, deselected tests included."""
    collected = request.config.stash[COLLECTED]
    assert collected
    unmarked = []
    for nodeid, (path, fixtures, tiers) in collected.items():
        need = {mark for fixture, mark in MARK_BY_FIXTURE.items() if fixture in fixtures}
        folder = path.resolve().relative_to(conftest.TESTS.resolve()).parts[0]
        if folder in MARK_BY_FOLDER:
            need.add(MARK_BY_FOLDER[folder])
        if nodeid.split("[", 1)[0] in MARK_BY_NODEID:
            need.add(MARK_BY_NODEID[nodeid.split("[", 1)[0]])
        if need - tiers:
            unmarked.append(f"{nodeid}: lacks {sorted(need - tiers)}")
    assert not unmarked, "\n".join(unmarked)


def test_the_heavy_fixtures_and_slow_tests_named_exist():
    """A renamed fixture or test would leave the tables naming nothing, and its tests unmarked."""
    sources = "\n".join(p.read_text() for p in (ROOT / "tests").rglob("*.py") if "node_modules" not in p.parts)
    for fixture in MARK_BY_FIXTURE:
        assert re.search(rf"^def {fixture}\(", sources, re.M), f"no fixture named {fixture} in tests/"
    for nodeid in MARK_BY_NODEID:
        path, name = nodeid.split("::")
        assert f"def {name}(" in (ROOT / path).read_text(), nodeid
    for folder in MARK_BY_FOLDER:
        assert (ROOT / "tests" / folder).is_dir(), folder


def test_the_fast_loop_deselects_every_tier():
    script = (ROOT / "scripts" / "test-fast").read_text()
    assert f'-m "{FAST_LOOP}"' in script
    declared = re.findall(r'^\s*"(\w+):', (ROOT / "pyproject.toml").read_text(), re.M)
    assert set(TIERS) <= set(declared), "every tier marker is declared in pyproject.toml"


@pytest.mark.parametrize("argv, what", [
    (["node", "-e", ""], "node"),
    (["/usr/bin/chromium", "--headless"], "chromium"),
    ([sys.executable, "-m", "kvlab.cli", "build-site", "--help"], "kvlab build-site"),
    ([sys.executable, "-m", "pip", "wheel", "--no-deps", "."], "pip wheel"),
])
def test_an_unmarked_test_cannot_start_anything_heavy(argv, what):
    assert conftest.heavy_command(argv) == what
    with pytest.raises(RuntimeError, match=rf"starts {what} but carries none of the markers"):
        subprocess.run(argv, capture_output=True, timeout=30)


def test_an_unmarked_test_may_start_light_commands():
    assert conftest.heavy_command([sys.executable, "-m", "kvlab.cli", "engine", "--help"]) is None
    assert subprocess.run([sys.executable, "-c", "pass"], timeout=30).returncode == 0


def test_the_dev_profile_caps_a_tests_own_max_examples():
    calls = []

    @settings(max_examples=800, database=None)
    @given(st.integers())
    def prop(x):
        calls.append(x)

    assert conftest._cap_examples(prop, 5)
    prop()
    assert 1 <= len(calls) <= 5
    assert not conftest._cap_examples(lambda: None, 5)  # not a Hypothesis test: untouched


@pytest.mark.parametrize("env, profile", [({}, "dev"), ({"CI": "true"}, "ci"), ({"CI": "true", "HYPOTHESIS_PROFILE": "dev"}, "dev"),
                                          ({"HYPOTHESIS_PROFILE": "ci"}, "ci")])
def test_the_profile_follows_ci_and_hypothesis_profile(monkeypatch, env, profile):
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("HYPOTHESIS_PROFILE", raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert conftest.hypothesis_profile() == profile


def test_each_worker_group_is_one_unit_and_other_tests_go_by_module():
    """scripts/test's two workers: a folder of WORKER_GROUPS runs whole in one of them (its session
    fixtures made once); any other test goes with its module."""
    assert set(conftest.WORKER_GROUPS) <= set(conftest.MARK_BY_FOLDER)
    assert conftest.worker_unit("tests/browser/test_a11y.py::test_axe[/-desktop-light]") == "browser"
    assert conftest.worker_unit("tests/browser/sub/test_x.py::test_y") == "browser"
    assert conftest.worker_unit("tests/site/test_snapshot.py::test_z") == "site"
    assert conftest.worker_unit("tests/sim/test_kv.py::test_a[x::y]") == "tests/sim/test_kv.py"
    assert conftest.worker_unit("tests/test_tiers.py::test_b") == "tests/test_tiers.py"
    for module in conftest.MODULES_APART:
        assert (ROOT / module).is_file() and conftest.worker_unit(f"{module}::test_c[x]") == module
