"""The suite's tiers and Hypothesis profiles.

Tiers. Every test that drives Chromium, runs Pyodide or Node, builds the site or the wheel, or
takes more than a few seconds carries a marker (pyproject.toml: browser, pyodide, site, slow), so
the fast loop (scripts/test-fast) deselects them with one `-m` expression. The markers are added
here, by folder and by the fixtures a test uses, rather than by hand on each test: a new test in
tests/browser/ or one that asks for `kv_page` is marked without anyone remembering to. Two checks
keep that true: tests/test_tiers.py fails on a collected test that uses a heavy fixture and lacks
its marker, and while an unmarked test runs, starting Chromium, Node (Playwright's driver
included), `kvlab build-site` or a wheel build raises at once, naming the test.

Hypothesis. Two profiles: "ci" keeps every property test at the depth its own @settings asks for
(the suite's full depth); "dev" caps each test at DEV_MAX_EXAMPLES examples, for the fast loop.
CI=true selects "ci", anything else "dev"; HYPOTHESIS_PROFILE=ci|dev overrides both.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import settings

TESTS = Path(__file__).parent

# The markers the fast loop deselects (pyproject.toml declares them).
TIERS = ("browser", "pyodide", "site", "slow")
FAST_LOOP = " and ".join(f"not {m}" for m in TIERS)

# Folder (relative to tests/) -> marker every test in it carries.
MARK_BY_FOLDER = {"browser": "browser", "pyodide": "pyodide", "site": "site"}
# Fixture -> marker every test that uses it carries (the heavy fixtures of the suite).
MARK_BY_FIXTURE = {
    "browser": "browser", "server": "browser", "kv_page": "browser",  # tests/browser/conftest.py
    "real_site": "site",  # tests/site/conftest.py: one `kvlab build-site` of every page
    "sim_wheel": "pyodide",  # tests/pyodide: the site's sim wheel, run in Pyodide
    "wheel": "slow",  # tests/test_packaging.py: `pip wheel` of a copy of the repository
    "cpu_profile": "slow",  # tests/calibration/test_calibration_pipeline.py: a timed NumPy calibration run, 4-20 s
}
# Tests over about a second of CPU each (or together, for a parametrized one) on the 2-core
# machine that no folder or fixture above marks: CPU seconds measured in one fast-tier run at a
# load of about 8 (time.process_time plus children), so somewhat less on a quiet machine.
MARK_BY_NODEID = {
    "tests/app/test_lab_sessions.py::test_closed_lab_sessions_leave_nothing_behind": "slow",  # 12-25 real sessions, ~18 s
    "tests/lessons/test_lessons.py::test_the_page_hides_what_the_rule_hides": "slow",  # a Panel page per lesson, 12 s in all
    "tests/app/test_viewlayer_parity.py::test_server_models_equal_bridge_patches": "slow",  # two Panel pages, 8 s
    "tests/calibration/test_calibration_pipeline.py::test_numpy_default_output_stays_out_of_sim": "slow",  # 1.4 s
    "tests/calibration/test_calibration_pipeline.py::test_quick_numpy_run": "slow",  # 1.3 s
    "tests/calibration/test_calibration_cupy_backend.py::test_attention_falls_back_to_kernel_v1_and_says_so": "slow",  # 1.4 s
    "tests/calibration/test_calibration_cupy_backend.py::test_whole_suite_through_the_cupy_backend": "slow",  # 1.2 s
    "tests/calibration/test_calibration_gpu_branch.py::test_gpu_run_writes_a_measured_profile_named_after_the_gpu": "slow",  # 1.1 s
    "tests/engine/test_seed_findings.py::test_seed004_p99_latency_has_a_sharp_knee": "slow",  # 2.0 s
    "tests/engine/test_bounded_memory.py::test_a_tiny_fixed_interval_is_coarsened_before_the_first_event": "slow",  # 1.9 s
    "tests/engine/test_bounded_memory.py::test_bytes_per_request_is_what_a_run_takes": "slow",  # 1.4 s
    "tests/engine/test_lab_app.py::test_every_view_fills_from_a_run": "slow",  # 1.2 s
    "tests/engine/test_lab_app.py::test_store_runs_long_runs_in_slices_and_cancels": "slow",  # 1.1 s
    "tests/app/test_serve.py::test_setup_script_removes_the_debounce_nagle_and_busy_costs": "slow",  # 1.7 s
    "tests/app/test_viewlayer.py::test_the_default_lab_takes_the_sites_copy_of_its_opening_run_only_when_it_is_that_run": "slow",  # 1.1 s
}

# ---- Hypothesis profiles --------------------------------------------------------------------

DEV_MAX_EXAMPLES = 10
settings.register_profile("ci", print_blob=True)
settings.register_profile("dev", max_examples=DEV_MAX_EXAMPLES)


def hypothesis_profile() -> str:
    chosen = os.environ.get("HYPOTHESIS_PROFILE", "")
    if chosen:
        return chosen
    return "ci" if os.environ.get("CI", "").lower() == "true" else "dev"


PROFILE = hypothesis_profile()
settings.load_profile(PROFILE)  # before any test module is imported: tests without @settings take it


def _cap_examples(function, cap: int) -> bool:
    """Lower a @given test's max_examples to `cap`. A test's own @settings(max_examples=...) wins
    over any profile, so the dev profile's cap is applied to the settings Hypothesis stores on the
    test. Returns whether `function` is a Hypothesis test."""
    if not getattr(function, "is_hypothesis_test", False):
        return False
    own = getattr(function, "_hypothesis_internal_use_settings", None)
    if own is None:  # Hypothesis changed where it keeps a test's settings: say so, never run at full depth unseen
        raise pytest.UsageError("tests/conftest.py: Hypothesis no longer keeps a test's settings in "
                                "_hypothesis_internal_use_settings; update _cap_examples")
    if own.max_examples > cap:
        function._hypothesis_internal_use_settings = settings(own, max_examples=cap)
    return True


# ---- markers ----------------------------------------------------------------------------------

# nodeid -> (path, fixtures, tier markers) of every collected test, before `-m` deselects any
COLLECTED = pytest.StashKey[dict]()

def markers_for(path: Path, fixturenames, nodeid: str) -> set[str]:
    """The tier markers a test at `path` using `fixturenames` must carry."""
    wanted = {mark for fixture, mark in MARK_BY_FIXTURE.items() if fixture in fixturenames}
    rel = path.resolve().relative_to(TESTS.resolve()).parts
    if len(rel) > 1 and rel[0] in MARK_BY_FOLDER:
        wanted.add(MARK_BY_FOLDER[rel[0]])
    base = nodeid.split("[", 1)[0]
    if base in MARK_BY_NODEID:
        wanted.add(MARK_BY_NODEID[base])
    return wanted


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(config, items) -> None:
    checked = config.stash.setdefault(COLLECTED, {})
    for item in items:
        for mark in markers_for(Path(item.path), getattr(item, "fixturenames", ()), item.nodeid):
            if not item.get_closest_marker(mark):
                item.add_marker(mark)
        tiers = {m.name for m in item.iter_markers() if m.name in TIERS}
        checked[item.nodeid] = (Path(item.path), tuple(getattr(item, "fixturenames", ())), tiers)
        if PROFILE == "dev":
            _cap_examples(getattr(item, "function", None), DEV_MAX_EXAMPLES)


# ---- an unmarked test that starts something heavy fails at once -------------------------------

_running: list = []  # the test item now running, if any
HEAVY_PROGRAMS = {"node", "chromium", "chromium-browser", "chrome", "headless_shell"}


def heavy_command(args) -> str | None:
    """What is heavy about a command line (None if nothing): a browser, Node, a site or wheel build."""
    if isinstance(args, (str, bytes, os.PathLike)):
        args = [args]
    words = [os.fsdecode(a) for a in args]
    if not words:
        return None
    if Path(words[0]).name in HEAVY_PROGRAMS:
        return Path(words[0]).name
    if "build-site" in words:
        return "kvlab build-site"
    if "wheel" in words and "pip" in words:
        return "pip wheel"
    return None


_original_popen_init = subprocess.Popen.__init__


def _guarded_popen_init(self, args, *a, **kw):
    if _running:
        item = _running[-1]
        what = heavy_command(args)
        if what and not any(item.get_closest_marker(m) for m in TIERS):
            raise RuntimeError(f"{item.nodeid} starts {what} but carries none of the markers {', '.join(TIERS)}: "
                               "add it to tests/conftest.py's MARK_BY_FOLDER, MARK_BY_FIXTURE or MARK_BY_NODEID")
    _original_popen_init(self, args, *a, **kw)


subprocess.Popen.__init__ = _guarded_popen_init


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    _running.append(item)
    try:
        yield
    finally:
        _running.pop()


# ---- two workers ---------------------------------------------------------------------------------

# scripts/test and scripts/test-fast run pytest-xdist with two workers (`-n 2`): on 2 cores one
# pytest leaves about a third of the CPU idle while the browser tests wait on page loads. The
# folders below run whole in one worker each, in collection order, so their session fixtures are
# made once (one `panel serve` and one Chromium for tests/browser, one site build and one visit of
# it for tests/site); every other test module is a unit of its own. xdist hands out the largest
# units first, so the browser tests (about 60% of the suite's time) start at once in one worker and
# the site's build and everything else share the other. (xdist's own `--dist loadgroup` would do
# this from markers, but it renames test ids in a way pytest 9 no longer reads.)
WORKER_GROUPS = ("browser", "site")  # folders of tests/, as MARK_BY_FOLDER names them
# Modules of those folders that are units of their own, so they run beside their group in the other
# worker (which then starts its own server or Chromium): the browser group is the suite's longest.
MODULES_APART = frozenset({"tests/browser/test_a11y_lessons.py"})


def worker_unit(nodeid: str) -> str:
    """The unit of work a test id belongs to: its folder's group, else its module."""
    module = nodeid.split("::", 1)[0]
    parts = module.split("/")
    if len(parts) > 2 and parts[0] == TESTS.name and parts[1] in WORKER_GROUPS and module not in MODULES_APART:
        return parts[1]
    return module


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist, called on its controller
def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling

    class FolderGroups(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return worker_unit(nodeid)

    return FolderGroups(config, log)


# ---- unmarked tests that took long ---------------------------------------------------------------

SLOW_S = 5.0  # a test's call over this, unmarked, is listed at the end of the run (not failed: load varies)


def pytest_runtest_logreport(report) -> None:
    # The report's keywords carry the item's markers, on pytest-xdist's controller too (which
    # collects nothing itself).
    if report.when == "call" and report.duration > SLOW_S and not set(TIERS) & set(report.keywords):
        SLOW_UNMARKED.append((report.duration, report.nodeid))


def pytest_terminal_summary(terminalreporter) -> None:
    if SLOW_UNMARKED:
        terminalreporter.section("unmarked tests over a few seconds (mark them slow in tests/conftest.py)")
        for duration, nodeid in sorted(SLOW_UNMARKED, reverse=True):
            terminalreporter.write_line(f"{duration:6.1f} s  {nodeid}")


SLOW_UNMARKED: list[tuple[float, str]] = []
