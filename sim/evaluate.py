"""One full steady-state evaluation: Scenario in, Result out, never an exception for bad input.

The order follows the data: the scenario resolves to its architecture, GPU, profile, engine rules
and HBM budget (`resolve`), admission says how many sequences fit, the batch, and whether
anything runs (`admission`), the roofline times the decode step and the prefill (`roofline`),
and `served` adds what a benchmark client would measure; `boot_log` writes the engine's lines.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import partial

from . import admission, boot_log, catalog, roofline, speculative
from .admission import held_bytes_per_sequence
from .boot_log import gib
from .errors import InputError, Issue
from .fields import check_number, coerce_number
from .resolve import embedding_bytes_per_param, machine_for, resolve_architecture, setup, valid_copy, validated
from .result import RESULT_DEFAULTS, Result, make_result
from .scenario import FIELDS, Scenario
from .served import served
from .units import GIB

SECONDS_PER_HOUR = 3600.0

# What callers import from here; the last five moved to admission, boot_log, resolve and result
# when this module was split by job, and stay importable from here.
__all__ = ["SECONDS_PER_HOUR", "Result", "evaluate", "sweep", "embedding_bytes_per_param", "gib", "held_bytes_per_sequence",
           "machine_for", "resolve_architecture"]


def evaluate(s: Scenario) -> Result:
    """Evaluate one scenario. Bad input never raises: it comes back in `Result.errors`."""
    try:
        return _evaluate(validated(s))
    except InputError as e:
        return _error_result(s, e)


def sweep(s: Scenario, name: str, values: Iterable) -> Iterator[Result]:
    """`evaluate(s.with_(**{name: v}))` for each v in turn, the same results for about half the
    work: `s` is validated once, and each value by its own field's rule (`sim.fields`), not the
    whole scenario again. A panel's curve is one sweep (a 40-point curve per slider move)."""
    bound = FIELDS.get(name)
    try:
        base = validated(s) if bound is not None else None
    except InputError:
        base = None
    for value in values:
        if base is None or check_number(name, value, bound) is not None:
            yield evaluate(s.with_(**{name: value}))  # the whole check, which names every problem
            continue
        try:
            yield _evaluate(valid_copy(base, **{name: coerce_number(value, bound.integer)}))
        except InputError as e:
            yield _error_result(s.with_(**{name: value}), e)


def _error_result(s: Scenario, e: InputError) -> Result:
    return make_result({**RESULT_DEFAULTS, **_known(s), "scenario": _safe_scenario(s),
                        "errors": [i.to_dict() for i in e.issues], "warnings": [], "log": [f"ERROR {i}" for i in e.issues]})


def _known(s: Scenario) -> dict:
    """What an input error leaves known: the card's name (the HBM bar's title) and the model's
    context (the prompt slider's range) when the scenario names them validly."""
    known = {}
    if not isinstance(s, Scenario):
        return known
    try:
        known["gpu_name"] = catalog.gpu(s.gpu).name if isinstance(s.gpu, str) else ""
    except InputError:
        pass
    try:
        known["context_tokens"] = resolve_architecture(s).max_position_embeddings
    except (InputError, TypeError, ValueError, AttributeError):
        pass  # a model id or config that does not parse: the error names it
    return known


def _safe_scenario(s: Scenario) -> dict:
    d = s.to_dict() if isinstance(s, Scenario) else {}
    if d.get("config") is not None:
        d["config"] = "(pasted config.json)"
    return d


