"""One full steady-state evaluation: Scenario in, Result out, never an exception for bad input.

Order of the computation follows the data: config.json -> Architecture -> HBM budget -> how many
sequences fit -> the batch -> decode step and prefill on the roofline -> throughput, cost, log.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import MISSING, dataclass, field, fields, replace
from functools import cache, cached_property, lru_cache, partial
from operator import attrgetter

from . import admission, boot_log, catalog, engine_defaults, engine_rules, memory, roofline
from .architecture import Architecture, bytes_per_token_formula, from_config
from .boot_log import gib  # noqa: F401  (kept importable from here)
from .catalog import GPU
from .errors import InputError, Issue
from .fields import check_number, coerce_number
from .profiles import EfficiencyProfile, _load_profile, load_profile
from .scenario import FIELDS, Scenario, validate
from .units import DTYPE_BYTES, GIB

SECONDS_PER_HOUR = 3600.0


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
    kv_bytes_per_token: float = 0.0
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
    prefill_bytes: float | None = None
    prefill_arithmetic_intensity: float | None = None
    prefill_bound: str | None = None
    ridge_intensity: float = 0.0
    peak_flops: float = 0.0
    hbm_bandwidth_bytes_per_s: float = 0.0
    dollars_per_million_tokens: float | None = None
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


_RESULT_DEFAULTS = {f.name: f.default for f in fields(Result) if f.default is not MISSING}


def _make_result(values: dict) -> Result:
    """The Result whose fields are `values`, for the hot path: `values` must hold every field
    (start from a copy of _RESULT_DEFAULTS or of a setup's result_base, then set the rest). A
    frozen dataclass's __init__ sets each of its ~65 fields through object.__setattr__, a quarter
    of a whole evaluation; giving the instance `values` as its dict yields the same object, still
    frozen, without copying them again. A key that is not a field would become a stray attribute:
    tests/sim/test_properties.py checks that to_dict() equals dataclasses.asdict() plus the two
    lazy texts for every result."""
    obj = object.__new__(Result)
    object.__setattr__(obj, "__dict__", values)
    return obj


@cache
def _catalog_architecture(model_id: str, force_mha: bool) -> Architecture:
    """Catalog models parse once per process: the data files never change while it runs, and the
    Architecture is frozen. Unknown ids raise, and exceptions are not cached."""
    entry = catalog.model_entry(model_id)
    return _maybe_forced_mha(from_config(entry["config"], name=entry["kvlab"]["name"], meta=entry["kvlab"]), force_mha)


def _maybe_forced_mha(arch: Architecture, force_mha: bool) -> Architecture:
    return arch.with_forced_mha() if force_mha and arch.attention_kind != "MHA" else arch


def resolve_architecture(s: Scenario) -> Architecture:
    if s.config is None:
        return _catalog_architecture(s.model, s.force_mha is True)
    try:
        # A pasted config is re-evaluated on every slider move: parse it once per distinct text.
        key = json.dumps(s.config, sort_keys=True, allow_nan=True)
    except (TypeError, ValueError):  # not JSON-shaped (a Python caller's dict): parse every time
        return _pasted_architecture(s.config, s.force_mha is True)
    return _cached_pasted_architecture(key, s.force_mha is True)


@lru_cache(maxsize=32)
def _cached_pasted_architecture(config_json: str, force_mha: bool) -> Architecture:
    return _pasted_architecture(json.loads(config_json), force_mha)


def _pasted_architecture(config, force_mha: bool) -> Architecture:
    name = config.get("_name_or_path") if isinstance(config, dict) else None
    return _maybe_forced_mha(from_config(config, name=str(name or "pasted config.json")), force_mha)


_MACHINES: dict = {}


def machine_for(s: Scenario, arch: Architecture | None = None, gpu=None, profile=None, rules=None) -> roofline.Machine:
    """The hardware model of one scenario, built once and shared by evaluate() and the
    time-domain engine (which asks for it with the same scenario). It carries the engine's host
    time per step (an engine rule), so both time a step with the same roofline.step_cost."""
    arch = arch or resolve_architecture(s)
    rules = rules or engine_rules.rules(s.engine, s.engine_version)
    profile = profile or load_profile(s.profile)
    # Keyed by the profile object, not only its name: a reloaded profile (its cache cleared after
    # the file changed) gets a new machine.
    key = (id(arch), id(profile), s.gpu, s.gpu_memory_gib, s.tp, s.weight_dtype, s.kv_dtype, s.engine == "textbook",
           s.model if s.config is None else "", rules.cpu_step_s, rules.cpu_row_s)
    hit = _MACHINES.get(key)
    if hit is not None and hit.arch is arch and hit.profile is profile:
        return hit
    if gpu is None:
        gpu = catalog.gpu(s.gpu)
        if s.gpu_memory_gib is not None:
            gpu = gpu.with_memory_bytes(s.gpu_memory_gib * GIB)
    w_el = DTYPE_BYTES[s.weight_dtype]
    fp8_compute = s.weight_dtype == "fp8" and bool(gpu.fp8_dense_flops)
    machine = roofline.Machine(arch, gpu, profile, s.tp, w_el, DTYPE_BYTES[s.kv_dtype], fp8_compute,
                               weight_dtype=s.weight_dtype, model_id=s.model if s.config is None else "",
                               embedding_bytes_per_param=embedding_bytes_per_param(s), cpu_step_s=rules.cpu_step_s,
                               cpu_row_s=rules.cpu_row_s)
    if len(_MACHINES) > 256:
        _MACHINES.clear()
    _MACHINES[key] = machine
    return machine


def embedding_bytes_per_param(s: Scenario) -> float | None:
    """Real engines load a quantized checkpoint's embedding and lm_head in BF16; the textbook
    panel stores every weight at the chosen dtype."""
    if s.engine == "textbook" or DTYPE_BYTES[s.weight_dtype] >= DTYPE_BYTES["bf16"]:
        return None
    return DTYPE_BYTES["bf16"]


# The Scenario fields a setup depends on besides the model (the architecture object stands for
# model, config and force_mha): everything but the workload (prompt_tokens, output_tokens,
# concurrency, allocation, max_model_len) and the price.
_SETUP_FIELDS = attrgetter("gpu", "gpu_memory_gib", "tp", "kv_dtype", "weight_dtype", "gpu_memory_utilization",
                           "block_size_tokens", "engine", "engine_version", "profile", "max_num_batched_tokens",
                           "max_num_seqs", "mem_fraction_static", "model")


@dataclass(frozen=True)
class _Setup:
    """What an evaluation derives from the hardware, engine and model fields alone: the hardware
    model, the engine's limits, the HBM budget and the Result fields they fix. Nothing here
    depends on the prompt or the batch, so a slider over either (and the 64-point prompt sweep
    of a chart) reuses it; built by `_setup`, once per distinct set of those fields."""

    arch: Architecture
    gpu: GPU
    profile: EfficiencyProfile
    rules: engine_rules.EngineRules
    kv_bytes_per_element: float
    kv_bytes_per_token: float
    limits: engine_defaults.EngineLimits  # max_num_seqs is None for SGLang: it depends on max_model_len
    mem: memory.MemoryBudget
    machine: roofline.Machine
    chunk_tokens: int | None  # prefill pass size: None (one pass) for the textbook engine
    profile_mismatch: str | None  # the warning when the profile was fitted on another GPU
    result_base: dict  # Result's defaults with the fields fixed here filled in


_SETUPS: dict = {}


def _setup(s: Scenario, arch: Architecture) -> _Setup:
    """The setup of a validated scenario, cached per architecture, profile and engine-rules object
    (so clearing the profile or rules cache, as tests and tests/validation/fit.py do, rebuilds it)
    and per setup field. Raises InputError for a tp that does not divide the heads."""
    profile = _load_profile(s.profile)  # the name was checked by validate
    rules = engine_rules.rules(s.engine, s.engine_version)
    key = (id(arch), id(profile), id(rules), _SETUP_FIELDS(s))
    hit = _SETUPS.get(key)
    if hit is not None and hit.arch is arch and hit.profile is profile and hit.rules is rules:
        return hit
    _check_parallelism(arch, s.tp)
    gpu = catalog.gpu(s.gpu)
    if s.gpu_memory_gib is not None:
        gpu = gpu.with_memory_bytes(s.gpu_memory_gib * GIB)
    kv_el = DTYPE_BYTES[s.kv_dtype]
    kv_per_token = arch.kv_bytes_per_token(kv_el, s.tp)
    limits = engine_defaults.resolve(s.engine, gpu, s.tp, s.max_num_batched_tokens, s.max_num_seqs, s.mem_fraction_static)
    mem = memory.budget(
        arch=arch, gpu=gpu, engine=s.engine, tp=s.tp, weight_bytes_per_param=DTYPE_BYTES[s.weight_dtype],
        kv_bytes_per_token=kv_per_token, gpu_memory_utilization=s.gpu_memory_utilization,
        mem_fraction_static=limits.mem_fraction_static or 0.0, max_num_batched_tokens=limits.max_num_batched_tokens,
        max_num_seqs=limits.max_num_seqs or 0, block_size_tokens=s.block_size_tokens,
        rules=rules, embedding_bytes_per_param=embedding_bytes_per_param(s),
    )
    machine = machine_for(s, arch, gpu, profile, rules)
    mismatch = None
    if profile.gpu is not None and profile.gpu != gpu.id:
        mismatch = (f"The efficiency profile {profile.name} was fitted on {profile.gpu}, not {gpu.id}: its fractions "
                    f"are applied to this GPU's datasheet peaks. Pick the textbook profile or one for {gpu.id}.")
    fixed = dict(
        model_name=arch.name,
        gpu_name=gpu.name,
        context_tokens=arch.max_position_embeddings,
        attention_kind=arch.attention_kind,
        kv_bytes_per_token=kv_per_token,
        _kv_formula_builder=partial(bytes_per_token_formula, arch, kv_el, s.tp),
        params_total=arch.params_total,
        params_active=arch.params_active,
        capacity_bytes=mem.capacity_bytes,
        usable_bytes=mem.usable_bytes,
        context_reserve_bytes=mem.context_reserve_bytes,
        weight_bytes=mem.weight_bytes,
        non_torch_bytes=mem.non_torch_bytes,
        activation_reserve_bytes=mem.activation_reserve_bytes,
        kv_pool_bytes=mem.kv_pool_bytes,
        kv_pool_tokens=mem.kv_pool_tokens,
        startup_bytes=mem.startup_bytes,
        kv_num_blocks=mem.num_blocks,
        effective_max_num_batched_tokens=limits.max_num_batched_tokens,
        effective_mem_fraction_static=limits.mem_fraction_static,
        peak_flops=machine.peak_flops,
        hbm_bandwidth_bytes_per_s=gpu.hbm_bandwidth_bytes_per_s,
        ridge_intensity=machine.ridge_intensity,
        profile=profile.name,
        engine_version=rules.version,
        cpu_step_s=rules.cpu_step_s,
        ttft_frontend_s=rules.frontend_s,
        step_model="per_kernel" if profile.per_kernel else "whole_step",
    )
    setup = _Setup(
        arch=arch, gpu=gpu, profile=profile, rules=rules, kv_bytes_per_element=kv_el, kv_bytes_per_token=kv_per_token,
        limits=limits, mem=mem, machine=machine,
        # Real engines split a long prompt into passes of max_num_batched_tokens (chunked
        # prefill); the textbook panel runs it in one pass.
        chunk_tokens=None if s.engine == "textbook" else limits.max_num_batched_tokens,
        profile_mismatch=mismatch, result_base={**_RESULT_DEFAULTS, **fixed},
    )
    if len(_SETUPS) > 256:
        _SETUPS.clear()
    _SETUPS[key] = setup
    return setup


def _check_parallelism(arch: Architecture, tp: int) -> None:
    if arch.num_q_heads % tp:
        raise InputError(Issue("tp", f"must divide num_attention_heads ({arch.num_q_heads}); got {tp}"))
    kv = arch.num_kv_heads
    if arch.mla is None and kv % tp and tp % kv:
        raise InputError(Issue("tp", f"must divide num_key_value_heads ({kv}) or be a multiple of it; got {tp}"))


def _block_tokens_sum(n: int, block: int, cap: int | None = None) -> int:
    """Sum over x = 1..n of ceil(min(x, cap) / block) * block: tokens held, block-rounded, by a
    sequence as it grows to each length x (closed form, so a 100k-token generation costs O(1))."""
    def s(m: int) -> int:
        q, r = divmod(m, block)
        return block * (block * q * (q + 1) // 2 + r * (q + 1))
    if cap is None or n <= cap:
        return s(n)
    return s(cap) + (n - cap) * (-(-cap // block) * block)


def held_bytes_per_sequence(arch: Architecture, s: Scenario, kv_bytes_per_token: float) -> float:
    """KV bytes one sequence occupies on one rank for admission purposes.

    Contiguous: the full final length (prompt + output) is reserved at admission, in whole blocks.
    Reserve_max: max_model_len (the model's context when unset) is reserved at admission, as
    pre-paging engines did because the output length is unknown when a request starts.
    Paged: a sequence holds only the blocks it has filled so far; with requests at staggered
    points of their generation, the pool carries each one's average over its life, i.e. the mean
    of ceil((prompt + t) / block) blocks for t = 1..output.

    kv_bytes_per_token: one token's cache on one rank over all layers (Architecture.kv_bytes_per_token);
    a windowed layer holds at most its window, hence the mean over layers of the tokens held.
    """
    p, o, b = s.prompt_tokens, s.output_tokens, s.block_size_tokens
    reserved = s.max_model_len or arch.max_position_embeddings

    def held_tokens(window: int) -> float:
        cap = window or None
        if s.allocation == "contiguous":
            return -(-min(p + o, cap or p + o) // b) * b
        if s.allocation == "reserve_max":
            return -(-min(reserved, cap or reserved) // b) * b
        return (_block_tokens_sum(p + o, b, cap) - _block_tokens_sum(p, b, cap)) / o

    return kv_bytes_per_token * arch.layer_mean(held_tokens)


def evaluate(s: Scenario) -> Result:
    """Evaluate one scenario. Bad input never raises: it comes back in `Result.errors`."""
    try:
        return _evaluate(_validated(s))
    except InputError as e:
        return _error_result(s, e)


def sweep(s: Scenario, name: str, values: Iterable) -> Iterator[Result]:
    """`evaluate(s.with_(**{name: v}))` for each v in turn, the same results for about half the
    work: `s` is validated once, and each value by its own field's rule (`sim.fields`), not the
    whole scenario again. A panel's curve is one sweep (a 40-point curve per slider move)."""
    bound = FIELDS.get(name)
    try:
        base = _validated(s) if bound is not None else None
    except InputError:
        base = None
    for value in values:
        if base is None or check_number(name, value, bound) is not None:
            yield evaluate(s.with_(**{name: value}))  # the whole check, which names every problem
            continue
        try:
            yield _evaluate(_valid_copy(base, **{name: coerce_number(value, bound.integer)}))
        except InputError as e:
            yield _error_result(s.with_(**{name: value}), e)


def _error_result(s: Scenario, e: InputError) -> Result:
    return _make_result({**_RESULT_DEFAULTS, "scenario": _safe_scenario(s), "gpu_name": _gpu_name(s),
                         "errors": [i.to_dict() for i in e.issues], "warnings": [], "log": [f"ERROR {i}" for i in e.issues]})


def _gpu_name(s: Scenario) -> str:
    """The card's name when the scenario names a catalog GPU (views title the HBM bar with it)."""
    try:
        return catalog.gpu(s.gpu).name if isinstance(s, Scenario) and isinstance(s.gpu, str) else ""
    except InputError:
        return ""


def _safe_scenario(s: Scenario) -> dict:
    d = s.to_dict() if isinstance(s, Scenario) else {}
    if d.get("config") is not None:
        d["config"] = "(pasted config.json)"
    return d


_VALID: dict = {}


def _validated(s: Scenario) -> Scenario:
    """validate(s), once per distinct set of field values: a panel re-evaluates the same state on
    every redraw and changes one field at a time. The key holds every value and its type (True is
    not 1 to the validator); a pasted config is checked by from_config, not here, so only whether
    there is one enters the key. Unhashable values (a list where a number belongs) are validated
    every time and rejected."""
    values = s.__dict__ if isinstance(s, Scenario) else None
    if values is None:
        return validate(s)
    config = values["config"]
    try:
        vals = tuple(values.values())
        if config is not None:
            vals = tuple(None if v is config else v for v in vals)
        key = vals + tuple(map(type, values.values()))
        hit = _VALID.get(key)
    except TypeError:
        return validate(s)
    if hit is not None:
        return hit if config is None else _valid_copy(hit, config=config)
    valid = validate(s)  # integral floats in integer fields become ints (sim.fields)
    if len(_VALID) > 512:
        _VALID.clear()
    _VALID[key] = valid if config is None else _valid_copy(valid, config=None)
    return valid


def _valid_copy(s: Scenario, **changes) -> Scenario:
    """A copy of a validated scenario with `changes`, which the caller has checked (no second
    validation: `_validated`'s key says the other fields are the same; `sweep` checks its field)."""
    obj = object.__new__(Scenario)
    obj.__dict__.update(s.__dict__, **changes)
    return obj


def _evaluate(s: Scenario) -> Result:
    """Evaluate a validated scenario; an InputError says what only evaluating finds."""
    arch = resolve_architecture(s)
    setup = _setup(s, arch)
    gpu, profile, rules, limits, mem, machine = setup.gpu, setup.profile, setup.rules, setup.limits, setup.mem, setup.machine
    kv_el, chunk = setup.kv_bytes_per_element, setup.chunk_tokens
    warnings: list[str] = []

    context = s.prompt_tokens + s.output_tokens
    if s.max_model_len is not None and context > s.max_model_len:
        raise InputError(Issue("prompt_tokens", f"prompt + output ({context:,}) exceeds max_model_len ({s.max_model_len:,}); "
                                                f"allowed prompt: 1 to {max(s.max_model_len - s.output_tokens, 0):,}"))

    # The request length the engine plans for: the textbook panel plans for this request; vLLM and
    # SGLang for the model's whole context unless max_model_len says otherwise.
    max_len = s.max_model_len or (context if s.engine == "textbook" else arch.max_position_embeddings)
    if limits.max_num_seqs is None:  # SGLang sizes its request cap from the pool
        limits = replace(limits, max_num_seqs=engine_defaults.sglang_max_running_requests(mem.kv_pool_tokens, max_len))
    per_seq = held_bytes_per_sequence(arch, s, setup.kv_bytes_per_token)
    max_seqs = int(mem.kv_pool_bytes // per_seq) if per_seq > 0 else 0
    refusal = None
    if s.engine == "vllm":
        max_conc, refusal = _vllm_concurrency(arch, s, mem, kv_el, max_len, limits.max_num_batched_tokens)
        if refusal is not None:
            max_seqs = 0  # vLLM refuses to start: not one request of max_model_len fits
    else:
        # A request of max_model_len tokens is held in whole blocks: the concurrency line counts them,
        # as the fit count does and as vLLM's own line does (257 tokens hold 272 tokens of cache).
        held = -(-max_len // s.block_size_tokens) * s.block_size_tokens
        max_conc = mem.kv_pool_tokens / held if held else 0.0
    # The smallest cap wins; on a tie the concurrency is named (nothing is cut), then the pool.
    batch, limited_by = s.concurrency, "concurrency"
    if max_seqs < batch:
        batch, limited_by = max_seqs, "kv_pool"
    if limits.max_num_seqs < batch:
        batch, limited_by = limits.max_num_seqs, "max_num_seqs"
    refused = admission.refusal_of(arch, s, mem, max_seqs, refusal, max_len, per_seq)
    if refused is not None:
        batch = 0  # nothing runs
        if refused["reason"] == admission.TOO_LONG:
            limited_by = "context"

    pre = roofline.prefill(machine, s.prompt_tokens, chunk, detail=False) if refused is None else None

    def facts() -> boot_log.BootFacts:
        return boot_log.BootFacts(
            scenario=s, arch=arch, mem=mem, limits=limits, kv_bytes_per_token=setup.kv_bytes_per_token,
            per_seq_bytes=per_seq, max_sequences=max_seqs, batch=batch, batch_limited_by=limited_by,
            max_model_len=max_len, max_concurrency=max_conc, refusal=refusal, refused=refused)

    budget_log: list[str] | None = None
    if boot_log.warns(mem, refusal, max_seqs) or refused is not None:  # a problem is reported now; otherwise the log waits until read
        budget_log = []
        boot_log.budget_lines(budget_log, warnings, facts())
    # The defaults and what the setup fixes, then what depends on the workload.
    result = setup.result_base.copy()
    result.update({
        "scenario": _safe_scenario(s),
        "kv_bytes_per_sequence": per_seq,
        "kv_pool_used_bytes": batch * per_seq,
        "max_sequences": max_seqs,
        "batch": batch,
        "batch_limited_by": limited_by,
        "max_concurrency": max_conc,
        "max_concurrency_tokens": max_len,
        "effective_max_num_seqs": limits.max_num_seqs,
        "vllm_longest_max_model_len": refusal,
        "refusal": refused,
    })
    if pre is not None:
        result.update({
            "ttft_s": pre.time_s,
            "prefill_weight_read_s": pre.weight_read_s,
            "prefill_kv_read_s": pre.kv_read_s,
            "prefill_overhead_s": pre.overhead_s,
            "prefill_compute_s": pre.compute_time_s,
            "prefill_allreduce_s": pre.allreduce_time_s,
            "prefill_flops": pre.flops,
            "prefill_bytes": pre.bytes,
            "prefill_arithmetic_intensity": pre.arithmetic_intensity,
            "prefill_bound": pre.bound,
            "_prefill_kernels_builder": partial(_kernel_dicts, roofline.prefill, machine, s.prompt_tokens, chunk),
        })
    mismatch = setup.profile_mismatch
    if mismatch:
        warnings.append(mismatch)
    dec = None

    def build_log() -> list[str]:
        log: list[str] = []
        if budget_log is None:
            boot_log.budget_lines(log, [], facts())
        else:
            log.extend(budget_log)
        log.append(_profile_line(profile, gpu, machine, s.prompt_tokens, batch))
        if mismatch:
            log.append("WARNING " + mismatch)
        if pre is not None:
            log.append(f"Prefill of {s.prompt_tokens:,} tokens: TTFT {pre.time_s * 1e3:.1f} ms, {pre.bound}-bound "
                       f"(compute {pre.compute_time_s * 1e3:.1f} ms vs weight read {pre.memory_time_s * 1e3:.1f} ms).")
        if dec is not None:
            itl = dec.wall_s
            log.append(f"Decode step of {batch} sequences: {dec.time_s * 1e3:.2f} ms, {dec.bound}-bound; "
                       f"weights are {dec.weight_share:.0%} of the {dec.bytes / GIB:.2f} GiB read per step; "
                       f"{batch / itl:,.0f} tok/s in aggregate, {1 / itl:,.1f} tok/s per stream.")
        return log

    if batch > 0:
        # Paged: the decode steps of a request read prompt + 1 ... prompt + output - 1 tokens (the
        # prefill samples the first token), prompt + output / 2 on average.
        read_context = context if s.allocation != "paged" else s.prompt_tokens + s.output_tokens / 2
        dec = roofline.decode_step(machine, batch, read_context, detail=False)
        itl = dec.wall_s  # GPU time + the engine's host time per step (roofline.step_cost)
        tokens_per_s = batch / itl
        served = _served(machine, s, pre, dec, batch, read_context, chunk, rules)
        result.update({
            "decode_step_s": dec.time_s,
            "itl_s": itl,
            "cpu_step_s": dec.cpu_s,
            "decode_weight_read_s": dec.weight_read_s,
            "decode_kv_read_s": dec.kv_read_s,
            "decode_compute_s": dec.compute_time_s,
            "decode_allreduce_s": dec.allreduce_time_s,
            "decode_overhead_s": dec.overhead_s,
            "decode_bytes": dec.bytes,
            "decode_flops": dec.flops,
            "decode_arithmetic_intensity": dec.arithmetic_intensity,
            "decode_tokens_per_s": tokens_per_s,
            "per_stream_tokens_per_s": 1.0 / itl,
            "weight_share": dec.weight_share,
            "decode_bound": dec.bound,
            "tensor_duty": dec.tensor_duty,
            "experts_touched_per_layer": arch.expected_experts_touched(batch) if arch.moe else None,
            "_decode_kernels_builder": partial(_kernel_dicts, roofline.decode_step, machine, batch, read_context),
            **served,
        })
        if s.dollars_per_gpu_hour is not None:
            dollars_per_s = s.dollars_per_gpu_hour * s.tp / SECONDS_PER_HOUR
            result["dollars_per_million_tokens"] = dollars_per_s / tokens_per_s * 1e6
    result["_log_builder"] = build_log
    result["warnings"] = warnings
    result["errors"] = []
    return _make_result(result)


def _served(m: roofline.Machine, s: Scenario, pre: roofline.StepCost, dec: roofline.StepCost, batch: int,
            context: float, chunk: int | None, rules: engine_rules.EngineRules) -> dict:
    """What a benchmark client sees in steady state with `s.concurrency` requests in flight.

    Every request's prefill runs inside the running batch: its marginal cost is the decode step
    with the prompt's pass added (in chunks of the step budget) minus the same step without it.
    Over one request's life (prefill and output_tokens steps) each of the other batch - 1 slots
    turns over once, so a request's mean inter-token time carries (batch - 1) such
    prefills; the batch's cycle is output x ITL + batch prefills. Requests beyond the batch wait
    (Little's law: (concurrency / batch - 1) cycles).
    """
    out = s.output_tokens
    itl = dec.wall_s
    if batch == 1:
        # Alone on the engine: the prompt's passes, each a step with its host time, then output - 1
        # decode steps (the time-domain engine's single request, step for step).
        marginal = pre.time_s
        in_batch = pre.wall_s
    else:
        # The decode step of the running batch with one prompt's pass added, minus the same step
        # without it (dec): what the prompt costs the batch (its weights are already being read).
        per_seq = m.arch.kv_read_tokens(context)
        step = chunk or s.prompt_tokens
        passes = -(-s.prompt_tokens // step)
        piece = s.prompt_tokens / passes
        cached = (s.prompt_tokens - piece) / 2  # the mean prefix an average pass of the prompt attends to
        mixed = roofline.step_cost(m, new_tokens=batch + piece, kv_read_tokens=batch * per_seq + m.arch.kv_read_tokens(cached),
                                   attention_pairs=batch * per_seq + m.arch.causal_pairs(piece, cached),
                                   sampled_tokens=batch + 1, context_tokens=context, detail=False)
        marginal = passes * max(mixed.time_s - dec.time_s, 0.0)
        in_batch = itl + marginal
    cycle_s = out * itl + batch * marginal if batch > 1 else in_batch + (out - 1) * itl
    queue = max(s.concurrency / batch - 1.0, 0.0) * cycle_s
    if batch > 1:
        # A request arrives mid-step, and other prompts may be ahead of it (M/D/1 wait, load rho).
        rho = min(batch * marginal / cycle_s, 0.95)
        queue += 0.5 * itl + rho / (2 * (1 - rho)) * marginal
    if chunk is not None and s.prompt_tokens >= chunk:
        batch_prefill = partial(float, batch * pre.time_s)  # each prompt fills its own passes
    else:
        batch_prefill = partial(_step_time, roofline.prefill, m, s.prompt_tokens, chunk, batch)
    return {
        "ttft_queue_s": queue,
        "ttft_prefill_s": in_batch,
        "served_ttft_s": rules.frontend_s + queue + in_batch,
        "served_itl_s": itl + (batch - 1) * marginal / max(out - 1, 1),
        "served_tokens_per_s": batch * out / cycle_s,
        "prefill_in_batch_s": marginal,
        "_batch_prefill_s_builder": batch_prefill,
    }


def _kernel_dicts(step, *args) -> list[dict]:
    """The kernel rows of a step, recomputed with detail when a view first reads them."""
    return [k.to_dict() for k in step(*args).kernels]


def _step_time(step, *args) -> float:
    return step(*args, detail=False).time_s


def _profile_line(profile, gpu, machine: roofline.Machine, prompt_tokens: int, batch: int) -> str:
    """Which efficiency profile produced the times below, and the fractions it applied."""
    fp8 = machine.fp8_compute
    gemm = (f"GEMMs reach {profile.compute_efficiency(prompt_tokens, fp8):.0%} of {machine.peak_flops / 1e12:,.0f} TFLOP/s "
            f"in the prefill")
    if batch > 0:
        gemm += f" and {profile.compute_efficiency(batch, fp8):.0%} in a {batch}-token decode step"
    line = (f"Efficiency profile {profile.name} ({profile.provenance_kind}): HBM reads reach {profile.bandwidth_efficiency:.0%} "
            f"of {gpu.hbm_bandwidth_bytes_per_s / 1e12:.2f} TB/s; {gemm}.")
    if profile.per_kernel:
        line += (f" Per-kernel step model: each kernel (QKV, attention, O, MLP, lm_head) takes the longer of its bytes "
                 f"and its FLOPs, plus {profile.kernel_overhead_s * 1e6:g} us for each of {machine.kernels_per_step():,} "
                 f"kernels per step.")
    return line


def _vllm_concurrency(arch: Architecture, s: Scenario, mem: memory.MemoryBudget, kv_el: float, max_len: int,
                      max_num_batched_tokens: int) -> tuple[float, int | None]:
    """vLLM's "Maximum concurrency" (pool blocks / blocks one max_model_len request needs) and,
    when not even one such request fits, the longest max_model_len that would (vLLM then refuses
    to start, naming that figure)."""
    b = s.block_size_tokens
    pool_layer_blocks = mem.num_blocks * arch.num_layers
    need = memory.vllm_layer_blocks_per_request(arch, max_len, b, max_num_batched_tokens)
    concurrency = pool_layer_blocks / need if need else 0.0
    if mem.kv_pool_bytes <= 0 or concurrency >= 1:
        return concurrency, None
    low, high = 0, max_len  # binary search, as vLLM's own estimate does
    while low < high:
        mid = (low + high + 1) // 2
        if memory.vllm_layer_blocks_per_request(arch, mid, b, max_num_batched_tokens) <= pool_layer_blocks:
            low = mid
        else:
            high = mid - 1
    return concurrency, low
