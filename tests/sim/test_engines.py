"""The vllm and sglang accounting modes and the defaults each engine picks for itself.

Expected values are the engines' own formulas applied by hand to catalog figures (the worked
examples in the docstrings of sim.memory and sim.engine_defaults), plus cross-checks against log
lines real engines printed, with the tolerance each discrepancy is explained by."""

import math
import re

import pytest
from kvlab.sim import Scenario, engine_rules, evaluate, memory
from kvlab.sim import engine_defaults as ed
from kvlab.sim.catalog import gpu
from kvlab.sim.evaluate import resolve_architecture
from kvlab.sim.units import GIB, MIB


def run(**kw):
    r = evaluate(Scenario(**kw))
    assert r.ok, r.errors
    return r


# ----- defaults --------------------------------------------------------------------------

@pytest.mark.parametrize(("gpu_id", "expected"), [
    ("h100-sxm", (8192, 1024)), ("h200", (8192, 1024)), ("b200", (8192, 1024)), ("mi300x", (8192, 1024)),
    ("h100-pcie", (8192, 1024)),
    ("a100-80", (2048, 256)),  # excluded by name although it has 79 GiB
    ("a100-40", (2048, 256)), ("l40s", (2048, 256)), ("l4", (2048, 256)), ("rtx-4090", (2048, 256)),
])
def test_vllm_batch_defaults_by_gpu(gpu_id, expected):
    assert ed.vllm_batch_defaults(gpu(gpu_id)) == expected
    r = run(engine="vllm", gpu=gpu_id, model="qwen3-0.6b", max_model_len=8192)
    assert (r.effective_max_num_batched_tokens, r.effective_max_num_seqs) == expected


def test_textbook_defaults_stay_the_seed_panel():
    r = run(engine="textbook", gpu="l4", model="qwen3-0.6b")
    assert (r.effective_max_num_batched_tokens, r.effective_max_num_seqs) == (2048, 1024)
    assert r.effective_mem_fraction_static is None


def test_user_limits_override_engine_defaults():
    r = run(engine="vllm", max_num_batched_tokens=4096, max_num_seqs=64, model="qwen3-8b")
    assert (r.effective_max_num_batched_tokens, r.effective_max_num_seqs) == (4096, 64)
    r = run(engine="sglang", mem_fraction_static=0.7, max_num_seqs=64, model="qwen3-8b")
    assert (r.effective_mem_fraction_static, r.effective_max_num_seqs) == (0.7, 64)


def test_sglang_default_fraction_worked_example_h100():
    # Docstring of sglang_mem_fraction_static: 512 + 12,288 + 512 + 128 = 13,440 MiB reserved.
    mib = gpu("h100-sxm").memory_reported_bytes / MIB
    assert ed.sglang_tier(mib, 1) == (8192, 256)
    assert ed.sglang_mem_fraction_static(mib, 1, 8192, 256) == round((mib - 13_440) / mib, 3) == 0.834
    assert run(engine="sglang").effective_mem_fraction_static == 0.834


@pytest.mark.parametrize(("gpu_id", "tp", "chunk", "graph_bs"), [
    ("l4", 1, 2048, 24), ("l4", 4, 2048, 80), ("rtx-4090", 1, 2048, 24),
    ("a100-40", 1, 4096, 32), ("l40s", 8, 4096, 160),
    ("a100-80", 1, 8192, 256), ("h100-sxm", 4, 8192, 512), ("h200", 2, 8192, 256),
    ("b200", 1, 16384, 512), ("mi300x", 8, 16384, 512),
])
def test_sglang_tiers(gpu_id, tp, chunk, graph_bs):
    assert ed.sglang_tier(ed.sglang_gpu_memory_mib(gpu(gpu_id)), tp) == (chunk, graph_bs)