def _evaluate(s: Scenario) -> Result:
    """Evaluate a validated scenario; an InputError says what only evaluating finds."""
    st = setup(s)
    arch, machine, mem, chunk = st.arch, st.machine, st.mem, st.chunk_tokens
    context = s.prompt_tokens + s.output_tokens
    if s.max_model_len is not None and context > s.max_model_len:
        raise InputError(Issue("prompt_tokens", f"prompt + output ({context:,}) exceeds max_model_len ({s.max_model_len:,}); "
                                                f"allowed prompt: 1 to {max(s.max_model_len - s.output_tokens, 0):,}"))
    a = admission.admit(arch, s, mem, st.limits, st.kv_bytes_per_token, st.draft)
    batch, refused = a.batch, a.refusal
    warnings: list[str] = []

    def facts() -> boot_log.BootFacts:
        return boot_log.BootFacts(
            scenario=s, arch=arch, mem=mem, limits=a.limits, kv_bytes_per_token=st.kv_bytes_per_token,
            per_seq_bytes=a.per_seq_bytes, max_sequences=a.max_sequences, batch=batch, batch_limited_by=a.limited_by,
            max_model_len=a.max_model_len, max_concurrency=a.max_concurrency, refusal=a.vllm_longest, refused=refused,
            rank_holds=st.result_base["rank_holds"])

    budget_log: list[str] | None = None
    if refused is not None or boot_log.warns(mem, a.vllm_longest, a.max_sequences):
        budget_log = []  # a problem is reported now; otherwise the log waits until read
        boot_log.budget_lines(budget_log, warnings, facts())
    # The defaults and what the setup fixes, then what depends on the workload.
    result = st.result_base.copy()
    result.update({
        "scenario": _safe_scenario(s),
        "kv_bytes_per_sequence": a.per_seq_bytes,
        "kv_pool_used_bytes": batch * a.per_seq_bytes,
        "kv_pool_free_bytes": max(mem.kv_pool_bytes - batch * a.per_seq_bytes, 0.0),
        "max_sequences": a.max_sequences,
        "batch": batch,
        "batch_limited_by": a.limited_by,
        "max_concurrency": a.max_concurrency,
        "max_concurrency_tokens": a.max_model_len,
        "effective_max_num_seqs": a.limits.max_num_seqs,
        "vllm_longest_max_model_len": a.vllm_longest,
        "refusal": refused,
    })
    if st.draft is not None:
        result["spec_draft_kv_bytes_per_sequence"] = a.draft_per_seq_bytes
    if st.profile_mismatch:
        warnings.append(st.profile_mismatch)
    pre = dec = None
    if refused is None:  # a refused request has no step to time
        pre = roofline.prefill(machine, s.prompt_tokens, chunk, detail=False)
        result.update({
            "ttft_s": pre.time_s,
            "prefill_weight_read_s": pre.weight_read_s,
            "prefill_kv_read_s": pre.kv_read_s,
            "prefill_overhead_s": pre.overhead_s,
            "prefill_compute_s": pre.compute_time_s,
            "prefill_allreduce_s": pre.allreduce_time_s,
            "prefill_flops": pre.flops,
            "prefill_flops_per_s": pre.delivered_flops_per_s,
            "prefill_tensor_duty": pre.tensor_duty,
            "prefill_bytes": pre.bytes,
            "prefill_arithmetic_intensity": pre.arithmetic_intensity,
            "prefill_bound": pre.bound,
            "_prefill_kernels_builder": partial(_kernel_dicts, roofline.prefill, machine, s.prompt_tokens, chunk),
        })
    if batch > 0:
        # Paged: the decode steps of a request read prompt + 1 ... prompt + output - 1 tokens (the
        # prefill samples the first token), prompt + output / 2 on average.
        read_context = context if s.allocation != "paged" else s.prompt_tokens + s.output_tokens / 2
        dec = roofline.decode_step(machine, batch, read_context, detail=False)
        itl = dec.wall_s  # GPU time + the engine's host time per step (roofline.step_cost)
        shown, decode_step_fn = dec, roofline.decode_step
        if st.draft is not None:
            # The step that runs is the target's verify step; a sequence's tokens come every
            # cycle / tokens-per-step. Served prefills still cost what they add to a decode step.
            spec = speculative.spec_step(machine, st.draft.machine, batch, read_context, s.spec_tokens, s.spec_acceptance,
                                         detail=False)
            result.update({"spec_tokens_per_step": spec.tokens_per_step, "spec_draft_s": spec.draft_s,
                           "spec_verify_s": spec.verify.wall_s, "spec_speedup": itl / spec.itl_s})
            itl, shown = spec.itl_s, spec.verify
            decode_step_fn = partial(_verify_step, st.draft.machine, s.spec_tokens, s.spec_acceptance)
        tokens_per_s = batch / itl
        result.update({
            "decode_step_s": shown.time_s,
            "itl_s": itl,
            "cpu_step_s": shown.cpu_s,
            "decode_weight_read_s": shown.weight_read_s,
            "decode_kv_read_s": shown.kv_read_s,
            "decode_compute_s": shown.compute_time_s,
            "decode_allreduce_s": shown.allreduce_time_s,
            "decode_overhead_s": shown.overhead_s,
            "decode_bytes": shown.bytes,
            "decode_flops": shown.flops,
            "decode_flops_per_s": shown.delivered_flops_per_s,
            "decode_arithmetic_intensity": shown.arithmetic_intensity,
            "decode_tokens_per_s": tokens_per_s,
            "per_stream_tokens_per_s": 1.0 / itl,
            "weight_share": shown.weight_share,
            "decode_bound": shown.bound,
            "tensor_duty": shown.tensor_duty,
            "experts_touched_per_layer": arch.expected_experts_touched(batch) if arch.moe else None,
            "_decode_kernels_builder": partial(_kernel_dicts, decode_step_fn, machine, batch, read_context),
            **served(machine, s, pre, dec, batch, read_context, chunk, st.rules, itl_s=itl),
        })
        if s.dollars_per_gpu_hour is not None:
            dollars_per_s = s.dollars_per_gpu_hour * s.tp * s.pp / SECONDS_PER_HOUR
            # Two prices of a token: the decode steps' time alone, and all the GPUs' time (the prompts'
            # prefills too), which is what a user pays per output token when serving this workload.
            result["decode_dollars_per_million_tokens"] = dollars_per_s / tokens_per_s * 1e6
            served_rate = result["served_tokens_per_s"]
            result["served_dollars_per_million_tokens"] = dollars_per_s / served_rate * 1e6 if served_rate else None
            # Bytes per dollar: what holding one request's whole cache resident costs, the GPUs' hour over the
            # sequences the pool holds (seed 004's framing of cost).
            result["dollars_per_sequence_hour"] = s.dollars_per_gpu_hour * s.tp * s.pp / a.max_sequences

    def build_log() -> list[str]:
        log: list[str] = []
        if budget_log is None:
            boot_log.budget_lines(log, [], facts())
        else:
            log.extend(budget_log)
        log.append(boot_log.profile_line(st.profile, st.gpu, machine, s.prompt_tokens, batch))
        if st.profile_mismatch:
            log.append("WARNING " + st.profile_mismatch)
        if pre is not None:
            log.append(f"Prefill of {s.prompt_tokens:,} tokens: TTFT {pre.time_s * 1e3:.1f} ms, {pre.bound}-bound "
                       f"(compute {pre.compute_time_s * 1e3:.1f} ms vs weight read {pre.memory_time_s * 1e3:.1f} ms).")
        if dec is not None:
            itl = dec.wall_s
            log.append(f"Decode step of {batch} sequences: {dec.time_s * 1e3:.2f} ms, {dec.bound}-bound; "
                       f"weights are {dec.weight_share:.0%} of the {dec.bytes / GIB:.2f} GiB read per step; "
                       f"{batch / itl:,.0f} tok/s in aggregate, {1 / itl:,.1f} tok/s per stream.")
            if result.get("spec_speedup") is not None:
                r_itl = result["itl_s"]
                log.append(f"Speculative decoding with {result['spec_draft_name']}: {s.spec_tokens} proposals a step at "
                           f"acceptance {s.spec_acceptance:g} give {result['spec_tokens_per_step']:.2f} tokens a step; "
                           f"draft {result['spec_draft_s'] * 1e3:.2f} ms + verify {result['spec_verify_s'] * 1e3:.2f} ms; "
                           f"ITL {r_itl * 1e3:.2f} ms, {result['spec_speedup']:.2f}x the ITL without a draft.")
        return log

    result["_log_builder"] = build_log
    result["warnings"] = warnings
    result["errors"] = []
    return make_result(result)


def _verify_step(draft: roofline.Machine, k: int, acceptance: float, machine: roofline.Machine, batch: int,
                 context: float, detail: bool = True) -> roofline.StepCost:
    """The target's verify step of a speculative step (decode_step's signature, for the kernel rows)."""
    return speculative.spec_step(machine, draft, batch, context, k, acceptance, detail).verify


def _kernel_dicts(step, *args) -> list[dict]:
    """The kernel rows of a step, recomputed with detail when a view first reads them."""
    return [k.to_dict() for k in step(*args).kernels]
