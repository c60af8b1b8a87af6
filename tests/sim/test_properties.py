"""Property tests over thousands of random configurations: every catalog model and GPU, every
dtype, allocation, engine and tensor-parallel size, optional limits set or left to the engine.

Valid input never raises and never yields NaN or infinity, and the admission invariants hold:
more memory never fits fewer sequences; a longer prompt never fits more; an FP8 cache fits at
least 2n - 1 sequences where BF16 fits n; the pool never exceeds the usable memory; paged
allocation never fits fewer than contiguous. Invalid input always comes back as an error that
names the field it is about.
"""

import dataclasses
import json
import math

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from kvlab.sim import FIELDS, Result, Scenario, evaluate, gpu_ids, model_ids, profile_names, sweep
from kvlab.sim.catalog import model_entry
from kvlab.sim.scenario import ALLOCATIONS, ENGINES, TP_SIZES
from kvlab.sim.units import KV_DTYPES, WEIGHT_DTYPES

# Thousands of examples per property (about 6,000 random configurations in all), sized to keep
# the file under about 30 s on a shared 2-core machine.
MANY = settings(max_examples=800, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
SOME = settings(max_examples=400, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])

SCENARIO_FIELDS = set(Scenario.__dataclass_fields__)


@st.composite
def scenarios(draw, any_max_model_len=False, **fixed):
    """A random scenario over the whole input space; limits are None ("the engine's default")
    about half the time. max_model_len, when set, is long enough for the request unless
    any_max_model_len asks for the rejected cases too."""
    def maybe(strategy):
        return draw(st.one_of(st.none(), strategy))

    values = dict(
        model=draw(st.sampled_from(model_ids())),
        gpu=draw(st.sampled_from(gpu_ids())),
        gpu_memory_gib=maybe(st.floats(8, 1024)),
        tp=draw(st.sampled_from(TP_SIZES)),
        prompt_tokens=draw(st.one_of(st.integers(1, 8192), st.integers(1, 2**21))),
        output_tokens=draw(st.one_of(st.integers(1, 2048), st.integers(1, 2**20))),
        concurrency=draw(st.integers(1, 100_000)),
        kv_dtype=draw(st.sampled_from(KV_DTYPES)),
        weight_dtype=draw(st.sampled_from(WEIGHT_DTYPES)),
        gpu_memory_utilization=draw(st.floats(0.05, 1.0)),
        force_mha=draw(st.booleans()),
        allocation=draw(st.sampled_from(ALLOCATIONS)),
        block_size_tokens=draw(st.one_of(st.sampled_from([1, 16, 32]), st.integers(1, 1024))),
        engine=draw(st.sampled_from(ENGINES)),
        profile=draw(st.sampled_from(profile_names())),
        max_model_len=maybe(st.integers(1, 2**22)),
        max_num_batched_tokens=maybe(st.integers(1, 2**20)),
        max_num_seqs=maybe(st.integers(1, 1_000_000)),
        mem_fraction_static=maybe(st.floats(0.05, 1.0)),
        kv_cache_free_gpu_mem_fraction=maybe(st.floats(0.05, 0.99)),
        kv_cache_max_tokens=maybe(st.integers(1, 2**31 - 1)),
        dollars_per_gpu_hour=maybe(st.floats(0, 1000)),
    )
    if values["max_model_len"] is not None and not any_max_model_len:
        values["max_model_len"] = values["prompt_tokens"] + values["output_tokens"] + draw(st.integers(0, 2**20))
    values.update(fixed)
    return Scenario(**values)


def usable(s: Scenario):
    """Evaluate, and skip combinations a real engine would reject (tp not fitting the heads,
    forced MHA on MLA, a request longer than max_model_len): those are covered below."""
    r = evaluate(s)
    assume(r.ok)
    return r


def numbers(obj):
    if isinstance(obj, bool) or obj is None or isinstance(obj, str):
        return
    if isinstance(obj, int | float):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from numbers(v)
    elif isinstance(obj, list | tuple):
        for v in obj:
            yield from numbers(v)


