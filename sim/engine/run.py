"""The public entry points: `simulate(config)` for one run, `prepare` + `Simulation.advance` +
`collect` for a run in slices (progress bars, cancel buttons), all of which turn bad input into
`EngineResult.errors` instead of exceptions.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from dataclasses import replace

from ..errors import InputError, Issue
from . import logs, prometheus
from .config import EngineConfig, coerce_config, validate_config
from .diagnosis import POOL_FULL_USAGE, Signals, diagnose
from .result import EngineResult, histogram_percentiles, percentiles
from .setup import build, check_requests
from .simulation import Simulation, make_rng
from .workload import generate


def _error_result(config, issues, warnings=()) -> EngineResult:
    d = config.to_dict() if isinstance(config, EngineConfig) else {}
    return EngineResult(config=d, errors=[i.to_dict() for i in issues], warnings=list(warnings),
                        log=[f"ERROR {i}" for i in issues])


# The engine's memory budget per run, and what fits it. Memory grows with the requests (their
# records, and the per-request results), not with the simulated span (metrics.py). Measured with
# tracemalloc on fixed 200/20-token requests at 50/s: 30.1 MiB peak for 50,000 requests, about 630
# bytes each; tests/engine/test_bounded_memory.py checks the limit against the budget.
MEMORY_BUDGET_BYTES = 256 * 2**20
BYTES_PER_REQUEST = 630
MAX_REQUESTS_IN_BUDGET = 400_000  # 400,000 x 630 B = 240 MiB


def _over_budget(config: EngineConfig) -> Issue | None:
    w = config.workload
    n = len(w.trace) if w.arrival == "trace" and w.trace else w.num_requests
    if n <= MAX_REQUESTS_IN_BUDGET:
        return None
    field = "trace" if w.arrival == "trace" else "num_requests"
    return Issue(field, f"{n:,} requests do not fit the engine's memory budget of {MEMORY_BUDGET_BYTES // 2**20} MB per run "
                        f"(about {BYTES_PER_REQUEST} bytes each): at most {MAX_REQUESTS_IN_BUDGET:,} requests")


def prepare(config: EngineConfig, *, max_run_steps: int = 1 << 62) -> Simulation | EngineResult:
    """A ready-to-run Simulation, or an EngineResult carrying the input errors."""
    issues = validate_config(config)
    if issues:
        return _error_result(config, issues)
    config = coerce_config(config)  # 100.0 requests is 100 (sim.fields: one rule for sim and the engine)
    issue = _over_budget(config)
    if issue is not None:
        return _error_result(config, [issue])
    setup, issues, warnings = build(config)
    if issues:
        return _error_result(config, issues, warnings)
    try:
        requests = generate(config.workload, make_rng(config.workload.seed))
    except InputError as e:
        return _error_result(config, e.issues, warnings)
    issues = check_requests(setup, requests)
    if issues:
        return _error_result(config, issues, warnings)
    return Simulation(setup, requests, max_run_steps)


def simulate(config: EngineConfig) -> EngineResult:
    """Run one configuration to the end."""
    sim = prepare(config)
    if isinstance(sim, EngineResult):
        return sim
    sim.run()
    return finish(sim)


def finish(sim: Simulation) -> EngineResult:
    """Summarise a finished (or cancelled) simulation and release it (`Simulation.release`): what a
    caller that drops the simulation afterwards uses, so the run is freed at once."""
    result = collect(sim)
    sim.release()
    return result


def collect(sim: Simulation) -> EngineResult:
    """Summarise a finished (or cancelled) simulation."""
    m = sim.metrics
    cfg = sim.config
    setup = sim.setup
    metrics_end = sim.now_s
    m.sample_until(metrics_end, sim.instances)
    m.settle_all()
    done = [i for i in range(len(sim.requests)) if m.finish_s[i] == m.finish_s[i]]
    reqs = sim.requests
    arrival = m.arrival_s
    ttft = [m.first_token_s[i] - arrival[i] for i in done]
    e2e = [m.finish_s[i] - arrival[i] for i in done]
    queue = [m.admitted_s[i] - m.ready_s[i] for i in done]
    tpot = [(m.finish_s[i] - m.first_token_s[i]) / (reqs[i].output_tokens - 1) if reqs[i].output_tokens > 1 else 0.0 for i in done]
    # The goodput rule, in one place: a request meets the targets when neither its TTFT nor its TPOT
    # is over its target; the diagnosis reads the same two lists.
    missed_ttft = [t > cfg.ttft_target_s for t in ttft]
    missed_itl = [t > cfg.itl_target_s for t in tpot]
    met = sum(1 for a, b in zip(missed_ttft, missed_itl, strict=True) if not (a or b))
    start = min((arrival[i] for i in done), default=0.0)
    end = max((m.finish_s[i] for i in done), default=0.0)
    duration = max(end - start, 1e-12)
    itl = None
    for st in m.inst:
        if itl is None:
            itl = type(st.itl)()
        itl.merge(st.itl)
    prompt_total = sum(st.prompt_tokens for st in m.inst)
    gen_total = sum(st.generation_tokens for st in m.inst)
    series = dict(m.series)
    n_pts = len(series["t_s"])
    width = m.interval_s
    series["prompt_tokens_per_s"] = [(m.prompt_buckets[i] if i < len(m.prompt_buckets) else 0.0) / width for i in range(n_pts)]
    series["generation_tokens_per_s"] = [(m.generation_buckets[i] if i < len(m.generation_buckets) else 0.0) / width
                                         for i in range(n_pts)]
    series["interval_s"] = width
    in_sys = series["in_system"]
    mean_l = math.fsum(in_sys) / len(in_sys) if in_sys else 0.0
    span_s = series["t_s"][-1] + width if in_sys else 0.0
    lam = len(done) / span_s if span_s else 0.0
    w_mean = math.fsum(e2e) / len(e2e) if e2e else 0.0
    edges, weights = itl.density()
    inst_summary = []
    for inst in sim.instances:
        st = m.inst[inst.index]
        inst_summary.append({
            "index": inst.index, "role": inst.role, "finished": st.finished, "steps": inst.steps,
            "prompt_tokens": st.prompt_tokens, "generation_tokens": st.generation_tokens, "preemptions": inst.preemptions,
            "swaps": inst.swaps_out, "peak_kv_blocks": inst.blocks.gpu.peak_used, "kv_pool_blocks": inst.blocks.total,
            "prefix_queries": inst.prefix_queries, "prefix_hits": inst.prefix_hits,
            "scheduler_s": inst.scheduler_s, "host_load_s": inst.host_load_s, "swap_s": inst.swap_s,
            "prefix_evicted_blocks": inst.blocks.cache.evicted_blocks if inst.blocks.cache is not None else 0,
        })
    queries = sum(i.prefix_queries for i in sim.instances)
    hits = sum(i.prefix_hits for i in sim.instances)
    usage = series["kv_usage"]
    s = cfg.scenario
    r = setup.evaluation
    result = EngineResult(
        config=cfg.to_dict(),
        warnings=list(r.warnings),
        cancelled=sim.cancelled,
        model_name=r.model_name,
        model_family=r.model_family,
        gpu_name=_gpu_name(s.gpu),
        policy=cfg.scheduling.policy,
        num_requests=len(reqs),
        completed=len(done),
        duration_s=duration if done else 0.0,
        instances=len(sim.instances),
        gpus=len(sim.instances) * setup.gpus_per_instance,
        block_size_tokens=setup.block_size,
        kv_pool_blocks=setup.num_gpu_blocks,
        kv_pool_tokens=setup.pool_tokens,
        ttft_s=percentiles(ttft),
        itl_s=histogram_percentiles(itl),
        tpot_s=percentiles(tpot),
        e2e_s=percentiles(e2e),
        queue_s=percentiles(queue),
        ttft_target_s=cfg.ttft_target_s,
        itl_target_s=cfg.itl_target_s,
        goodput_per_s=met / duration if done else 0.0,
        goodput_fraction=met / len(done) if done else 0.0,
        throughput_per_s=len(done) / duration if done else 0.0,
        output_tokens_per_s=gen_total / duration if done else 0.0,
        prompt_tokens_per_s=prompt_total / duration if done else 0.0,
        prompt_tokens_computed=prompt_total,
        output_tokens_generated=gen_total,
        preemptions=sum(i.preemptions for i in sim.instances),
        swaps=sum(i.swaps_out for i in sim.instances),
        prefix_hit_rate=hits / queries if queries else 0.0,
        prefix_evicted_blocks=sum(i.blocks.cache.evicted_blocks for i in sim.instances if i.blocks.cache is not None),
        peak_kv_blocks=max(i.blocks.gpu.peak_used for i in sim.instances),
        mean_kv_usage=math.fsum(usage) / len(usage) if usage else 0.0,
        mean_running=math.fsum(series["running"]) / n_pts if n_pts else 0.0,
        mean_waiting=math.fsum(series["waiting"]) / n_pts if n_pts else 0.0,
        littles_law={"mean_in_system": mean_l, "arrival_rate_per_s": lam, "mean_e2e_s": w_mean, "rate_x_e2e": lam * w_mean},
        series=series,
        requests={
            "id": done,
            "arrival_s": [arrival[i] for i in done],
            "prompt_tokens": [reqs[i].prompt_tokens for i in done],
            "output_tokens": [reqs[i].output_tokens for i in done],
            "ttft_s": ttft, "tpot_s": tpot, "e2e_s": e2e, "queue_s": queue,
            "preemptions": [m.preemptions[i] for i in done],
            "hit_tokens": [m.hit_tokens[i] for i in done],
        },
        itl_density={"edges_s": edges, "weights": weights},
        per_instance=inst_summary,
        vllm_log=logs.vllm_lines(m, cfg.cluster.disaggregated),
        sglang_log=logs.sglang_lines(m),
        prometheus=prometheus.exposition(m, sim.instances, r.model_name),
        events=sim.events,
        tokenizer_s=sim.tokenizer_s,
        scheduler_s=math.fsum(i.scheduler_s for i in sim.instances),
        log=list(r.log),
    )
    return replace(result, binding_limit=diagnose(_signals(sim, done, result, missed_ttft, missed_itl)).to_dict())


def _signals(sim: Simulation, done: list[int], r: EngineResult, missed_ttft: list[bool], missed_itl: list[bool]) -> Signals:
    """What the diagnosis reads from a finished run (sim/engine/diagnosis.py says why each);
    `missed_ttft` and `missed_itl` are collect's, request by request in `done`'s order."""
    m, reqs, w = sim.metrics, sim.requests, sim.config.workload
    rq = r.requests
    # An opening counts as repeated from the second request that carries it on, in arrival order; the
    # tokens a prefix cache served are not computed, so they are not counted.
    seen: set[str] = set()
    repeated = 0
    for i in sorted(done, key=lambda i: m.arrival_s[i]):
        q = reqs[i]
        if q.prefix_id is not None:
            if q.prefix_id in seen:
                repeated += max(0, q.prefix_tokens - m.hit_tokens[i])
            seen.add(q.prefix_id)
    arrivals = sorted(m.arrival_s[i] for i in done)
    open_loop = w.arrival != "closed" and not w.max_concurrency and len(arrivals) > 1 and arrivals[-1] > arrivals[0]
    waiting, running, usage = r.series["waiting"], r.series["running"], r.series["kv_usage"]
    last = bisect_right(r.series["t_s"], arrivals[-1]) - 1 if open_loop else -1
    queued = [k for k, n in enumerate(waiting) if n > 0]
    cap = sim.setup.max_num_seqs * len(sim.instances)
    return Signals(
        completed=len(done),
        missed=sum(a or b for a, b in zip(missed_ttft, missed_itl, strict=True)),
        missed_ttft=sum(missed_ttft),
        missed_itl=sum(missed_itl),
        prompt_tokens_computed=r.prompt_tokens_computed,
        repeated_prompt_tokens=repeated,
        arrival_rate_per_s=(len(arrivals) - 1) / (arrivals[-1] - arrivals[0]) if open_loop else None,
        completed_rate_per_s=r.throughput_per_s,
        queued_at_last_arrival=waiting[last] if last >= 0 else 0,
        preempted_requests=sum(1 for n in rq["preemptions"] if n > 0),
        waiting_share_pool_full=sum(usage[k] >= POOL_FULL_USAGE for k in queued) / len(queued) if queued else 0.0,
        waiting_share_batch_full=sum(running[k] >= cap for k in queued) / len(queued) if queued else 0.0,
        mean_queue_s=r.queue_s.mean,
        mean_ttft_s=r.ttft_s.mean,
    )


def _gpu_name(gpu_id: str) -> str:
    from .. import catalog
    try:
        return catalog.gpu(gpu_id).name
    except InputError:
        return gpu_id
