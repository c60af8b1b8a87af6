"""The log says which efficiency profile produced the times, and warns when it belongs to another GPU."""

from kvlab.sim import Scenario, evaluate, load_profile


def test_log_names_the_profile_and_its_fractions():
    r = evaluate(Scenario(prompt_tokens=4096, concurrency=32))
    line = next(x for x in r.log if x.startswith("Efficiency profile"))
    assert line == ("Efficiency profile textbook (reference): HBM reads reach 80% of 3.35 TB/s; GEMMs reach 55% of "
                    "989 TFLOP/s in the prefill and 55% in a 32-token decode step.")
    assert r.warnings == []


def test_a_measured_curve_shows_small_batches_below_the_prefill_rate():
    p = load_profile("h200-published")
    r = evaluate(Scenario(gpu="h200", profile="h200-published", concurrency=8))
    line = next(x for x in r.log if x.startswith("Efficiency profile h200-published (published)"))
    assert f"{p.compute_efficiency(4096):.0%} of 989 TFLOP/s in the prefill" in line
    assert f"{p.compute_efficiency(8):.0%} in a 8-token decode step" in line
    assert p.compute_efficiency(8) < p.compute_efficiency(4096)
    assert r.warnings == []


def test_a_profile_from_another_gpu_is_flagged():
    r = evaluate(Scenario(gpu="h100-sxm", profile="h200-published"))
    assert r.ok
    assert any("fitted on h200, not h100-sxm" in w for w in r.warnings)
    assert any(x.startswith("WARNING The efficiency profile h200-published") for x in r.log)
