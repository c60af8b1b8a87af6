"""What a scenario resolves to before anything is computed, each part cached by value.

`resolve(scenario)` returns the architecture, GPU, efficiency profile, engine rules and hardware
model (roofline.Machine) one evaluation uses: the public way to ask for them (calibration, the
time-domain engine, tests). A panel re-evaluates on every slider move and changes one field at a
time, so everything here is cached, keyed by the values it depends on (model id or pasted
config text, profile name, GPU id, dtypes, ...), never by object identity. The data files never
change while a process runs; whoever changes one (a test writing a profile, a fit editing the
engine rules) calls `clear_caches()`, which forgets every derived object at once.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache, lru_cache, partial
from operator import attrgetter

from . import catalog, engine_defaults, engine_rules, memory, profiles, roofline, spec_heads
from .architecture import Architecture
from .catalog import GPU
from .errors import InputError, Issue
from .hf_config import from_config
from .kv_formula import bytes_per_token_formula
from .parallelism import rank_holds
from .profiles import EfficiencyProfile, load_profile
from .result import RESULT_DEFAULTS
from .scenario import Scenario, validate
from .units import DTYPE_BYTES, FP4_DTYPES, GIB, KV_DTYPES

CACHE_LIMIT = 256  # entries per cache before it starts over (a long session sweeps many settings)


@dataclass(frozen=True)
class Resolved:
    """The parts one evaluation of a scenario is computed from."""

    scenario: Scenario  # validated (integral floats in integer fields are ints)
    arch: Architecture
    gpu: GPU  # with gpu_memory_gib applied
    profile: EfficiencyProfile
    rules: engine_rules.EngineRules
    machine: roofline.Machine


def resolve(s: Scenario) -> Resolved:
    """The parts `s` is evaluated with. Raises InputError (naming the field) for bad input."""
    s = validated(s)
    arch = resolve_architecture(s)
    check_parallelism(arch, s)
    rules = engine_rules.rules(s.engine, s.engine_version)
    profile = load_profile(s.profile)
    gpu = gpu_of(s)
    check_kv_dtype(s, gpu, rules)
    return Resolved(s, arch, gpu, profile, rules, machine_for(s, arch, gpu, profile, rules))


def clear_caches() -> None:
    """Forget every cached object derived from the data files: validated scenarios,
    architectures, profiles, engine rules, hardware models and setups. Call it after changing a
    profile file or the engine-rules table in place."""
    for c in (_VALID, _MACHINES, _SETUPS):
        c.clear()
    for f in (_catalog_architecture, _cached_pasted_architecture, profiles._load_profile, engine_rules.rules):
        f.cache_clear()


# ----- the scenario ---------------------------------------------------------------------------
_VALID: dict = {}


def validated(s: Scenario) -> Scenario:
    """validate(s), once per distinct set of field values. The key holds every value and its type
    (True is not 1 to the validator); a pasted config is checked by from_config, not here, so only
    whether there is one enters the key. Unhashable values (a list where a number belongs) are
    validated every time and rejected."""
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
        return hit if config is None else valid_copy(hit, config=config)
    valid = validate(s)  # integral floats in integer fields become ints (sim.fields)
    if len(_VALID) > 2 * CACHE_LIMIT:
        _VALID.clear()
    _VALID[key] = valid if config is None else valid_copy(valid, config=None)
    return valid


def valid_copy(s: Scenario, **changes) -> Scenario:
    """A copy of a validated scenario with `changes`, which the caller has checked (no second
    validation: `validated`'s key says the other fields are the same; `sweep` checks its field)."""
    obj = object.__new__(Scenario)
    obj.__dict__.update(s.__dict__, **changes)
    return obj


# ----- the architecture -----------------------------------------------------------------------
def architecture_key(s: Scenario) -> tuple | None:
    """What the architecture of `s` is a function of, as a hashable value: the catalog id or the
    pasted config's JSON text, and force_mha. None for a config that is not JSON-shaped (a
    Python caller's dict holding other objects): it is parsed every time and never cached."""
    force = s.force_mha is True
    if s.config is None:
        return (s.model, force)
    try:
        return ("config", json.dumps(s.config, sort_keys=True, allow_nan=True), force)
    except (TypeError, ValueError):
        return None


def resolve_architecture(s: Scenario) -> Architecture:
    key = architecture_key(s)
    if key is None:
        return _pasted_architecture(s.config, s.force_mha is True)
    if len(key) == 2:
        return _catalog_architecture(*key)
    return _cached_pasted_architecture(key[1], key[2])


@cache
def _catalog_architecture(model_id: str, force_mha: bool) -> Architecture:
    """Catalog models parse once per process. Unknown ids raise, and exceptions are not cached."""
    entry = catalog.model_entry(model_id)
    return _maybe_forced_mha(from_config(entry["config"], name=entry["kvlab"]["name"], meta=entry["kvlab"]), force_mha)


@lru_cache(maxsize=32)
def _cached_pasted_architecture(config_json: str, force_mha: bool) -> Architecture:
    return _pasted_architecture(json.loads(config_json), force_mha)


def _pasted_architecture(config, force_mha: bool) -> Architecture:
    name = config.get("_name_or_path") if isinstance(config, dict) else None
    return _maybe_forced_mha(from_config(config, name=str(name or "pasted config.json")), force_mha)


def _maybe_forced_mha(arch: Architecture, force_mha: bool) -> Architecture:
    return arch.with_forced_mha() if force_mha and arch.attention_kind != "MHA" else arch


def check_parallelism(arch: Architecture, s: Scenario) -> None:
    """The scenario's parallelism fits the model: attention heads split over the tp / attention_dp
    GPUs of an attention group, experts over the tp GPUs when expert_parallel."""
    if s.expert_parallel and arch.moe is None:
        raise InputError(Issue("expert_parallel", f"needs a mixture-of-experts model; {arch.name} has no routed experts"))
    if s.expert_parallel and arch.moe.num_experts % s.tp:
        raise InputError(Issue("expert_parallel", f"needs tp ({s.tp}) to divide the {arch.moe.num_experts} experts"))
    if s.pp > arch.num_layers:
        raise InputError(Issue("pp", f"must be at most the model's {arch.num_layers} layers; got {s.pp}"))
    tp = s.tp // s.attention_dp
    field = "tp" if s.attention_dp == 1 else "attention_dp"
    if arch.num_q_heads % tp:
        raise InputError(Issue(field, f"{_group(s)} must divide num_attention_heads ({arch.num_q_heads}); got {tp}"))
    kv = arch.num_kv_heads
    if arch.mla is None and kv % tp and tp % kv:
        raise InputError(Issue(field, f"{_group(s)} must divide num_key_value_heads ({kv}) or be a multiple of it; got {tp}"))
    problem = arch.linear.tp_issue(tp) if arch.linear is not None else None
    if problem:  # the recurrent mixer's own split rule (sim/layer_parts.py)
        raise InputError(Issue(field, f"{_group(s)} {problem}; got {tp}"))


def check_kv_dtype(s: Scenario, gpu: GPU, rules: engine_rules.EngineRules) -> None:
    """An FP4 cache needs an engine that stores one (an engine rule) and NVIDIA's FP4 tensor cores
    (Blackwell: the NVFP4 attention kernels of TensorRT-LLM, FlashInfer and SGLang are theirs)."""
    if s.kv_dtype not in FP4_DTYPES:
        return
    if not rules.fp4_kv_cache:
        raise InputError(Issue("kv_dtype", f"nvfp4 is not a KV cache dtype of {s.engine} {rules.version}; "
                                           f"choose one of {', '.join(k for k in KV_DTYPES if k not in FP4_DTYPES)}, "
                                           f"or the sglang or textbook engine"))
    if not _nvidia_fp4(gpu):
        allowed = ", ".join(g for g in catalog.gpu_ids() if _nvidia_fp4(catalog.gpu(g)))
        raise InputError(Issue("kv_dtype", f"nvfp4 needs an NVIDIA GPU with FP4 tensor cores ({allowed}); the {gpu.name} is not one"))


def _nvidia_fp4(gpu: GPU) -> bool:
    return bool(gpu.fp4_dense_flops) and gpu.name.startswith("NVIDIA")


def _group(s: Scenario) -> str:
    return "tp" if s.attention_dp == 1 else "tp / attention_dp (the GPUs of one attention group)"


# ----- the hardware ---------------------------------------------------------------------------
def gpu_of(s: Scenario) -> GPU:
    gpu = catalog.gpu(s.gpu)
    return gpu.with_memory_bytes(s.gpu_memory_gib * GIB) if s.gpu_memory_gib is not None else gpu


_MACHINES: dict = {}


def machine_for(s: Scenario, arch: Architecture | None = None, gpu=None, profile=None, rules=None) -> roofline.Machine:
    """The hardware model of one scenario, built once and shared by evaluate() and the
    time-domain engine (which asks for it with the same scenario). It carries the engine's host
    time per step (an engine rule), so both time a step with the same roofline.step_cost."""
    arch_key = architecture_key(s)
    arch = arch or resolve_architecture(s)
    rules = rules or engine_rules.rules(s.engine, s.engine_version)
    key = None if arch_key is None else (arch_key, s.profile, s.gpu, s.gpu_memory_gib, s.tp, s.attention_dp,
                                         s.expert_parallel, s.pp, s.weight_dtype, s.kv_dtype,
                                         s.engine == "textbook", rules.cpu_step_s, rules.cpu_row_s)
    hit = _MACHINES.get(key)
    if hit is not None:
        return hit
    profile = profile or load_profile(s.profile)
    gpu = gpu or gpu_of(s)
    fp8_compute = s.weight_dtype == "fp8" and bool(gpu.fp8_dense_flops)
    fp4_compute = s.weight_dtype in FP4_DTYPES and bool(gpu.fp4_dense_flops)
    machine = roofline.Machine(arch, gpu, profile, s.tp, DTYPE_BYTES[s.weight_dtype], DTYPE_BYTES[s.kv_dtype], fp8_compute,
                               fp4_compute=fp4_compute,
                               weight_dtype=s.weight_dtype, model_id=s.model if s.config is None else "",
                               embedding_bytes_per_param=embedding_bytes_per_param(s), cpu_step_s=rules.cpu_step_s,
                               cpu_row_s=rules.cpu_row_s, attention_dp=s.attention_dp, expert_parallel=s.expert_parallel,
                               pp=s.pp)
    if key is not None:
        if len(_MACHINES) > CACHE_LIMIT:
            _MACHINES.clear()
        _MACHINES[key] = machine
    return machine


def embedding_bytes_per_param(s: Scenario) -> float | None:
    """Real engines load a quantized checkpoint's embedding and lm_head in BF16; the textbook
    panel stores every weight at the chosen dtype."""
    if s.engine == "textbook" or DTYPE_BYTES[s.weight_dtype] >= DTYPE_BYTES["bf16"]:
        return None
    return DTYPE_BYTES["bf16"]


# ----- the setup: everything but the workload --------------------------------------------------
# The Scenario fields a setup depends on besides the architecture (architecture_key stands for
# model, config and force_mha): everything but the workload (prompt_tokens, output_tokens,
# concurrency, allocation, max_model_len) and the price.
_SETUP_FIELDS = attrgetter("gpu", "gpu_memory_gib", "tp", "attention_dp", "expert_parallel", "pp", "kv_dtype", "weight_dtype",
                           "gpu_memory_utilization",
                           "block_size_tokens", "engine", "engine_version", "profile", "max_num_batched_tokens",
                           "max_num_seqs", "mem_fraction_static", "kv_cache_free_gpu_mem_fraction",
                           "kv_cache_max_tokens", "model", "spec_draft_model", "spec_method")


@dataclass(frozen=True)
class Draft:
    """A speculative decoding draft model as it runs beside the target: on the same GPUs, at the
    same tensor-parallel size, weight and KV precisions (vLLM's default for a draft model)."""

    arch: Architecture
    machine: roofline.Machine
    weight_bytes: float  # one rank
    kv_bytes_per_token: float  # one rank


def draft_of(s: Scenario, target: Architecture) -> Draft | None:
    """The draft of a validated scenario, None without one (spec_method "draft" with no
    spec_draft_model). Raises InputError naming spec_draft_model when the draft is unknown, cannot
    be split over tp, or does not share the target's vocabulary (its proposals are token ids the
    target must score), or spec_method for a head the target cannot have (sim.spec_heads)."""
    if s.spec_method != "draft":
        return _head_of(s, target)
    if s.spec_draft_model is None:
        return None
    ds = valid_copy(s, model=s.spec_draft_model, config=None, force_mha=False, spec_draft_model=None, expert_parallel=False)
    try:
        arch = resolve_architecture(ds)
        check_parallelism(arch, ds)
    except InputError as e:
        raise InputError(Issue("spec_draft_model", e.issues[0].message)) from None
    if arch.vocab_size != target.vocab_size:
        raise InputError(Issue("spec_draft_model", f"must share the target's vocabulary ({target.vocab_size:,} tokens); "
                                                   f"{arch.name} has {arch.vocab_size:,}"))
    weights = memory.weight_bytes_per_rank(arch, DTYPE_BYTES[s.weight_dtype], s.tp, embedding_bytes_per_param(s),
                                           s.attention_dp, s.pp)
    return Draft(arch, machine_for(ds, arch), weights, arch.kv_bytes_per_token(DTYPE_BYTES[s.kv_dtype], s.tp, s.attention_dp, s.pp))


def _head_of(s: Scenario, target: Architecture) -> Draft:
    """An EAGLE head or the target's MTP layers (sim.spec_heads), at the target's precisions and tp."""
    if s.spec_draft_model is not None:
        raise InputError(Issue("spec_draft_model", f"must be unset with spec_method {s.spec_method}: the "
                                                   f"{'head' if s.spec_method == 'eagle' else 'MTP layers'} "
                                                   f"replace a separate draft model"))
    config = s.config if s.config is not None else catalog.model_entry(s.model)["config"]
    head = spec_heads.head_architecture(target, s.spec_method, config)
    # The head's own hardware model: its cache key names the head and the target, so it is never
    # the target's (it is never parsed: the architecture is passed in).
    ds = valid_copy(s, config={"kvlab_spec_head": s.spec_method, "target": architecture_key(s)}, spec_draft_model=None)
    weights = head.per_rank(spec_heads.head_params(head), s.tp, s.attention_dp) * DTYPE_BYTES[s.weight_dtype]
    return Draft(head, machine_for(ds, head), weights, head.kv_bytes_per_token(DTYPE_BYTES[s.kv_dtype], s.tp, s.attention_dp, s.pp))


@dataclass(frozen=True)
class Setup:
    """What an evaluation derives from the hardware, engine and model fields alone: the hardware
    model, the engine's limits, the HBM budget and the Result fields they fix. Nothing here
    depends on the prompt or the batch, so a slider over either (and the 64-point prompt sweep
    of a chart) reuses it; built by `setup`, once per distinct set of those fields."""

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
    draft: Draft | None  # the speculative decoding draft model, if any
    profile_mismatch: str | None  # the warning when the profile was fitted on another GPU
    result_base: dict  # Result's defaults with the fields fixed here filled in


_SETUPS: dict = {}


def setup(s: Scenario) -> Setup:
    """The setup of a validated scenario, cached by the values it depends on. Raises InputError
    for a tp that does not divide the heads."""
    arch_key = architecture_key(s)
    key = None if arch_key is None else (arch_key, _SETUP_FIELDS(s))
    hit = _SETUPS.get(key)
    if hit is not None:
        return hit
    arch = resolve_architecture(s)
    check_parallelism(arch, s)
    profile = profiles._load_profile(s.profile)  # the name was checked by validate
    rules = engine_rules.rules(s.engine, s.engine_version)
    gpu = gpu_of(s)
    check_kv_dtype(s, gpu, rules)
    kv_el = DTYPE_BYTES[s.kv_dtype]
    kv_per_token = arch.kv_bytes_per_token(kv_el, s.tp, s.attention_dp, s.pp)
    draft = draft_of(s, arch)
    limits = engine_defaults.resolve(s.engine, gpu, s.tp, s.max_num_batched_tokens, s.max_num_seqs, s.mem_fraction_static,
                                     s.kv_cache_free_gpu_mem_fraction)
    mem = memory.budget(
        arch=arch, gpu=gpu, engine=s.engine, tp=s.tp, attention_dp=s.attention_dp, pp=s.pp,
        weight_bytes_per_param=DTYPE_BYTES[s.weight_dtype],
        kv_bytes_per_token=kv_per_token, gpu_memory_utilization=s.gpu_memory_utilization,
        mem_fraction_static=limits.mem_fraction_static or 0.0, max_num_batched_tokens=limits.max_num_batched_tokens,
        max_num_seqs=limits.max_num_seqs or 0, block_size_tokens=s.block_size_tokens,
        rules=rules, embedding_bytes_per_param=embedding_bytes_per_param(s),
        draft_weight_bytes=draft.weight_bytes if draft else 0.0,
        kv_cache_free_gpu_mem_fraction=limits.kv_cache_free_gpu_mem_fraction or 0.0,
        kv_cache_max_tokens=s.kv_cache_max_tokens,
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
        model_family=family_of(arch),
        kv_bytes_per_token=kv_per_token,
        state_bytes_per_sequence=arch.state_bytes_per_sequence(s.tp, s.attention_dp, s.pp),
        spec_draft_name=draft.arch.name if draft else "",
        spec_draft_weight_bytes=draft.weight_bytes if draft else 0.0,
        _kv_formula_builder=partial(bytes_per_token_formula, arch, kv_el, s.tp, s.attention_dp, s.pp),
        rank_holds=rank_holds(arch, s),
        params_total=arch.params_total,
        params_active=arch.params_active,
        capacity_bytes=mem.capacity_bytes,
        usable_bytes=mem.usable_bytes,
        context_reserve_bytes=mem.context_reserve_bytes,
        weight_bytes=mem.weight_bytes,
        non_torch_bytes=mem.non_torch_bytes,
        activation_reserve_bytes=mem.activation_reserve_bytes,
        kv_pool_bytes=mem.kv_pool_bytes,
        # The tokens the pool holds, a draft's cache included (the engine's pool and the panels' tile).
        kv_pool_tokens=(memory.pool_tokens_with_draft(mem, kv_per_token, draft.kv_bytes_per_token, s.block_size_tokens)
                        if draft else mem.kv_pool_tokens),
        startup_bytes=mem.startup_bytes,
        kv_num_blocks=mem.num_blocks,
        effective_max_num_batched_tokens=limits.max_num_batched_tokens,
        effective_mem_fraction_static=limits.mem_fraction_static,
        activation_room_bytes=mem.activation_room_bytes if s.engine == "sglang" else None,
        engine_reserve_estimate_bytes=(engine_defaults.sglang_reserve_estimate_bytes(mem.capacity_bytes, s.tp, limits)
                                       if s.engine == "sglang" else None),
        effective_kv_cache_free_gpu_mem_fraction=limits.kv_cache_free_gpu_mem_fraction,
        peak_flops=machine.peak_flops,
        hbm_bandwidth_bytes_per_s=gpu.hbm_bandwidth_bytes_per_s,
        ridge_intensity=machine.ridge_intensity,
        hbm_bandwidth_achieved_bytes_per_s=machine.achieved_bandwidth_bytes_per_s,
        achieved_peak_flops=machine.achieved_peak_flops,
        datasheet_ridge_intensity=machine.peak_flops / gpu.hbm_bandwidth_bytes_per_s,
        profile=profile.name,
        engine_version=rules.version,
        cpu_step_s=rules.cpu_step_s,
        ttft_frontend_s=rules.frontend_s,
        step_model="per_kernel" if profile.per_kernel else "whole_step",
    )
    built = Setup(
        arch=arch, gpu=gpu, profile=profile, rules=rules, kv_bytes_per_element=kv_el, kv_bytes_per_token=kv_per_token,
        limits=limits, mem=mem, machine=machine,
        # Real engines split a long prompt into passes of max_num_batched_tokens (chunked
        # prefill); the textbook panel runs it in one pass.
        chunk_tokens=None if s.engine == "textbook" else limits.max_num_batched_tokens, draft=draft,
        profile_mismatch=mismatch, result_base={**RESULT_DEFAULTS, **fixed},
    )
    if key is not None:
        if len(_SETUPS) > CACHE_LIMIT:
            _SETUPS.clear()
        _SETUPS[key] = built
    return built


def family_of(arch) -> str:
    """"mla", "moe" or "dense": the families whose prediction errors are told apart (docs/sim.md,
    Validation; sim.fidelity). An MLA model with experts (DeepSeek-V3) counts as MLA."""
    return "mla" if arch.mla is not None else "moe" if arch.moe is not None else "dense"


def model_family(s: Scenario) -> str:
    """The family of the scenario's model (family_of). Raises InputError for a scenario resolve() refuses."""
    return family_of(resolve(s).arch)
