"""TensorRT-LLM's KV accounting (engine "tensorrt-llm"): the cache takes kv_cache_free_gpu_mem_fraction of
the memory FREE after the CUDA context, the weights and the warm-up, at most kv_cache_max_tokens tokens.
Fixed points are TensorRT-LLM's own logged figures (sources in sim/data/engine_rules.json)."""

import re

import pytest
from kvlab.sim import Scenario, engine_rules, evaluate, memory
from kvlab.sim import engine_defaults as ed
from kvlab.sim.catalog import gpu
from kvlab.sim.cli import main
from kvlab.sim.resolve import resolve
from kvlab.sim.units import GIB

TRT = dict(model="qwen3-8b", gpu="h100-sxm", engine="tensorrt-llm")


def test_defaults_are_the_llm_api_defaults_on_every_gpu():
    # BaseLlmArgs: max_num_tokens 8192, max_batch_size 2048; KvCacheConfig.free_gpu_memory_fraction 0.9.
    for gpu_id in ("h100-sxm", "a100-40", "l4"):
        lim = ed.resolve("tensorrt-llm", gpu(gpu_id), 1, None, None, None)
        assert (lim.max_num_batched_tokens, lim.max_num_seqs, lim.kv_cache_free_gpu_mem_fraction) == (8192, 2048, 0.9)
    lim = ed.resolve("tensorrt-llm", gpu("h100-sxm"), 1, 4096, 64, None, 0.5)
    assert (lim.max_num_batched_tokens, lim.max_num_seqs, lim.kv_cache_free_gpu_mem_fraction) == (4096, 64, 0.5)


@pytest.mark.parametrize(("available_gib", "fraction", "logged_gib"), [
    (70.48, 0.9, 63.44),  # TensorRT-LLM docs/source/reference/memory.md: "total: 79.10 GiB, available: 70.48 GiB"
    (17.83, 0.9, 16.05),  # issue 4275 (RTX 5090): "total: 31.84 GiB, available: 17.83 GiB"
    (63.62, 0.99, 62.99),  # trtllm-bench README (0.12, H100): "KV Memory Percentage: 99.0%"
])
def test_the_cache_is_the_fraction_of_the_available_memory_its_logs_print(available_gib, fraction, logged_gib):
    got = memory.trtllm_kv_cache_bytes(available_gib * GIB, fraction, None, 65_536) / GIB
    assert got == pytest.approx(logged_gib, abs=0.011)  # the logs round both figures to 0.01 GiB


def test_max_tokens_caps_the_cache_as_in_issue_6294():
    # "Both free_gpu_memory_fraction and max_tokens are set (to 0.8... and 860308 ...). The smaller value
    # will be used." then "Allocated 52.51 GiB for max tokens in paged KV cache (860320)" at 65,536 B a token.
    got = memory.trtllm_kv_cache_bytes(80 * GIB, 0.8, 860_308, 65_536)
    assert got == 860_308 * 65_536 and round(got / GIB, 2) == 52.51
    assert memory.trtllm_kv_cache_bytes(10 * GIB, 0.8, 860_308, 65_536) == 8 * GIB  # the fraction is smaller here


def test_budget_takes_the_fraction_of_what_the_warm_up_leaves_free():
    r = evaluate(Scenario(**TRT))
    free = r.capacity_bytes - r.startup_bytes - r.weight_bytes - r.activation_reserve_bytes
    assert r.startup_bytes == memory.CUDA_CONTEXT_BYTES and r.effective_kv_cache_free_gpu_mem_fraction == 0.9
    assert r.activation_reserve_bytes == memory.forward_activation_peak_bytes(resolve(Scenario(**TRT)).arch, 8192)
    assert 0 <= 0.9 * free - r.kv_pool_bytes < 16 * r.kv_bytes_per_token  # whole 16-token blocks
    # The other 10% of the free memory stays outside the budget with the CUDA context.
    assert r.context_reserve_bytes == pytest.approx(r.startup_bytes + 0.1 * free)


def test_ten_points_of_the_fraction_move_ten_percent_of_the_free_memory_not_of_the_card():
    hi, lo = evaluate(Scenario(**TRT, kv_cache_free_gpu_mem_fraction=0.9)), evaluate(Scenario(**TRT, kv_cache_free_gpu_mem_fraction=0.8))
    free = hi.capacity_bytes - hi.startup_bytes - hi.weight_bytes - hi.activation_reserve_bytes
    assert hi.kv_pool_bytes - lo.kv_pool_bytes == pytest.approx(0.1 * free, abs=32 * hi.kv_bytes_per_token)
    assert 0.1 * free < 0.1 * hi.capacity_bytes - 1 * GIB  # less than ten points of the card: the weights are not in it


def test_kv_cache_max_tokens_caps_the_pool_and_is_logged():
    r = evaluate(Scenario(**TRT, kv_cache_max_tokens=100_000))
    assert r.kv_pool_tokens == 100_000
    assert any(line.startswith("max_tokens=100,000 is provided.") for line in r.log)


def test_log_lines_match_tensorrt_llm_s_format():
    r = evaluate(Scenario(**TRT, block_size_tokens=32))
    log = "\n".join(r.log)
    assert re.search(r"Peak memory during memory usage profiling \(torch \+ non-torch\): [\d.]+ GiB .*available KV cache "
                     r"memory when calculating max tokens: [\d.]+ GiB, fraction is set 0\.9", log)
    assert "Number of tokens per block: 32." in log
    m = re.search(r"\[MemUsageChange\] Allocated ([\d.]+) GiB for max tokens in paged KV cache \(([\d,]+)\)\.", log)
    assert m and int(m[2].replace(",", "")) == r.kv_pool_tokens and float(m[1]) == round(r.kv_pool_bytes / GIB, 2)


def test_weights_that_leave_nothing_free_refuse_and_name_the_cause():
    r = evaluate(Scenario(**{**TRT, "model": "llama-3.1-70b"}))
    assert r.refusal["reason"] == "weights do not fit" and r.kv_pool_tokens == 0 and r.batch == 0
    assert any("whatever kv_cache_free_gpu_mem_fraction is" in w for w in r.warnings)


def test_the_fraction_is_validated_and_named():
    for bad in (1.0, 0.0, "0.9", float("nan")):
        r = evaluate(Scenario(**TRT, kv_cache_free_gpu_mem_fraction=bad))
        assert r.errors and r.errors[0]["field"] == "kv_cache_free_gpu_mem_fraction"
        assert "0.05" in r.errors[0]["message"] and "0.99" in r.errors[0]["message"]


def test_versions_and_sources_are_listed():
    assert engine_rules.rules("tensorrt-llm").version == "1.2"
    assert engine_rules.rules("tensorrt-llm", "0.16.0").mode == "TensorRT engine"
    assert engine_rules.rules("tensorrt-llm", "1.0").mode == "PyTorch"


def test_cli_reads_the_engine_and_its_fraction(capsys):
    assert main(["--engine", "tensorrt-llm", "--kv-cache-free-gpu-mem-fraction", "0.8"]) == 0
    out = capsys.readouterr().out
    assert "fraction is set 0.8," in out and "for max tokens in paged KV cache" in out
    assert main(["--engine", "tensorrt-llm", "--kv-cache-free-gpu-mem-fraction", "1"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == "kvlab: error: --kv-cache-free-gpu-mem-fraction: must be between 0.05 and 0.99, got 1"
