"""Timing helpers, plans and the catalog reader."""

import io

import pytest
from kvlab.calibration.catalog import CatalogError, datasheet, identify_gpu, load_models, model
from kvlab.calibration.plan import full_plan, make_plan, quick_plan
from kvlab.calibration.progress import Progress
from kvlab.calibration.timing import Budget, RepeatPolicy, measure, quantile, rotating_sets, summarize


def test_quantile_and_summary():
    s = [5.0, 1.0, 3.0, 2.0, 4.0]
    t = summarize(s)
    assert t.median_s == 3.0 and t.repeats == 5
    assert t.p10_s == pytest.approx(1.4) and t.p90_s == pytest.approx(4.6)
    assert quantile([1.0], 0.5) == 1.0


def test_rotating_sets_worked_example():
    h200_l2 = 50 << 20
    assert rotating_sets(4096 * 4096 * 2, h200_l2, 140 << 30) == 7  # ceil(4 x 52.4 MB / 33.5 MB)
    assert rotating_sets(4096 * 151936 * 2, h200_l2, 140 << 30) == 1
    assert rotating_sets(1024, h200_l2, 140 << 30) == 64  # capped
    assert rotating_sets(1 << 30, h200_l2, 1 << 30) == 1  # memory-bound: never below one


def test_budget_with_a_fake_clock():
    now = [100.0]
    b = Budget(10.0, clock=lambda: now[0])
    assert b.remaining_s() == 10.0 and not b.exhausted()
    assert b.slice_s(units_left=4, ceiling_s=1.0) == 1.0
    now[0] = 108.0
    assert b.slice_s(units_left=4, ceiling_s=1.0) == pytest.approx(0.5)
    now[0] = 111.0
    assert b.exhausted() and b.remaining_s() == 0.0


class FakeBackend:
    def __init__(self, per_call_s):
        self.per_call_s = per_call_s
        self.calls = []

    def time_batch(self, call, n):
        self.calls.append(n)
        for i in range(n):
            call(i)
        return self.per_call_s


def test_measure_batches_calls_between_one_timer_pair_and_rotates():
    be = FakeBackend(1e-4)
    seen = []
    t = measure(be, seen.append, n_sets=3, policy=RepeatPolicy(warmup=2, min_repeats=5, max_repeats=100),
                target_s=0.02)
    # two warm-up batches of 2, then 5 batches of 0.02 / 5 / 1e-4 = 40 calls each
    assert be.calls == [2, 2, 40, 40, 40, 40, 40]
    assert t.repeats == 5 and t.calls_per_sample == 40 and t.median_s == 1e-4
    assert set(seen) == {0, 1, 2}
    slow = FakeBackend(1.0)
    t = measure(slow, lambda i: None, 1, RepeatPolicy(1, 5, 100), 0.02)
    assert t.repeats == 5 and t.calls_per_sample == 1  # a slow call: one call per batch


@pytest.mark.parametrize("name, expected", [
    ("NVIDIA H200", "h200"),
    ("NVIDIA H100 80GB HBM3", "h100-sxm"),
    ("NVIDIA H100 PCIe", "h100-pcie"),
    ("NVIDIA H100 NVL", None),
    ("NVIDIA H200 MIG 3g.71gb", None),
    ("NVIDIA H100 80GB HBM3 MIG 1g.10gb", None),
    ("NVIDIA A100-SXM4-80GB", "a100-80"),
    ("NVIDIA A100-SXM4-40GB", "a100-40"),
    ("NVIDIA A100 80GB PCIe", "a100-pcie"),
    ("NVIDIA L40S", "l40s"),
    ("NVIDIA L4", "l4"),
    ("NVIDIA A10", "a10"),
    ("NVIDIA GeForce RTX 4090", "rtx-4090"),
    ("NVIDIA B200", "b200"),
    ("NVIDIA B300 SXM6 AC", "b300"),
    ("NVIDIA GB200", "gb200"),  # contains "B200": the Grace-Blackwell bin must win
    ("NVIDIA GB300", "gb300"),
    ("NVIDIA H20", "h20"),
    ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "rtx-pro-6000"),
    ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", None),  # other clocks and bandwidth
    ("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", None),
    ("AMD Instinct MI300X", "mi300x"),
    ("AMD Instinct MI325X", "mi325x"),
    ("AMD Instinct MI355X", "mi355x"),
    ("AMD Instinct MI350X", None),
    ("Tesla V100-SXM2-16GB", None),
    ("NVIDIA GH200 480GB", None),
    ("NVIDIA H200 NVL", None),
])
def test_identify_gpu(name, expected):
    assert identify_gpu(name) == expected


def test_catalog_reads_models_and_datasheets():
    models = load_models()
    assert "qwen3-8b" in models
    m = model("qwen3-8b")
    assert (m.hidden_size, m.intermediate_size, m.vocab_size, m.head_dim) == (4096, 12288, 151936, 128)
    assert [s.name for s in m.gemm_shapes()] == ["hidden x hidden", "hidden x intermediate", "hidden x vocab"]
    tiny = m.scaled_down(32)
    assert (tiny.hidden_size, tiny.num_hidden_layers) == (128, 36)
    assert datasheet("h200").hbm_bandwidth_bytes_per_s == 4.8e12
    with pytest.raises(CatalogError, match="not in sim/data/gpus.json"):
        datasheet("h300")


def test_plans():
    all_models = tuple(load_models())
    catalog = load_models()
    full_models = make_plan("cupy", False, None, all_models).models
    assert full_models[0] == "qwen3-8b"  # the model the profile is mostly used for, not the first by name
    assert not any(catalog[m].moe or catalog[m].mla or catalog[m].recurrent for m in full_models)
    assert set(full_models) == {m for m in all_models if not (catalog[m].moe or catalog[m].mla or catalog[m].recurrent)}
    assert catalog["nemotron-nano-9b-v2"].recurrent and not catalog["qwen3-8b"].recurrent
    assert make_plan("cupy", True, None, all_models).models == ("qwen3-8b",)
    assert make_plan("numpy", False, None, all_models).width_divisor == 32
    full = full_plan(all_models)
    assert full.gemm_tokens[:16] == tuple(range(1, 17)) and full.gemm_tokens[-1] == 16384  # dense small end
    assert full.attention_models[0] == "qwen3-8b" and not full.eager_overhead
    assert full.budget_s < 300 and quick_plan(("qwen3-8b",)).budget_s < 60


def test_projection_shapes_are_the_engine_fused_gemms():
    shapes = {s.name: (s.k, s.n) for s in model("qwen3-8b").projection_shapes()}
    assert shapes == {"qkv": (4096, 6144), "o": (4096, 4096), "gate_up": (4096, 24576), "down": (12288, 4096),
                      "lm_head": (4096, 151936)}
    q32 = {s.name: (s.k, s.n) for s in model("qwen3-32b").projection_shapes()}
    assert q32["o"] == (64 * 128, 5120)  # q_heads x head_dim differs from hidden in Qwen3-32B
    assert load_models()["deepseek-v3"].mla and load_models()["mixtral-8x7b"].moe


def test_progress_bar_without_a_terminal():
    out = io.StringIO()
    p = Progress(20, stream=out)
    for i in range(20):
        p.advance(f"step {i}")
    p.close()
    lines = out.getvalue().splitlines()
    assert 2 <= len(lines) <= 11  # one line per tenth, not one per step
    assert "100%" in lines[-1] and lines[-1].startswith("[" + "#" * 30 + "]")
