"""The grid of Scenario configurations that CPython and Pyodide must evaluate identically.

Every catalog model is paired with every catalog GPU (23 x 19 = 437 pairs today); the other
choices rotate along the pairs with strides that are co-prime to each choice's count, so each
allocation, engine, tensor-parallel size, dtype, prompt length and profile meets many different
models and GPUs. A few extra cases cover the optional fields, a pasted config.json and input
errors (the error path must also be identical). Deterministic: no random numbers.
"""

from __future__ import annotations

from itertools import product

from kvlab.sim import gpu_ids, model_ids, profile_names
from kvlab.sim.catalog import model_entry
from kvlab.sim.scenario import ALLOCATIONS, ENGINES, TP_SIZES
from kvlab.sim.units import KV_DTYPES, WEIGHT_DTYPES

PROMPTS_TOKENS = (128, 4096, 32768, 131072)
OUTPUTS_TOKENS = (16, 256, 1024)
CONCURRENCIES = (1, 32, 256)


def _pick(choices, i: int, stride: int):
    return choices[(i * stride) % len(choices)]


def scenarios() -> list[dict]:
    """Keyword arguments for `sim.Scenario`, one dict per configuration, in a fixed order."""
    out: list[dict] = []
    profiles = profile_names()
    for i, (model, gpu) in enumerate(product(model_ids(), gpu_ids())):
        out.append(dict(
            model=model, gpu=gpu,
            allocation=_pick(ALLOCATIONS, i, 1),
            engine=_pick(ENGINES, i, 1),
            tp=_pick(TP_SIZES, i, 3),
            kv_dtype=_pick(KV_DTYPES, i, 7),
            weight_dtype=_pick(WEIGHT_DTYPES, i, 3),
            prompt_tokens=_pick(PROMPTS_TOKENS, i, 7),
            output_tokens=_pick(OUTPUTS_TOKENS, i, 2),
            concurrency=_pick(CONCURRENCIES, i, 5),
            force_mha=i % 13 == 0,
            profile=_pick(profiles, i, 1),
        ))
    qwen = model_entry("qwen3-8b")["config"]
    out += [
        dict(model="qwen3-32b", gpu="h100-sxm", gpu_memory_utilization=0.72),  # weights do not fit
        dict(model="qwen3-8b", gpu="h100-sxm", gpu_memory_gib=24.0, dollars_per_gpu_hour=2.5),
        dict(model="qwen3-8b", engine="vllm", max_model_len=40960, block_size_tokens=32, allocation="paged"),
        dict(model="qwen3-8b", engine="sglang", mem_fraction_static=0.8, max_num_seqs=8, max_num_batched_tokens=8192),
        dict(model="qwen3-32b", engine="tensorrt-llm", kv_cache_free_gpu_mem_fraction=0.8, kv_cache_max_tokens=50_000, tp=2),
        dict(model="gemma-2-9b", allocation="paged", prompt_tokens=8000, output_tokens=3000),  # sliding-window layers
        dict(model="deepseek-v3", gpu="h200", tp=8, weight_dtype="fp8", kv_dtype="fp8"),  # MLA + MoE
        dict(model="qwen3-32b", gpu="b200", weight_dtype="nvfp4", prompt_tokens=8192),  # FP4 tensor cores
        dict(model="llama-3.1-8b", gpu="b200", kv_dtype="nvfp4", engine="sglang"),  # an FP4 cache
        dict(model="nemotron-nano-9b-v2", gpu="h100-sxm", engine="vllm", tp=2, prompt_tokens=32768),  # Mamba-2 state
        dict(model="deepseek-v3.2-exp", gpu="h200", tp=8, weight_dtype="fp8", kv_dtype="fp8", prompt_tokens=65536),  # DSA
        dict(config={**qwen, "num_key_value_heads": 4, "_name_or_path": "pasted"}, gpu="a100-80"),
        dict(prompt_tokens=0),  # input errors: the messages must match too
        dict(tp=3, kv_dtype="fp4"),
        dict(model="no-such-model"),
        dict(gpu_memory_utilization=1.5, concurrency=2.5),
    ]
    return out
