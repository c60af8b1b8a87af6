"""Every fixed point of design.md section 2 (seed 002's panel), with its stated tolerances:
sequence counts exact; bytes per token and parameter counts to 3 significant figures; pools
within 0.3 GiB; times and throughputs within 3%."""

import pytest
from kvlab.sim import Scenario, evaluate
from kvlab.sim.units import GIB, KIB, MIB

POOL_TOL_GIB = 0.3
REL = 0.03


def run(**kw):
    r = evaluate(Scenario(**kw))
    assert r.ok, r.errors
    return r


def sig3(x):
    return float(f"{x:.3g}")


def test_qwen3_8b_bytes_params_weights_pool():
    r = run(model="qwen3-8b")
    assert r.kv_bytes_per_token == 147_456 == 144 * KIB
    assert sig3(r.params_total) == 8.19e9
    assert r.weight_bytes / GIB == pytest.approx(15.3, abs=0.05)
    assert abs(r.kv_pool_bytes / GIB - 55.7) <= POOL_TOL_GIB


def test_activation_reserve_in_design_range():
    for model in ("qwen3-8b", "qwen3-14b", "qwen3-32b"):
        reserve = run(model=model).activation_reserve_bytes / GIB
        assert 1.0 <= round(reserve, 2) <= 1.2, (model, reserve)


def test_qwen3_8b_4k():
    r = run(model="qwen3-8b", prompt_tokens=4096)
    assert (r.max_sequences, r.batch) == (93, 32)
    assert r.decode_tokens_per_s == pytest.approx(2300, rel=REL)


def test_qwen3_8b_32k():
    r = run(model="qwen3-8b", prompt_tokens=32768)
    assert r.max_sequences == 12
    assert r.decode_step_s == pytest.approx(27.9e-3, rel=REL)
    assert r.decode_tokens_per_s == pytest.approx(430, rel=REL)


def test_qwen3_8b_32k_fp8_kv_doubles_sequences_same_step():
    bf16 = run(model="qwen3-8b", prompt_tokens=32768)
    r = run(model="qwen3-8b", prompt_tokens=32768, kv_dtype="fp8")
    assert r.max_sequences == 24
    assert r.decode_step_s == pytest.approx(27.9e-3, rel=REL)
    assert r.decode_step_s == pytest.approx(bf16.decode_step_s, rel=1e-9)
    assert r.decode_tokens_per_s == pytest.approx(860, rel=REL)


def test_qwen3_8b_4k_fp8_kv_pool_not_full():
    bf16 = run(model="qwen3-8b", prompt_tokens=4096)
    r = run(model="qwen3-8b", prompt_tokens=4096, kv_dtype="fp8")
    assert r.batch == 32
    assert r.decode_step_s < bf16.decode_step_s
    assert 1.0 < r.decode_tokens_per_s / bf16.decode_tokens_per_s < 2.0


def test_qwen3_32b_one_sequence_at_32k():
    r = run(model="qwen3-32b", prompt_tokens=32768)
    assert r.weight_bytes / GIB == pytest.approx(61, abs=0.5)
    assert abs(r.kv_pool_bytes / GIB - 10) <= 0.5  # "about 10 GiB left"
    assert r.kv_bytes_per_sequence / GIB == pytest.approx(8, abs=0.1)  # "about 8 GiB"
    assert r.max_sequences == 1


def test_qwen3_32b_weights_do_not_fit_at_072():
    r = run(model="qwen3-32b", gpu_memory_utilization=0.72)
    assert r.max_sequences == 0 and r.batch == 0
    assert r.itl_s is None
    assert any("weights need 61.02 GiB but only 57.60 GiB is usable" in w for w in r.warnings)


def test_short_prompt_prefill_is_memory_bound():
    r = run(model="qwen3-8b", prompt_tokens=128)
    assert r.prefill_bound == "memory"


def test_qwen3_14b_short_requests_decode_compute_bound():
    r = run(model="qwen3-14b", prompt_tokens=128, output_tokens=16, concurrency=256)
    assert r.batch == 256
    assert r.decode_bound == "compute"
    assert round(r.weight_share * 100) == 83


@pytest.mark.parametrize("gpu, ttft_ms, itl_ms", [("a100-80", 745, 46), ("h100-sxm", 235, 28)])
def test_qwen3_14b_ttft_itl(gpu, ttft_ms, itl_ms):
    r = run(model="qwen3-14b", prompt_tokens=4096, concurrency=64, gpu=gpu)
    assert r.ttft_s * 1e3 == pytest.approx(ttft_ms, rel=REL)
    assert r.itl_s * 1e3 == pytest.approx(itl_ms, rel=REL)


def test_a100_to_h100_ratios():
    a = run(model="qwen3-14b", concurrency=64, gpu="a100-80")
    h = run(model="qwen3-14b", concurrency=64, gpu="h100-sxm")
    assert a.ttft_s / h.ttft_s == pytest.approx(3.17, rel=REL)
    assert a.itl_s / h.itl_s == pytest.approx(1.64, rel=REL)


def test_h200_same_ttft_lower_itl_double_pool():
    h100 = run(model="qwen3-14b", concurrency=64, gpu="h100-sxm")
    h200 = run(model="qwen3-14b", concurrency=64, gpu="h200")
    assert h200.ttft_s == pytest.approx(h100.ttft_s, rel=1e-9)
    assert h200.itl_s < h100.itl_s
    assert h200.kv_pool_bytes > 2 * h100.kv_pool_bytes


def test_qwen3_8b_forced_mha():
    r = run(model="qwen3-8b", force_mha=True, prompt_tokens=4096)
    assert r.kv_bytes_per_token == 576 * KIB
    assert sig3(r.params_total) == 9.10e9
    assert r.max_sequences == 22


def test_qwen3_32b_forced_mha():
    r = run(model="qwen3-32b", force_mha=True, prompt_tokens=4096)
    assert r.kv_bytes_per_token == 2 * MIB
    assert r.max_sequences == 0


def test_fp8_weights_pools():
    for model, before, after, seqs in (("qwen3-8b", 55.7, 63.3, (93, 105)), ("qwen3-32b", 9.8, 40.3, None)):
        b = run(model=model, prompt_tokens=4096)
        a = run(model=model, prompt_tokens=4096, weight_dtype="fp8")
        assert abs(b.kv_pool_bytes / GIB - before) <= POOL_TOL_GIB
        assert abs(a.kv_pool_bytes / GIB - after) <= POOL_TOL_GIB
        if seqs:
            assert (b.max_sequences, a.max_sequences) == seqs


def test_fp8_everywhere_batching_ceiling():
    kw = dict(model="qwen3-8b", prompt_tokens=32768, weight_dtype="fp8", kv_dtype="fp8")
    small = run(concurrency=8, **kw)
    big = run(concurrency=256, **kw)
    assert (small.batch, big.batch) == (8, 27)
    assert big.decode_tokens_per_s / small.decode_tokens_per_s == pytest.approx(1.26, rel=REL)
    assert big.itl_s / small.itl_s == pytest.approx(2.7, rel=REL)
    assert round(small.weight_share * 100) == 30
    assert round(big.weight_share * 100) == 11


def test_qwen3_32b_declares_head_dim_128_not_hidden_over_heads():
    r = run(model="qwen3-32b")
    assert r.kv_bytes_per_token == 256 * KIB  # 5120 / 64 = 80 would give 160 KiB