def test_sglang_reserve_has_a_10_gib_floor_above_60_gib():
    # A 64 GiB card in the 8k tier: 512 + 12,288 + 512 + 128 = 13,440 > 10,240, no floor needed;
    # with a user chunk of 1024 the estimate (512 + 3,072 + 512 + 128) falls to the floor.
    mib = 64 * 1024
    assert ed.sglang_mem_fraction_static(mib, 1, 1024, 256) == round((mib - 10 * 1024) / mib, 3)
    small = 40 * 1024  # below 60 GiB: no floor
    assert ed.sglang_mem_fraction_static(small, 1, 1024, 32) == round((small - (512 + 3072 + 64 + 128)) / small, 3)


def test_sglang_max_running_requests_worked_example():
    assert ed.sglang_max_running_requests(370_000, 40_960) == 4096
    assert ed.sglang_max_running_requests(10_000, 131_072) == 2048
    assert ed.sglang_max_running_requests(600_000, 131_072) == int(600_000 / 131_072 * 512)


# ----- vllm ------------------------------------------------------------------------------

def test_vllm_activation_peak_worked_example():
    a = resolve_architecture(Scenario(model="qwen3-8b"))
    peak = memory.vllm_activation_peak_bytes(a, 8192, 1024)
    assert peak == 8192 * (2 * 4096 + 3 * 12288) * 2 + 1024 * 151_936 * 20
    assert round(peak / GIB, 2) == 3.59


