"""The log says which efficiency profile produced the times, and warns when it belongs to another GPU."""

import pytest
from kvlab.sim import Scenario, evaluate, load_profile


def test_log_names_the_profile_and_its_fractions():
    r = evaluate(Scenario(prompt_tokens=4096, concurrency=32))
    line = next(x for x in r.log if x.startswith("Efficiency profile"))
    assert line == ("Efficiency profile textbook (reference): HBM reads reach 80% of 3.35 TB/s; GEMMs reach 55% of "
                    "989 TFLOP/s in the prefill and 55% in a 32-token decode step.")
    assert r.warnings == []


def test_a_per_kernel_profile_says_so_and_times_kernels_one_after_another():
    p = load_profile("h200-published")
    assert p.per_kernel
    r = evaluate(Scenario(gpu="h200", profile="h200-published", concurrency=8))
    line = next(x for x in r.log if x.startswith("Efficiency profile h200-published (published)"))
    assert f"{p.compute_efficiency(4096):.0%} of 989 TFLOP/s in the prefill" in line
    assert "Per-kernel step model" in line and f"{p.kernel_overhead_s * 1e6:g} us" in line
    assert r.step_model == "per_kernel" and r.warnings == []
    # The step is the sum of its kernels, each the longer of its memory and compute time.
    assert sum(k["time_s"] for k in r.decode_kernels) == pytest.approx(r.decode_step_s, rel=1e-12)
    for k in r.decode_kernels:
        if k["bound"] != "latency":
            assert k["time_s"] == max(k["memory_s"], k["compute_s"])


def test_a_profile_from_another_gpu_is_flagged():
    r = evaluate(Scenario(gpu="h100-sxm", profile="h200-published"))
    assert r.ok
    assert any("fitted on h200, not h100-sxm" in w for w in r.warnings)
    assert any(x.startswith("WARNING The efficiency profile h200-published") for x in r.log)
