"""Named starting points: the default lab, and the situations seeds 000, 001 and 004 describe.

The seeds' own hardware is not always in the catalog, so each preset recreates the *shape* of a
situation with catalog parts and says which figure it matches.
"""

from __future__ import annotations

from ..scenario import Scenario
from .config import Cluster, EngineConfig, KVManagement, Scheduling, Workload
from .workload import seed000_workload


def default() -> EngineConfig:
    """Qwen3-8B on one H100 under moderate Poisson load: finishes in well under a second."""
    return EngineConfig(
        scenario=Scenario(model="qwen3-8b", gpu="h100-sxm", engine="vllm", max_num_seqs=256, max_num_batched_tokens=2048),
        workload=Workload(arrival="poisson", rate_per_s=6.0, num_requests=600, seed=1),
        scheduling=Scheduling(policy="chunked"),
    )


def seed000(policy: str = "fcfs", cpu_costs: bool = True) -> EngineConfig:
    """Seed 000's deployment: a 70B model, tensor parallel over eight GPUs, a target of 64
    concurrent sequences, prompts with a median near 6k tokens and a tail past 30k, short outputs.

    `cpu_costs` switches on the profile's two CPU findings: tokenization on the request thread
    (1.5 us per token: a 30k-token prompt holds the thread for 45 ms) and a scheduler that
    rewrites every running sequence's block table on each admission.
    """
    return EngineConfig(
        scenario=Scenario(model="llama-3.1-70b", gpu="h100-sxm", tp=8, engine="vllm", max_num_seqs=64, max_num_batched_tokens=2048),
        workload=seed000_workload(rate_per_s=2.0, num_requests=2000, seed=0),  # ~90% of the shared queue's capacity
        scheduling=Scheduling(
            policy=policy,
            tokenize_s_per_token=1.5e-6 if cpu_costs else 0.0,
            tokenizer="request_thread" if cpu_costs else "worker_pool",
            block_table="full_recompute" if cpu_costs else "incremental",
        ),
        ttft_target_s=1.0,
        itl_target_s=0.1,
    )


def seed001(output_median_tokens: int = 3000) -> EngineConfig:
    """Seed 001's saturation: SGLang, 150 request slots, a KV pool of about 120k tokens (the seed's
    max_total_num_tokens was 116,171), long generations. Qwen3-8B on an H100 with
    mem_fraction_static 0.41 stands in for the seed's 8-GPU MLA deployment: what matters is the pool
    in tokens against the tokens each request holds."""
    return EngineConfig(
        scenario=Scenario(model="qwen3-8b", gpu="h100-sxm", engine="sglang", mem_fraction_static=0.41,
                          max_num_seqs=150, max_num_batched_tokens=8192),
        workload=Workload(arrival="closed", clients=150, num_requests=1500, seed=0,
                          prompt_dist="lognormal", prompt_tokens=400, prompt_min_tokens=32, prompt_max_tokens=4096, prompt_sigma=0.6,
                          output_dist="lognormal", output_tokens=output_median_tokens, output_min_tokens=64,
                          output_max_tokens=16384, output_sigma=0.5),
        scheduling=Scheduling(policy="chunked", admission="reserve", new_token_ratio=0.7),
        kv=KVManagement(preemption="recompute"),
        log_interval_s=10.0,
    )


def seed004(kv_dtype: str = "bf16", rate_per_s: float = 1.0) -> EngineConfig:
    """Seed 004's batching cliff: long contexts on one GPU, where the KV pool rather than compute
    caps the batch; sweep the rate to find the knee, then repeat with an FP8 cache."""
    return EngineConfig(
        scenario=Scenario(model="qwen3-8b", gpu="h100-sxm", engine="vllm", kv_dtype=kv_dtype,
                          max_num_seqs=256, max_num_batched_tokens=2048),
        workload=Workload(arrival="poisson", rate_per_s=rate_per_s, num_requests=800, seed=0,
                          prompt_dist="lognormal", prompt_tokens=6000, prompt_min_tokens=256, prompt_max_tokens=32768,
                          prompt_sigma=0.5, output_dist="lognormal", output_tokens=600, output_min_tokens=16,
                          output_max_tokens=4096, output_sigma=0.5),
        scheduling=Scheduling(policy="chunked"),
    )