def test_vllm_budget_follows_determine_available_memory():
    r = run(engine="vllm", model="qwen3-8b")
    h100 = gpu("h100-sxm")
    assert r.capacity_bytes == h100.memory_reported_bytes  # the driver's figure, not the nameplate
    assert r.usable_bytes == pytest.approx(0.90 * h100.memory_reported_bytes)
    available = r.usable_bytes - r.weight_bytes - r.non_torch_bytes - r.activation_reserve_bytes
    page = 16 * r.kv_bytes_per_token  # one block across all layers
    assert r.kv_num_blocks == int(available // page)
    assert r.kv_pool_tokens == 16 * r.kv_num_blocks
    assert r.kv_pool_bytes == r.kv_pool_tokens * r.kv_bytes_per_token <= available


def test_vllm_log_lines_match_the_engine_format():
    r = run(engine="vllm", model="qwen3-8b")
    text = "\n".join(r.log)
    size = re.search(r"^GPU KV cache size: ([\d,]+) tokens", text, re.M)
    conc = re.search(r"^Maximum concurrency for ([\d,]+) tokens per request: (\d+\.\d\d)x$", text, re.M)
    assert size and int(size.group(1).replace(",", "")) == r.kv_pool_tokens
    assert conc and int(conc.group(1).replace(",", "")) == 40_960  # Qwen3-8B's max_position_embeddings
    # vLLM: num_blocks / blocks one max_model_len request needs.
    assert float(conc.group(2)) == round(r.kv_num_blocks / math.ceil(40_960 / 16), 2)
    assert re.search(r"^Available KV cache memory: \d+\.\d\d GiB$", text, re.M)


def test_vllm_max_concurrency_with_sliding_windows_counts_only_the_window():
    r = run(engine="vllm", model="gemma-2-9b", prompt_tokens=2048, max_model_len=8192)
    # 21 global layers need 8192/16 blocks; 21 windowed ones min(4096 - 1 + 8192, 8192)/16 + 1.
    need = 21 * 512 + 21 * (512 + 1)
    assert r.max_concurrency == pytest.approx(r.kv_num_blocks * 42 / need)


def test_vllm_refuses_when_one_max_model_len_request_does_not_fit():
    r = run(engine="vllm", model="qwen3-32b")
    assert r.max_sequences == 0 and r.batch == 0 and r.itl_s is None
    assert r.vllm_longest_max_model_len is not None and r.vllm_longest_max_model_len < 40_960
    # The estimate is the longest length whose blocks fit the pool.
    assert math.ceil(r.vllm_longest_max_model_len / 16) <= r.kv_num_blocks < math.ceil((r.vllm_longest_max_model_len + 16) / 16)
    assert any("refuses to start" in w and f"{r.vllm_longest_max_model_len:,}" in w for w in r.warnings)
    served = run(engine="vllm", model="qwen3-32b", max_model_len=r.vllm_longest_max_model_len)
    assert served.max_sequences >= 1 and served.vllm_longest_max_model_len is None


def test_vllm_nccl_counts_inside_the_budget_once_ranks_communicate():
    one = run(engine="vllm", model="qwen3-8b")
    two = run(engine="vllm", model="qwen3-8b", tp=2)
    rules = engine_rules.rules("vllm")
    assert (one.non_torch_bytes, two.non_torch_bytes) == (rules.non_torch_bytes, rules.non_torch_tp_bytes)
    assert two.non_torch_bytes > one.non_torch_bytes


def test_vllm_versions_apply_their_profiling_rules():
    """V0 samples one row per dummy sequence after the forward pass (the larger of the two, 20
    bytes per logit); V1 from 0.8 (its default since 0.8.0) to 0.16 adds the sampler peak to the
    forward peak; 0.17+ take the larger of the two at 16 bytes. Qwen3-8B's 152k vocabulary makes
    the sampler term dominate."""
    v0, v9, v10, v19 = (run(engine="vllm", engine_version=v) for v in ("0.6.3", "0.9", "0.10", "0.19.0"))
    assert v19.activation_reserve_bytes < v0.activation_reserve_bytes < v10.activation_reserve_bytes
    assert v19.kv_pool_tokens > v0.kv_pool_tokens > v10.kv_pool_tokens
    assert v9.kv_pool_tokens == v10.kv_pool_tokens  # 0.8-0.9 run V1 by default
    assert v19.engine_version == "0.19" and run(engine="vllm").engine_version == engine_rules.rules("vllm").version
    bad = evaluate(Scenario(engine="vllm", engine_version="9.9"))
    assert not bad.ok and bad.errors[0]["field"] == "engine_version" and "0.19" in bad.errors[0]["message"]


def test_vllm_weights_match_a_logged_figure():
    # vLLM's memory profile of Meta-Llama-3-8B (same shapes as 3.1) on an H100 logged
    # "model weights take 14.96GiB" and "the current vLLM instance can use 71.29GiB" from a
    # 79.22 GiB total; the catalog's reported total for its H100 is 79.19 GiB (driver-dependent).
    r = run(engine="vllm", model="llama-3.1-8b", max_model_len=8192)
    assert round(r.weight_bytes / GIB, 2) == 14.96
    assert r.usable_bytes / GIB == pytest.approx(71.29, abs=0.05)


# ----- sglang ----------------------------------------------------------------------------

def test_sglang_pool_is_fraction_of_measured_total_minus_weights():
    r = run(engine="sglang", model="qwen3-8b", block_size_tokens=1)
    total = gpu("h100-sxm").memory_reported_bytes - memory.CUDA_CONTEXT_BYTES
    assert r.startup_bytes == memory.CUDA_CONTEXT_BYTES
    assert r.usable_bytes == pytest.approx(0.834 * total)
    assert r.kv_pool_tokens == int((0.834 * total - r.weight_bytes) // r.kv_bytes_per_token)
    assert r.activation_reserve_bytes == 0 and r.non_torch_bytes == 0


def test_sglang_log_lines():
    r = run(engine="sglang", model="qwen3-8b")
    text = "\n".join(r.log)
    assert re.search(rf"^KV Cache is allocated\. #tokens: {r.kv_pool_tokens:,}, K size: [\d.]+ GiB, V size: [\d.]+ GiB$", text, re.M)
    assert re.search(rf"^max_total_num_tokens={r.kv_pool_tokens:,}, chunked_prefill_size=8,192, "
                     rf"max_running_requests={r.effective_max_num_seqs:,}, context_len=40,960$", text, re.M)
    mla = run(engine="sglang", model="deepseek-v3", gpu="h200", tp=8, weight_dtype="fp8")
    assert any(line.startswith("KV Cache is allocated.") and "KV size:" in line for line in mla.log)


def test_sglang_matches_a_logged_pool_within_the_fp8_checkpoint_gap():
    # SGLang on 4 x H100, Qwen3-235B-A22B-FP8, --mem-fraction-static 0.93 logged
    # "KV Cache is allocated. #tokens: 367404" (vllm-project/vllm issue 21348). kvlab counts every
    # weight at 1 byte; the FP8 checkpoint keeps embeddings, lm_head and norms in BF16 (about
    # 0.3 GiB more per rank), so kvlab's pool is a few percent larger. 5% covers that gap.
    r = run(engine="sglang", model="qwen3-235b-a22b", tp=4, weight_dtype="fp8", mem_fraction_static=0.93)
    assert r.kv_pool_tokens == pytest.approx(367_404, rel=0.05)
    assert r.kv_pool_tokens > 367_404


def test_sglang_weights_do_not_fit_names_mem_fraction_static():
    r = run(engine="sglang", model="qwen3-32b", mem_fraction_static=0.6)
    assert r.batch == 0
    assert any("mem_fraction_static" in w and "Raise mem_fraction_static to at least 0.78" in w for w in r.warnings)


# ----- defaults across a memory threshold ----------------------------------------------------

def test_crossing_vllm_70_gib_threshold_can_shrink_the_pool():
    """A real effect, not a kvlab bug: above 70 GiB vLLM raises its own defaults to 8192 tokens
    and 1024 sequences, and the bigger profiling run costs more than the extra memory gives. The
    property tests therefore pin the limits when they compare memory sizes."""
    below = run(engine="vllm", model="qwen3-8b", gpu="h100-pcie", gpu_memory_gib=70.5, max_model_len=8192)
    above = run(engine="vllm", model="qwen3-8b", gpu="h100-pcie", gpu_memory_gib=71.5, max_model_len=8192)
    assert below.effective_max_num_seqs == 256 and above.effective_max_num_seqs == 1024
    assert above.kv_pool_bytes < below.kv_pool_bytes
    pinned = dict(engine="vllm", model="qwen3-8b", gpu="h100-pcie", max_model_len=8192, max_num_batched_tokens=2048, max_num_seqs=256)
    assert run(**pinned, gpu_memory_gib=71.5).kv_pool_bytes > run(**pinned, gpu_memory_gib=70.5).kv_pool_bytes


@pytest.mark.parametrize("prompt_tokens", [1, 100, 4096, 32768])
def test_textbook_concurrency_line_counts_whole_blocks_like_the_fit_count(prompt_tokens):
    # issue 14: at a 1-token prompt the panel said "1,491 fit" while the log said "1578.25x"
    r = evaluate(Scenario(prompt_tokens=prompt_tokens))
    assert int(r.max_concurrency) == r.max_sequences
    assert f"{r.max_concurrency:.2f}x" in next(line for line in r.log if line.startswith("Maximum concurrency"))


def test_sglang_reports_what_its_fraction_leaves_against_its_own_estimate():
    # SGLang's reserve for an H100 at tp 1 (server_args._handle_gpu_memory_settings): 512 + 1.5 x 8192 +
    # 2 x 256 + 1024 / 8 = 13,440 MiB; seed 001's eight RTX PRO 6000: 512 + 12,288 + 2 x 512 + 1024 = 14,848.
    h100 = run(engine="sglang", model="qwen3-32b")
    assert h100.engine_reserve_estimate_bytes == 13_440 * MIB
    case = dict(engine="sglang", model="kimi-k2", gpu="rtx-pro-6000", tp=8, weight_dtype="nvfp4")
    ran, tried = run(**case, mem_fraction_static=0.85), run(**case, mem_fraction_static=0.93)
    assert ran.engine_reserve_estimate_bytes == tried.engine_reserve_estimate_bytes == 14_848 * MIB
    for r, f in ((ran, 0.85), (tried, 0.93)):
        assert r.activation_room_bytes == pytest.approx((1 - f) * (r.capacity_bytes - r.startup_bytes))
        share = r.activation_room_bytes / r.engine_reserve_estimate_bytes
        assert any(line.startswith("SGLang sets its default fraction") and f"leaves {share:.0%} of it" in line for line in r.log)
    assert tried.activation_room_bytes < 0.5 * tried.engine_reserve_estimate_bytes < ran.activation_room_bytes
    assert run(engine="vllm").activation_room_bytes is None and run(engine="vllm").engine_reserve_estimate_bytes is None