@MANY
@given(scenarios(any_max_model_len=True))
def test_valid_input_never_raises_and_stays_finite(s):
    r = evaluate(s)
    d = r.to_dict()
    # The fast constructor builds a true Result; the log and the KV formula are built when read.
    fields = {f.name for f in dataclasses.fields(Result)}
    assert d == {**dataclasses.asdict(r), **{name: getattr(r, name) for name in Result.LAZY}}
    assert r == Result(**{k: v for k, v in d.items() if k in fields})
    assert all(math.isfinite(x) for x in numbers(d)), d
    json.dumps(d, allow_nan=False)
    for e in r.errors:  # rejected combinations still name a field
        assert e["message"] and e["field"] in SCENARIO_FIELDS, e
    if r.ok:
        assert 0 <= r.batch <= min(r.max_sequences, s.concurrency)
        assert r.kv_pool_bytes >= 0 and r.kv_pool_tokens >= 0
        assert (r.itl_s is None) == (r.batch == 0)
        # The pool never exceeds the usable memory, nor what is left of it after weights,
        # non-torch memory and the activation reserve.
        assert r.kv_pool_bytes <= r.usable_bytes <= r.capacity_bytes
        budget = r.usable_bytes - r.weight_bytes - r.non_torch_bytes - r.activation_reserve_bytes
        assert r.kv_pool_bytes <= max(budget, 0.0) * (1 + 1e-12)
        assert r.kv_pool_used_bytes <= r.kv_pool_bytes * (1 + 1e-12)


@SOME
@given(scenarios(), st.floats(1.0, 512.0))
def test_more_memory_never_fits_fewer_sequences(s, extra_gib):
    # vLLM and SGLang pick their scheduler limits (and SGLang its fraction) by memory tier, and
    # crossing a tier can really shrink the pool (test_engines.py shows it); pin them here so the
    # comparison is about memory alone.
    s = s.with_(gpu_memory_gib=s.gpu_memory_gib or 80.0, max_num_batched_tokens=s.max_num_batched_tokens or 2048,
                max_num_seqs=s.max_num_seqs or 256, mem_fraction_static=s.mem_fraction_static or 0.85)
    small = usable(s)
    large = usable(s.with_(gpu_memory_gib=s.gpu_memory_gib + extra_gib))
    assert large.kv_pool_bytes >= small.kv_pool_bytes
    assert large.max_sequences >= small.max_sequences


@SOME
@given(scenarios(), st.integers(1, 100_000))
def test_longer_prompts_never_fit_more(s, extra_tokens):
    short = usable(s)
    long = usable(s.with_(prompt_tokens=s.prompt_tokens + extra_tokens))
    assert long.kv_bytes_per_sequence >= short.kv_bytes_per_sequence
    assert long.max_sequences <= short.max_sequences


@SOME
@given(scenarios(kv_dtype="bf16", kv_cache_max_tokens=None))  # a token cap caps both precisions alike
def test_fp8_cache_fits_at_least_twice_minus_one(s):
    bf16 = usable(s)
    fp8 = usable(s.with_(kv_dtype="fp8"))
    if "indexer key" in bf16.kv_formula:
        # DSA: vLLM's FP8 latent keeps its scales and a BF16 rotary key (656 B against 1,152), and
        # the indexer key is FP8 in both (132 B): 788 / 1,284 of the bytes, more than 1.6x the tokens.
        assert fp8.kv_bytes_per_token * 1284 == bf16.kv_bytes_per_token * 788
        assert fp8.max_sequences >= 1.6 * bf16.max_sequences - 1
        return
    assert fp8.kv_bytes_per_token * 2 == bf16.kv_bytes_per_token
    if bf16.state_bytes_per_sequence:
        # A hybrid model's recurrent state stays BF16 (vLLM's mamba_cache_dtype follows the model):
        # an FP8 cache fits more sequences, but fewer than twice as many.
        assert fp8.state_bytes_per_sequence == bf16.state_bytes_per_sequence
        assert fp8.max_sequences >= bf16.max_sequences
    else:
        assert fp8.max_sequences >= 2 * bf16.max_sequences - 1


@SOME
@given(scenarios(allocation="contiguous"))
def test_paged_never_fits_fewer_than_contiguous(s):
    contiguous = usable(s)
    paged = usable(s.with_(allocation="paged"))
    assert paged.kv_bytes_per_sequence <= contiguous.kv_bytes_per_sequence
    assert paged.max_sequences >= contiguous.max_sequences


# ----- invalid input ---------------------------------------------------------------------