def disaggregated(prefill: int = 1, decode: int = 1, base: EngineConfig | None = None) -> EngineConfig:
    base = base or default()
    return base.with_(cluster=Cluster(disaggregated=True, prefill_instances=prefill, decode_instances=decode))


def long_prompts_light() -> EngineConfig:
    """The long-prompt 70B deployment at light load (0.5 requests/s, about a quarter of the
    shared queue's capacity), CPU costs off: where the tail comes from the longest prompts'
    own prefill, and where chunked prefill is a trade rather than a win."""
    return seed000("fcfs", cpu_costs=False).with_(rate_per_s=0.5)


def prefix_rag() -> EngineConfig:
    """A retrieval-augmented chat shape: 90% of requests open with the same 2,000-token system
    prompt and retrieved-context template, prompts of about 2,400 tokens, short answers, 6
    requests/s on one H100. Toggle prefix caching to see what computing only the suffix buys."""
    return default().with_(prompt_dist="lognormal", prompt_tokens=2400, prompt_min_tokens=2100, prompt_max_tokens=8192,
                           prompt_sigma=0.3, output_dist="lognormal", output_tokens=150, output_min_tokens=16,
                           output_max_tokens=1024, output_sigma=0.5, prefix_tokens=2000, prefix_fraction=0.9,
                           prefix_groups=1, rate_per_s=6.0, num_requests=600)


def prefix_eviction() -> EngineConfig:
    """Many shared prefixes under eviction pressure: 400 distinct 2,000-token prefixes, a pool
    halved by gpu_memory_utilization 0.5, so cached prefixes are evicted before they are reused;
    set host_cache_gib to keep evicted blocks in host memory."""
    return prefix_rag().with_(prefix_groups=400, prefix_fraction=1.0, gpu_memory_utilization=0.5, num_requests=1500)


def disagg_1p1d() -> EngineConfig:
    """One prefill and one decode instance (two H100s) at 8 requests/s with a 15 ms ITL target:
    compare with two colocated replicas on the same two GPUs."""
    return disaggregated(1, 1, default().with_(rate_per_s=8.0)).with_(itl_target_s=0.015)


def preemption_demo() -> EngineConfig:
    """The saturated SGLang-shaped pool with vLLM-style watermark admission: requests are admitted
    while blocks are free, their answers then grow past the pool, and the engine preempts."""
    return seed001().with_(admission="watermark", num_requests=400)


def cliff_2x_hbm() -> EngineConfig:
    """The batching cliff's workload on an H100 with twice the memory (160 GiB) and the same
    bandwidth: a counterfactual that moves only the pool."""
    return seed004().with_(gpu_memory_gib=160.0)


PRESETS = {
    "default": default,
    "seed000-shared-queue": lambda: seed000("fcfs", cpu_costs=True),
    "seed000-lanes": lambda: seed000("lanes", cpu_costs=False),
    "seed000-chunked": lambda: seed000("chunked", cpu_costs=False),
    "seed001-saturation": seed001,
    "seed004-cliff": seed004,
    "seed004-cliff-fp8": lambda: seed004("fp8"),
    "long-prompts-light": long_prompts_light,
    "prefix-rag": prefix_rag,
    "prefix-eviction": prefix_eviction,
    "disagg-1p1d": disagg_1p1d,
    "preemption-demo": preemption_demo,
    "cliff-2x-hbm": cliff_2x_hbm,
}


def preset(name: str) -> EngineConfig:
    if name not in PRESETS:
        raise KeyError(f"unknown preset {name!r}; choose one of {', '.join(PRESETS)}")
    return PRESETS[name]()
