"""From an EngineConfig to the fixed quantities a run needs: the roofline clock, the KV pool in
blocks, swap and host-cache sizes, link bandwidths -- all read off `sim` (evaluate for the HBM
budget and the hardware model, resolve.machine_for, for step times and links), never re-derived here.

Problems come back as `Issue`s naming the field and the allowed range, including the one a
time-domain run adds: the longest request must fit in the pool on its own, or it would wait forever.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InputError, Issue
from ..evaluate import evaluate
from ..resolve import machine_for, validated
from ..resolve import setup as sim_setup
from ..result import Result
from ..units import GB, GIB
from .blocks import blocks_for
from .clock import SpecDecode, StepClock
from .config import EngineConfig


@dataclass(frozen=True)
class Setup:
    config: EngineConfig
    evaluation: Result
    clock: StepClock
    block_size: int
    num_gpu_blocks: int
    swap_blocks: int
    host_cache_blocks: int
    host_link_bytes_per_s: float
    kv_transfer_bytes_per_s: float
    gpus_per_instance: int
    max_num_seqs: int  # the scheduler limits in force: the user's, or the engine's own default
    max_num_batched_tokens: int
    # The engine rule's front end (HTTP, tokenization, admission) before a request reaches the
    # scheduler: evaluate()'s ttft_frontend_s, the same figure its served TTFT adds.
    frontend_s: float = 0.0

    @property
    def pool_tokens(self) -> int:
        return self.num_gpu_blocks * self.block_size

    @property
    def block_bytes(self) -> float:
        return self.block_size * self.clock.kv_bytes_per_token


def engine_scenario(config: EngineConfig):
    """The Scenario whose HBM budget the engine uses: paged allocation, as every engine modelled
    here allocates blocks on demand. Unset scheduler limits resolve to the engine's defaults
    (sim.engine_defaults) and come back in the evaluation's effective_* fields."""
    return config.scenario.with_(allocation="paged")


def build(config: EngineConfig) -> tuple[Setup | None, list[Issue], list[str]]:
    s = engine_scenario(config)
    if s.pp > 1:
        # A pipeline keeps pp micro-batches in flight; the engine's steps are whole-model steps.
        return None, [Issue("pp", "pipeline parallelism is modelled by the steady-state evaluation only, not by the "
                                  "time-domain engine; set it to 1 here")], []
    r = evaluate(s)
    if r.errors:
        return None, [Issue(e["field"], e["message"]) for e in r.errors], list(r.warnings)
    issues = []
    max_tokens, max_seqs = r.effective_max_num_batched_tokens, r.effective_max_num_seqs
    if max_tokens < max_seqs:
        # vLLM refuses this too: every running sequence must be able to decode in one step.
        issues.append(Issue("max_num_batched_tokens", f"must be at least max_num_seqs ({max_seqs:,}) so that every running "
                                                      f"sequence can decode in one step; got {max_tokens:,}"))
    bs = s.block_size_tokens
    # The draft evaluate() budgeted for (its weights and cache are in r's figures already; its
    # pool's tokens count the draft's cache, sim.memory.pool_tokens_with_draft).
    draft = sim_setup(validated(s)).draft
    blocks = r.kv_pool_tokens // bs
    if blocks <= 0:
        why = r.warnings[-1] if r.warnings else "the KV pool is empty"
        issues.append(Issue("gpu_memory_utilization", f"leaves no KV pool: {why}"))
    if issues:
        return None, issues, list(r.warnings)
    try:
        # The hardware model evaluate() built for this scenario, not a second copy.
        machine = machine_for(s)
    except InputError as e:  # evaluate() already accepted these; kept for callers that bypass it
        return None, list(e.issues), []
    gpu = machine.gpu
    spec = SpecDecode(draft.machine, s.spec_tokens, s.spec_acceptance) if draft is not None else None
    clock = StepClock(machine, spec, draft.kv_bytes_per_token if draft is not None else 0.0)
    block_bytes = bs * clock.kv_bytes_per_token
    kv = config.kv
    host_link = kv.host_link_gb_per_s * GB if kv.host_link_gb_per_s else gpu.host_link_bytes_per_s
    transfer = config.cluster.kv_transfer_gb_per_s * GB if config.cluster.kv_transfer_gb_per_s else gpu.interconnect_bytes_per_s
    setup = Setup(
        config=config,
        evaluation=r,
        clock=clock,
        block_size=bs,
        num_gpu_blocks=blocks,
        swap_blocks=int(kv.swap_space_gib * GIB // block_bytes),
        host_cache_blocks=int(kv.host_cache_gib * GIB // block_bytes),
        host_link_bytes_per_s=host_link,
        kv_transfer_bytes_per_s=transfer,
        gpus_per_instance=s.tp,
        max_num_seqs=max_seqs,
        max_num_batched_tokens=max_tokens,
        frontend_s=r.ttft_frontend_s,
    )
    return setup, [], list(r.warnings)


def check_requests(setup: Setup, requests) -> list[Issue]:
    """Every request must fit in an empty pool on its own (with the admission watermark and, for
    reserve admission, its own output reserve), and within max_model_len."""
    if not requests:
        return []
    cfg = setup.config
    longest = max(requests, key=lambda q: q.prompt_tokens + q.output_tokens)
    tokens = longest.prompt_tokens + longest.output_tokens
    bs = setup.block_size
    sched = cfg.scheduling
    watermark = int(sched.watermark_fraction * setup.num_gpu_blocks)
    reserve = sched.new_token_ratio if sched.admission == "reserve" else 0.0
    ahead = setup.clock.spec.lookahead_tokens if setup.clock.spec is not None else 0  # speculative slots (clock.SpecDecode)
    need = max(blocks_for(tokens + ahead, bs),
               blocks_for(longest.prompt_tokens + ahead, bs) + blocks_for(int(reserve * longest.output_tokens), bs))
    field = "trace" if cfg.workload.arrival == "trace" else "prompt_max_tokens"
    max_len = cfg.scenario.max_model_len
    if max_len is not None and tokens > max_len:
        return [Issue(field, f"the longest request (prompt {longest.prompt_tokens:,} + output {longest.output_tokens:,} tokens) "
                             f"exceeds max_model_len ({max_len:,}); lower {field} or raise max_model_len")]
    if need + watermark > setup.num_gpu_blocks:
        fits = (setup.num_gpu_blocks - watermark) * bs - longest.output_tokens
        hint = (f"the longest prompt that fits with {longest.output_tokens:,} output tokens is about {max(fits, 0):,} tokens"
                if fits > 0 else "shorten the outputs or grow the pool")
        return [Issue(field, f"the longest request (prompt {longest.prompt_tokens:,} + output {longest.output_tokens:,} tokens) "
                             f"needs {need + watermark:,} KV blocks of {bs} tokens (watermark included) but the pool has "
                             f"{setup.num_gpu_blocks:,} ({setup.pool_tokens:,} tokens); {hint}")]
    return []