CHOICES = {"tp": TP_SIZES, "kv_dtype": KV_DTYPES, "weight_dtype": WEIGHT_DTYPES, "allocation": ALLOCATIONS,
           "engine": ENGINES, "model": model_ids(), "gpu": gpu_ids(), "profile": profile_names(), "force_mha": (True, False)}
NOT_A_NUMBER = st.one_of(st.text(max_size=8), st.booleans(), st.lists(st.integers(), max_size=2),
                         st.sampled_from([math.nan, math.inf, -math.inf, 10**400, -(10**400), 1j]))


@st.composite
def invalid_field(draw):
    """(field, a value that field does not accept)."""
    name = draw(st.sampled_from(sorted(FIELDS) + sorted(CHOICES)))
    if name in FIELDS:
        b = FIELDS[name]
        bad = [NOT_A_NUMBER, st.floats(max_value=b.low, exclude_max=True, allow_nan=False, allow_infinity=False),
               st.floats(min_value=b.high, exclude_min=True, allow_nan=False, allow_infinity=False)]
        if b.integer:
            bad.append(st.floats(b.low, b.high).filter(lambda x: x != int(x)))
        if not b.optional:
            bad.append(st.none())
        return name, draw(st.one_of(bad))
    allowed = CHOICES[name]
    value = draw(st.one_of(st.text(max_size=12), st.integers(-10, 100), st.none(), st.floats()))
    assume(value not in allowed or isinstance(value, float) and math.isnan(value))
    assume(not (name == "tp" and isinstance(value, bool)))  # True == 1 is a valid tp to Python
    return name, value


@MANY
@given(invalid_field())
def test_invalid_input_gets_an_error_naming_the_field(case):
    name, value = case
    r = evaluate(Scenario(**{name: value}))
    assert not r.ok, (name, value)
    fields = [e["field"] for e in r.errors]
    assert name in fields, (name, value, r.errors)
    message = next(e["message"] for e in r.errors if e["field"] == name)
    if name in FIELDS:
        assert "between" in message or "required" in message, message
    elif name in ("model", "gpu", "profile") or name in CHOICES:
        assert "one of" in message or "must be" in message, message
    assert r.batch == 0 and r.itl_s is None and r.log and r.log[0].startswith("ERROR")


CONFIG_KEYS = sorted({k for m in model_ids() for k in model_entry(m)["config"]} | {"head_dim", "sliding_window_pattern", "layer_types"})
JUNK = st.one_of(st.none(), st.booleans(), st.text(max_size=6), st.integers(-(2**70), 2**70), st.floats(),
                 st.lists(st.one_of(st.integers(-3, 3), st.text(max_size=3)), max_size=4),
                 st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))


@MANY
@given(st.sampled_from(model_ids()), st.dictionaries(st.sampled_from(CONFIG_KEYS), JUNK, min_size=1, max_size=3))
def test_mangled_config_json_gets_errors_not_exceptions(model, changes):
    cfg = {**model_entry(model)["config"], **changes}
    r = evaluate(Scenario(config=cfg))
    d = r.to_dict()
    assert all(math.isfinite(x) for x in numbers(d))
    for e in r.errors:
        assert e["field"] and e["message"], e
        assert e["field"] in SCENARIO_FIELDS or e["field"] in CONFIG_KEYS, e


def _whole(r: Result) -> str:
    # Every field, the lazily built log and formula included; as JSON, so 64 and 64.0 differ.
    return json.dumps(r.to_dict(), sort_keys=True, default=repr)


@SOME
@given(scenarios(any_max_model_len=True), st.sampled_from(["concurrency", "prompt_tokens", "output_tokens", "gpu_memory_utilization"]),
       st.lists(st.one_of(st.integers(-5, 2**21), st.floats(-1.0, 2.0e5), st.sampled_from([None, True, "8", 64.0, 0.5])),
                min_size=1, max_size=6))
def test_a_sweep_gives_exactly_what_evaluate_gives(s, name, values):
    """sim.sweep (a panel's curves) validates the scenario once and each value by its field's rule:
    every result, an error's included, equals evaluating that scenario on its own."""
    assert [_whole(r) for r in sweep(s, name, values)] == [_whole(evaluate(s.with_(**{name: v}))) for v in values]

