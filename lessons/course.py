"""The course: 24 lessons in five units, their order, and the seed ideas each one teaches.

`UNITS` is the plan (shared/curriculum.md); `CATALOG` gives each lesson's title, minutes and module
(`MODULES`: the lessons written so far). `IDEAS` lists the ideas of the five source documents by the lesson the plan assigns them to;
`untaught()` is every idea no written lesson claims (a test keeps that list honest: a lesson may
only claim ideas listed here).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import cache

from .content.model import Lesson, place_answers


@dataclass(frozen=True)
class CatalogEntry:
    title: str
    minutes: int | None  # None until the lesson is written
    module: str | None  # lessons/content/<module>.py


UNITS = (
    ("A", "The cache and the budget", ("A1", "A2", "A3", "A4", "A5", "A6")),
    ("B", "One step on the roofline", ("B1", "B2", "B3", "B4", "B5", "B6")),
    ("C", "Serving over time", ("C1", "C2", "C3", "C4")),
    ("D", "When the cache fills", ("D1", "D2", "D3", "D4")),
    ("E", "Levers and economics", ("E1", "E2", "E3", "E4")),
)
ORDER = tuple(code for _, _, codes in UNITS for code in codes)
CORE_PATH = ("A1", "A3", "A4", "A6", "B1", "B2", "B3", "C1", "C2", "C3", "D1", "E1")

# Every lesson of the plan: its title and, once written, its minutes and module. The course map,
# the lesson headers' links and the page titles read these, so no page has to build another lesson
# (building one runs its simulations: the 23 took 14 s for the landing page's map before).
CATALOG: dict[str, CatalogEntry] = {
    "A1": CatalogEntry("Why a KV cache, and what one token costs", 9, "a1_bytes_per_token"),
    "A2": CatalogEntry("Architecture sets the bill: MHA, GQA, MQA, MLA", 8, "a2_architecture"),
    "A3": CatalogEntry("HBM in fill order", 9, "a3_fill_order"),
    "A4": CatalogEntry("Spending the token budget: users x context", 8, "a4_token_budget"),
    "A5": CatalogEntry("Paging: stop wasting the pool", 8, "a5_paging"),
    "A6": CatalogEntry("FP8 KV or FP8 weights? Read the bar first", 10, "a6_fp8"),
    "B1": CatalogEntry("Prefill and decode on the roofline", 10, "b1_roofline"),
    "B2": CatalogEntry("The levers of TTFT and of ITL", 7, "b2_levers"),
    "B3": CatalogEntry("Batching and amortisation", 7, "b3_batching"),
    "B4": CatalogEntry("Tensor parallelism: split the bytes", 8, "b4_tensor_parallel"),
    "B5": CatalogEntry("Check it on a real system", 9, "b5_real_system"),
    "B6": CatalogEntry("Speculative decoding: when guessing pays", 9, "b6_speculative"),
    "C1": CatalogEntry("Latency is a distribution", 9, "c1_distribution"),
    "C2": CatalogEntry("Queues and the load knee", 10, "c2_knee"),
    "C3": CatalogEntry("Chunked prefill", 10, "c3_chunked"),
    "C4": CatalogEntry("Not the GPU: CPU-side costs", 7, "c4_cpu_costs"),
    "D1": CatalogEntry("Saturation: what sets the running count", 8, "d1_saturation"),
    "D2": CatalogEntry("mem_fraction_static: five points of memory", 10, "d2_mem_fraction"),
    "D3": CatalogEntry("Admission, eviction, preemption", 10, "d3_preemption"),
    "D4": CatalogEntry("Offloading to a host tier", 6, "d4_offload"),
    "E1": CatalogEntry("Prefix caching: compute only the suffix", 10, "e1_prefix"),
    "E2": CatalogEntry("Disaggregating prefill and decode is a sizing problem", 8, "e2_disaggregation"),
    "E3": CatalogEntry("Bytes per dollar", 8, "e3_cost"),
    "E4": CatalogEntry("Capstone: choose the lever", 10, "e4_capstone"),
}
MODULES = {code: e.module for code, e in CATALOG.items() if e.module is not None}

# id -> (source document, the idea, the lesson the plan assigns it to)
IDEAS = {
    "kv-why": ("002", "why engines cache keys and values", "A1"),
    "kv-formula": ("002", "bytes per token from config.json", "A1"),
    "kv-heads-not-q-heads": ("002", "KV heads, not query heads, set the cost", "A1"),
    "head-dim-trap": ("002", "head_dim from config.json, not hidden / heads", "A1"),
    "seed004-attention-heads-slip": ("004", "the attention-heads slip: tens of KB per token is wrong", "A1"),
    "mha-gqa-mqa": ("003", "MHA, GQA and MQA shrink the cache by sharing heads", "A2"),
    "mla-latent": ("003", "MLA caches one compressed latent per layer", "A2"),
    "weights-barely-change": ("002", "forcing MHA changes the cache far more than the weights", "A2"),
    "fill-order": ("002", "HBM fill order: fraction, weights, reserve, pool", "A3"),
    "util-oom": ("002", "worked at 0.90, out of memory at 0.85", "A3"),
    "max-num-seqs-myth": ("002", "max_num_seqs does not fix an out-of-memory start", "A3"),
    "token-budget": ("003", "the pool is a token budget: users x context", "A4"),
    "long-context-slower": ("003", "long context is also slower per token", "A4"),
    "fragmentation": ("003", "internal and external fragmentation of contiguous allocation", "A5"),
    "paged-attention": ("003", "paged attention allocates blocks as tokens arrive", "A5"),
    "max-len-reservation": ("003", "pre-paging engines reserved max_model_len per sequence", "A5"),
    "fp8-kv": ("004", "FP8 KV doubles capacity; throughput only where the pool binds", "A6"),
    "fp8-weights": ("002", "FP8 weights free memory and speed prefill", "A6"),
    "quantization-accuracy": ("003", "cache quantization costs some accuracy", "A6"),
    "int8-halves": ("003", "INT8 halves the cache like FP8", "A6"),
    "roofline": ("002", "arithmetic intensity against the ridge point", "B1"),
    "prefill-compute-bound": ("002", "prefill is compute-bound, decode memory-bound", "B1"),
    "n-squared": ("002", "the quadratic attention term of long prefills", "B1"),
    "short-prefill-memory-bound": ("002", "a short prefill is bound by the weight read", "B1"),
    "ttft-itl-levers": ("002", "TTFT follows compute, ITL follows bandwidth", "B2"),
    "gpu-choice": ("002", "H100 to H200: same TTFT, faster ITL, bigger pool", "B2"),
    "batching-amortises": ("002", "batching shares one weight read", "B3"),
    "batching-ceiling": ("002", "once the cache dominates, batching stops paying", "B3"),
    "decode-compute-bound": ("002", "decode turns compute-bound at large batch and short context", "B3"),
    "speculative-decoding": ("002", "speculative decoding checks drafted tokens with decode's idle arithmetic", "B6"),
    "speculative-acceptance": ("001", "a low acceptance rate makes speculative decoding worthless", "B6"),
    "tensor-parallel": ("002", "tensor parallelism splits weights and heads", "B4"),
    "allreduce-cost": ("002", "the all-reduce cost of tensor parallelism", "B4"),
    "kv-head-replication": ("002", "more ranks than KV heads replicates heads", "B4"),
    "vllm-log": ("002", "reading vLLM's boot and steady-state log lines", "B5"),
    "littles-law": ("002", "Little's law: concurrency = rate x time in system", "B5"),
    "preemption-alert": ("002", "preemptions appear only after trouble", "B5"),
    "flashattention-myth": ("002", "FlashAttention does not shrink the cache", "B5"),
    "dcgm-vs-smi": ("002", "DCGM vs nvidia-smi utilization", "B5"),
    "distribution-not-mean": ("000", "plot the distribution, not the mean", "C1"),
    "ttft-itl-tpot-goodput": ("000", "TTFT, ITL, TPOT and goodput", "C1"),
    "prefill-floor": ("000", "a long prompt's own prefill is a TTFT floor", "C1"),
    "load-knee": ("004", "latency explodes as arrivals reach capacity", "C2"),
    "pool-sets-capacity": ("004", "the KV pool decides where capacity is", "C2"),
    "knee-band": ("004", "the knee varies across random seeds", "C2"),
    "head-of-line": ("000", "a long prefill stalls every decode behind it", "C3"),
    "chunked-prefill-trade": ("000", "chunked prefill bounds the stall and costs typical ITL", "C3"),
    "lanes": ("000", "separate lanes with decode priority", "C3"),
    "tokenizer-thread": ("000", "tokenization on the request thread", "C4"),
    "block-table-quadratic": ("000", "quadratic block-table rebuilds", "C4"),
    "benchmark-concurrency": ("000", "benchmarks at low concurrency miss CPU costs", "C4"),
    "saturation": ("001", "running requests capped by the pool, not max_running_requests", "D1"),
    "sglang-log": ("001", "reading SGLang's token usage and queue lines", "D1"),
    "generation-vs-effective": ("001", "generation vs effective throughput", "D1"),
    "mem-fraction-static": ("001", "SGLang's pool is f x total - weights", "D2"),
    "mem-fraction-oom": ("001", "why a high mem_fraction_static runs out of memory", "D2"),
    "mla-per-gpu": ("001", "under tensor parallelism every GPU holds every token's MLA latent", "D2"),
    "admission-watermark": ("003", "watermark vs reserve admission", "D3"),
    "preemption-recompute-swap": ("003", "recompute vs swap preemption", "D3"),
    "eviction": ("003", "evicting cached blocks under pressure", "D3"),
    "offload-host-tier": ("003", "a host-memory tier adds capacity, not speed", "D4"),
    "hierarchical-cache": ("001", "SGLang's hierarchical cache", "D4"),
    "prefix-caching": ("003", "prefix caching computes only the suffix", "E1"),
    "prompt-design-prefix": ("004", "design prompts for shared prefixes", "E1"),
    "prefix-economics": ("004", "prefix caching as economics", "E1"),
    "disaggregation": ("003", "disaggregated prefill and decode", "E2"),
    "kv-transfer": ("003", "the cost of moving KV between instances", "E2"),
    "bytes-per-dollar": ("004", "cost per token follows bytes", "E3"),
    "context-drives-cost": ("004", "context length drives cost", "E3"),
    "choose-lever": ("all", "diagnose, then choose one lever", "E4"),
}


@cache
def lesson(code: str) -> Lesson:
    """The built lesson (every figure computed now, once per process), its right answers placed in
    turn (each lesson starts two places on from the one before, about two questions a lesson)."""
    module = importlib.import_module(f"kvlab.lessons.content.{MODULES[code]}")
    return place_answers(module.build(), first=2 * ORDER.index(code))


def written() -> tuple[str, ...]:
    return tuple(c for c in ORDER if c in MODULES)


def title(code: str) -> str:
    return CATALOG[code].title


def header(code: str) -> dict:
    """The fields a lesson takes from the catalog (its module passes them to Lesson)."""
    entry = CATALOG[code]
    return {"code": code, "slug": slug(code), "title": entry.title, "minutes": entry.minutes}


def next_code(code: str) -> str | None:
    """The next written lesson in course order."""
    later = [c for c in ORDER[ORDER.index(code) + 1:] if c in MODULES]
    return later[0] if later else None


def untaught() -> list[str]:
    taught = {i for c in written() for i in lesson(c).ideas}
    return [i for i in IDEAS if i not in taught]


def slug(code: str) -> str:
    return f"lesson_{code.lower()}"
