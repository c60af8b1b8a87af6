"""KV cache precisions and what each costs a token: FP8's scales are per tensor (vLLM keeps one
k_scale and one v_scale per layer), so nothing a token; NVFP4 carries one FP8 scale per 16 values
in every token (0.5625 bytes an element), and only engines that store such a cache, on NVIDIA's
FP4 GPUs, accept it. Fixed point: Llama-3.1-8B (32 layers, 8 KV heads of 128)."""

from __future__ import annotations

import pytest
from kvlab.sim import Scenario, evaluate
from kvlab.sim.engine_rules import rules
from kvlab.sim.units import DTYPE_BYTES, KV_DTYPES

LLAMA = dict(model="llama-3.1-8b", gpu="b200")


def test_llama_8b_bytes_per_token_fp8_against_nvfp4():
    fp8 = evaluate(Scenario(**LLAMA, kv_dtype="fp8"))
    nvfp4 = evaluate(Scenario(**LLAMA, kv_dtype="nvfp4"))
    assert fp8.ok and nvfp4.ok, (fp8.errors, nvfp4.errors)
    assert fp8.kv_bytes_per_token == 2 * 32 * 8 * 128 * 1 == 65_536  # per-tensor scales: nothing a token
    # 4-bit values and one FP8 scale per 16 of them: 2,048 elements a layer -> 1,024 + 128 bytes
    assert nvfp4.kv_bytes_per_token == 32 * (2 * 8 * 128 // 2 + 2 * 8 * 128 // 16) == 36_864
    assert DTYPE_BYTES["nvfp4"] == 0.5625 and "nvfp4" in KV_DTYPES
    assert nvfp4.max_sequences > 1.7 * fp8.max_sequences
    assert "0.5625 B" in nvfp4.kv_formula


def test_sglang_and_tensorrt_llm_store_an_fp4_cache_vllm_does_not_yet():
    assert evaluate(Scenario(**LLAMA, kv_dtype="nvfp4", engine="sglang")).ok
    trt = evaluate(Scenario(**LLAMA, kv_dtype="nvfp4", engine="tensorrt-llm"))
    assert trt.ok and trt.kv_bytes_per_token == 36_864, trt.errors
    assert rules("sglang").fp4_kv_cache and rules("textbook").fp4_kv_cache and rules("tensorrt-llm").fp4_kv_cache
    r = evaluate(Scenario(**LLAMA, kv_dtype="nvfp4", engine="vllm"))
    assert [e["field"] for e in r.errors] == ["kv_dtype"]
    assert "not a KV cache dtype of vllm 0.19" in r.errors[0]["message"] and "fp8" in r.errors[0]["message"]
    assert not any(rules("vllm", v).fp4_kv_cache for v in ("0.5", "0.10", "0.19"))


@pytest.mark.parametrize("gpu", ["h100-sxm", "h200", "a100-80", "mi355x"])
def test_a_gpu_without_nvidias_fp4_tensor_cores_refuses_an_fp4_cache(gpu):
    r = evaluate(Scenario(model="llama-3.1-8b", gpu=gpu, kv_dtype="nvfp4"))
    assert [e["field"] for e in r.errors] == ["kv_dtype"]
    assert "b200" in r.errors[0]["message"] and r.batch == 0

