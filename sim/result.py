"""The one structured result of a steady-state evaluation (`sim.evaluate`): what views, lessons,
the command line and the browser bridge read."""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from functools import cached_property


@dataclass(frozen=True)
class Result:
    """Everything one evaluation computes. SI units (bytes, seconds, FLOP/s) unless named
    otherwise; figures that do not exist for this scenario (ITL when nothing fits) are None."""

    scenario: dict
    # Whether anything runs. None when requests run; otherwise {"reason": a few words, "message": a
    # sentence}: the weights leave no KV pool, vLLM refuses to start, the request is longer than
    # the model's context, or not one sequence fits. A refused result has batch 0 and no ITL, TTFT
    # or throughput (None / 0): views show the reason instead of a number (sim owns the verdict).
    refusal: dict | None = None
    model_name: str = ""
    gpu_name: str = ""  # the card's name as the catalog writes it ("NVIDIA H100 SXM")
    context_tokens: int = 0  # the model's context (max_position_embeddings)
    attention_kind: str = ""
    model_family: str = ""  # "dense", "moe" or "mla" (sim.resolve.family_of): which validation figures apply
    kv_bytes_per_token: float = 0.0
    # A hybrid model's recurrent state per sequence on one rank (linear-attention layers): the
    # same at every length, and part of kv_bytes_per_sequence. 0 for a model without such layers.
    state_bytes_per_sequence: float = 0.0
    # Speculative decoding (sim.speculative), when the scenario names a draft model: its name, its
    # weights (part of weight_bytes) and cache per sequence (part of kv_bytes_per_sequence), the
    # tokens a step yields per sequence, the draft's and the verify step's times, and the ITL
    # without a draft over the ITL with it (below 1: it costs more than it buys). None without a draft.
    spec_draft_name: str = ""
    spec_draft_weight_bytes: float = 0.0
    spec_draft_kv_bytes_per_sequence: float = 0.0
    spec_tokens_per_step: float | None = None
    spec_draft_s: float | None = None
    spec_verify_s: float | None = None
    spec_speedup: float | None = None
    params_total: int = 0
    params_active: int = 0
    capacity_bytes: float = 0.0
    usable_bytes: float = 0.0
    context_reserve_bytes: float = 0.0
    weight_bytes: float = 0.0
    non_torch_bytes: float = 0.0
    activation_reserve_bytes: float = 0.0
    kv_pool_bytes: float = 0.0
    kv_pool_tokens: int = 0
    kv_bytes_per_sequence: float = 0.0
    kv_pool_used_bytes: float = 0.0
    kv_pool_free_bytes: float = 0.0  # the pool left after the batch's sequences
    max_sequences: int = 0
    batch: int = 0
    batch_limited_by: str = ""
    max_concurrency: float = 0.0  # pool / one max_model_len request (vLLM's "Maximum concurrency")
    max_concurrency_tokens: int = 0  # the max_model_len used for max_concurrency
    startup_bytes: float = 0.0  # sglang: CUDA context + NCCL before SGLang measures its total
    kv_num_blocks: int = 0  # vllm: KV blocks of block_size_tokens (num_gpu_blocks)
    effective_max_num_batched_tokens: int = 0  # the limits used: the user's, or the engine's default
    effective_max_num_seqs: int = 0
    effective_mem_fraction_static: float | None = None  # sglang only
    # sglang only: the 1 - f share of its measured total, left for activations and CUDA graphs, and SGLang's
    # own estimate of what they need (engine_defaults.sglang_reserve_estimate_bytes)
    activation_room_bytes: float | None = None
    engine_reserve_estimate_bytes: float | None = None
    effective_kv_cache_free_gpu_mem_fraction: float | None = None  # tensorrt-llm only
    vllm_longest_max_model_len: int | None = None  # set when vLLM would refuse to start: the longest that fits
    decode_step_s: float | None = None  # GPU time of one decode step
    itl_s: float | None = None  # decode_step_s + the engine's CPU time per step (cpu_step_s)
    decode_weight_read_s: float | None = None
    decode_kv_read_s: float | None = None
    decode_compute_s: float | None = None
    decode_allreduce_s: float | None = None
    decode_overhead_s: float | None = None
    decode_bytes: float | None = None
    decode_flops: float | None = None
    decode_flops_per_s: float | None = None  # decode_flops over the step's GPU time: its point on the roofline
    decode_arithmetic_intensity: float | None = None
    decode_tokens_per_s: float = 0.0
    per_stream_tokens_per_s: float = 0.0
    weight_share: float | None = None
    decode_bound: str | None = None
    tensor_duty: float | None = None
    experts_touched_per_layer: float | None = None
    ttft_s: float | None = None
    prefill_weight_read_s: float | None = None
    prefill_kv_read_s: float | None = None  # a chunked prefill's later passes read the earlier passes' cache
    prefill_compute_s: float | None = None
    prefill_allreduce_s: float | None = None
    prefill_overhead_s: float | None = None
    prefill_flops: float | None = None
    prefill_flops_per_s: float | None = None  # prefill_flops over ttft_s: its point on the roofline
    prefill_tensor_duty: float | None = None  # prefill_compute_s over ttft_s
    prefill_bytes: float | None = None
    prefill_arithmetic_intensity: float | None = None
    prefill_bound: str | None = None
    ridge_intensity: float = 0.0
    hbm_bandwidth_achieved_bytes_per_s: float = 0.0  # the roofline's memory roof: HBM bandwidth x the profile's bandwidth_efficiency
    achieved_peak_flops: float = 0.0  # the roofline's flat roof: peak_flops x the profile's large-GEMM efficiency
    datasheet_ridge_intensity: float = 0.0  # peak_flops / hbm_bandwidth_bytes_per_s: the ridge of the datasheet's roofline
    peak_flops: float = 0.0
    hbm_bandwidth_bytes_per_s: float = 0.0
    decode_dollars_per_million_tokens: float | None = None  # price / decode_tokens_per_s: decode steps only
    served_dollars_per_million_tokens: float | None = None  # price / served_tokens_per_s: all GPU time, prefills too
    dollars_per_sequence_hour: float | None = None  # the GPUs' price an hour over max_sequences: holding one resident
    profile: str = ""
    # Step model and engine rules (issue 11). Kernel lists: one dict per kernel kind with kind,
    # bytes, flops, memory_s, compute_s, time_s, bound (roofline.KernelCost), so views read the
    # parts instead of recomputing them.
    step_model: str = ""  # "whole_step" (textbook) or "per_kernel"
    engine_version: str = ""
    cpu_step_s: float = 0.0  # host time per decode step (sampling, scheduling, sync): engine rule
    # Served latency: what a benchmark client measures. served_ttft_s = ttft_frontend_s +
    # ttft_queue_s + ttft_prefill_s; served_itl_s adds the other requests' prefills that run
    # between this request's tokens; served_tokens_per_s is the steady closed-loop output rate.
    ttft_frontend_s: float = 0.0
    ttft_queue_s: float | None = None
    ttft_prefill_s: float | None = None
    served_ttft_s: float | None = None
    served_itl_s: float | None = None
    served_tokens_per_s: float = 0.0
    prefill_in_batch_s: float | None = None  # marginal cost of one prompt's prefill inside the running batch
    # What each GPU holds under the scenario's parallelism (sim.parallelism.rank_holds): heads,
    # share of the requests and their cache, experts whole or sliced. None when not evaluated.
    rank_holds: dict | None = None
    warnings: list[str] = field(default_factory=list)
    errors: list[dict] = field(default_factory=list)

    # Figures built when first read, not on every slider move (evaluate stores how to build them
    # in "_<name>_builder"); all of them are in to_dict(). The engine-style log and the KV formula
    # are text for people; the kernel lists (one dict per kernel kind: kind, bytes, flops,
    # memory_s, compute_s, time_s, bound -- roofline.KernelCost) and the static-batch prefill
    # (batch prompts prefilled together, seconds) are for views that show them.
    LAZY = ("log", "kv_formula", "decode_kernels", "prefill_kernels", "batch_prefill_s")

    def _built(self, name: str, empty):
        build = self.__dict__.get(f"_{name}_builder")
        return build() if build is not None else empty

    @cached_property
    def log(self) -> list[str]:
        return self._built("log", [])

    @cached_property
    def kv_formula(self) -> str:
        return self._built("kv_formula", "")

    @cached_property
    def decode_kernels(self) -> list[dict]:
        return self._built("decode_kernels", [])

    @cached_property
    def prefill_kernels(self) -> list[dict]:
        return self._built("prefill_kernels", [])

    @cached_property
    def batch_prefill_s(self) -> float | None:
        return self._built("batch_prefill_s", None)

    @property
    def ok(self) -> bool:
        return not self.errors

    def to_dict(self) -> dict:
        """A JSON-able dict of every field. Copies the containers (so callers may edit the dict)
        without dataclasses.asdict's recursive deep copy, which costs three evaluations."""
        d = {k: v for k, v in self.__dict__.items() if k[0] != "_"}
        d["scenario"] = dict(self.scenario)
        d["log"], d["warnings"] = list(self.log), list(self.warnings)
        d["errors"] = [dict(e) for e in self.errors]
        d["refusal"] = dict(self.refusal) if self.refusal is not None else None
        d["kv_formula"], d["batch_prefill_s"] = self.kv_formula, self.batch_prefill_s
        d["decode_kernels"] = [dict(k) for k in self.decode_kernels]
        d["prefill_kernels"] = [dict(k) for k in self.prefill_kernels]
        return d


RESULT_DEFAULTS = {f.name: f.default for f in fields(Result) if f.default is not MISSING}


def make_result(values: dict) -> Result:
    """The Result whose fields are `values`, for the hot path: `values` must hold every field
    (start from a copy of RESULT_DEFAULTS or of a setup's result_base, then set the rest). A
    frozen dataclass's __init__ sets each of its ~65 fields through object.__setattr__, a quarter
    of a whole evaluation; giving the instance `values` as its dict yields the same object, still
    frozen, without copying them again. A key that is not a field would become a stray attribute:
    tests/sim/test_properties.py checks that to_dict() equals dataclasses.asdict() plus the two
    lazy texts for every result."""
    obj = object.__new__(Result)
    object.__setattr__(obj, "__dict__", values)
    return obj

