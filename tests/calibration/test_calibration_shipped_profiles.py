"""Every profile shipped in sim/data/profiles validates; the published ones are reproducible and cited."""

import json
import os
from pathlib import Path

import pytest
from kvlab.calibration import published
from kvlab.calibration.catalog import PROFILE_DIR
from kvlab.calibration.schema import validate_profile

SHIPPED = sorted(PROFILE_DIR.glob("*.json"))
REPO = Path(__file__).resolve().parents[2]


def test_profiles_are_shipped():
    names = {p.stem for p in SHIPPED}
    assert {"textbook", "a100-published", "h100-published", "h200-published"} <= names


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_shipped_profile_validates(path):
    assert validate_profile(json.loads(path.read_text()), file_stem=path.stem) == []


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_no_cpu_check_is_shipped(path):
    profile = json.loads(path.read_text())
    assert profile["provenance"]["kind"] != "cpu-pipeline-check"


@pytest.mark.parametrize("gpu_id", sorted(published.PUBLISHED))
def test_published_profile_matches_its_builder(gpu_id):
    built = published.build(gpu_id)
    on_disk = json.loads((PROFILE_DIR / f"{built['name']}.json").read_text())
    assert on_disk == json.loads(published.dumps(built)), "run: python -m calibration.published"


@pytest.mark.parametrize("gpu_id", sorted(published.PUBLISHED))
def test_every_published_figure_has_a_citation(gpu_id):
    profile = published.build(gpu_id)
    citations = profile["provenance"]["citations"]
    entries = profile["measurements"]["published_figures"] + profile["measurements"]["cross_checks"]
    for entry in entries:
        assert entry["citation"] in citations, entry
    for field in ("bandwidth_efficiency", "compute_efficiency", "step_overhead_s", "interconnect_efficiency",
                  "allreduce_latency_s"):
        assert field in profile["provenance"]["derivation"]


def test_h200_uses_the_issue_figures():
    profile = published.build("h200")
    # The serving plateau is the issue's best-shape GEMM figure times the fitted serving fraction.
    plateau = profile["compute_efficiency"][-1][1] / published.SERVING["gemm_serving_fraction"]
    assert 769 / 989.4 <= plateau <= 798 / 989.4
    assert "issue-6" in profile["provenance"]["citations"]


@pytest.mark.parametrize("gpu_id", ["l40s", "l4", "a100-pcie", "h100-pcie"])
def test_pcie_profiles_take_nccl_latency_and_mark_their_stand_ins(gpu_id):
    """Issue 36: PCIe cards get profiles of their own. Beyond two PCIe cards vLLM's one-shot all-reduce
    is off, so the small all-reduce is NCCL's measured latency, not the NVLink fit; every figure
    measured on another card says so."""
    profile = published.build(gpu_id)
    assert profile["name"] == f"{gpu_id}-published" and profile["gpu"] == gpu_id
    assert profile["allreduce_latency_s"] == pytest.approx(24.1e-6) != published.SERVING["allreduce_latency_s"]
    assert "vllm-custom-ar" in profile["provenance"]["citations"]
    figures = profile["provenance"]["figures"]
    assert figures["allreduce_latency"].startswith("2.41e-05 s: STAND-IN")
    link = "host_link_efficiency" if gpu_id in ("a100-pcie", "h100-pcie") else "link_efficiency"
    assert "STAND-IN" in figures[link]


def test_a_ring_beyond_the_nvlink_pair_runs_at_the_pcie_fraction():
    from kvlab.sim import Scenario, resolve
    profile = published.build("a100-pcie")

    def machine(tp):
        return resolve(Scenario(model="llama-3.1-70b", gpu="a100-pcie", tp=tp, profile="a100-pcie-published")).machine

    # tp 2: the NVLink bridge (300 GB/s) at its own fraction; tp 4: PCIe Gen4 (32 GB/s) at the PCIe fraction.
    assert machine(2).link_efficiency(2) == profile["interconnect_efficiency"]
    assert machine(4).link_efficiency(4) == profile["host_link_efficiency"] == pytest.approx(0.642)
    assert machine(4).allreduce_time_s(256) > 5 * machine(2).allreduce_time_s(256)
    # Pipeline hand-offs between two bridged pairs cross PCIe too, at the PCIe fraction.
    staged = resolve(Scenario(model="llama-3.1-70b", gpu="a100-pcie", tp=2, pp=2, profile="a100-pcie-published")).machine
    assert staged.link_bytes_per_s(4) == pytest.approx(staged.gpu.host_link_bytes_per_s * 0.642)


def test_allreduce_latency_worked_example():
    assert published.allreduce_latency_s(0.07e9) == pytest.approx(25.6e-6)


def test_calibration_profiles_links_to_sim():
    link = REPO / "calibration" / "profiles"
    assert link.is_symlink()
    assert os.readlink(link) == "../sim/data/profiles"
    assert link.resolve() == (REPO / "sim" / "data" / "profiles").resolve()


def test_sim_loader_reads_the_published_profiles():
    profiles = pytest.importorskip("kvlab.sim.profiles", exc_type=ImportError)  # sim is being written alongside
    for path in SHIPPED:
        try:
            loaded = profiles.from_dict(json.loads(path.read_text()))
        except AttributeError:
            pytest.skip("sim.profiles has no from_dict")
        assert loaded.name == path.stem


def test_measured_h200_profile_is_refitted_exactly_from_its_raw_copy():
    """sim/data/profiles/h200.json (measured on an H200, run of 2026-11-30 23:42 UTC, folder 2026-12-01-h200) is what refit.py makes of the
    gzipped raw measurements it references: the fit is reproducible without the GPU."""
    import gzip
    import hashlib

    from kvlab.calibration.refit import refit

    root = PROFILE_DIR.parent.parent.parent
    shipped = json.loads((PROFILE_DIR / "h200.json").read_text())
    ref = shipped["measurements"]["raw"]
    raw_text = gzip.decompress((root / ref["path"]).read_bytes())
    assert hashlib.sha256(raw_text).hexdigest() == ref["sha256_of_uncompressed"]
    again, errors = refit(json.loads(raw_text), "h200", ref, shipped["provenance"]["refit"]["command"])
    assert errors == []
    for p in (shipped, again):
        p["provenance"].pop("refit")
    assert again == shipped
    prov = shipped["provenance"]
    assert prov["kind"] == "measured" and prov["device_name"] == "NVIDIA H200"
    assert prov["mig"]["whole_gpu"] and prov["gpu_uuid"].startswith("GPU-")
    # The device machine's tree has no .git, so the commit is whatever KVLAB_GIT_COMMIT said: the 2026-12-01
    # run was given git's abbreviated form (7 hex digits). Any form must name a commit of this history.
    commit = prov["git_commit"]
    assert len(commit) >= 7 and all(c in "0123456789abcdef" for c in commit), commit
    import shutil
    import subprocess

    if shutil.which("git") is None:
        return
    shallow = subprocess.run(["git", "-C", str(root), "rev-parse", "--is-shallow-repository"],
                             capture_output=True, text=True, check=False)
    if shallow.returncode == 0 and shallow.stdout.strip() == "false":  # a full clone: the commit must be in it
        found = subprocess.run(["git", "-C", str(root), "cat-file", "-e", f"{commit}^{{commit}}"],
                               capture_output=True, check=False)
        assert found.returncode == 0, f"provenance git_commit {commit} is not a commit of this repository"
    assert "qwen3-8b" in shipped["gemm_efficiency"] and shipped["attention_kv_efficiency"]
