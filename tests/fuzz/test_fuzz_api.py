"""Fuzz the steady-state API: sim.evaluate(Scenario(...)) with any value in any field."""

from __future__ import annotations

from dataclasses import fields

from hypothesis import given
from hypothesis import strategies as st
from kvlab.sim import Scenario, catalog, evaluate
from kvlab.sim.fields import SCENARIO_FIELDS

from .support import batches, check_each, finite_numbers, fuzz, hostile, in_range, subsets

CHOICES = {
    "model": st.sampled_from(catalog.model_ids()), "gpu": st.sampled_from(catalog.gpu_ids()),
    "tp": st.sampled_from([1, 2, 4, 8]), "kv_dtype": st.sampled_from(["bf16", "fp8", "int8", "fp16"]),
    "weight_dtype": st.sampled_from(["bf16", "fp8", "int4"]), "allocation": st.sampled_from(["contiguous", "paged"]),
    "engine": st.sampled_from(["textbook", "vllm", "sglang"]), "force_mha": st.booleans(),
    "engine_version": st.one_of(st.none(), st.sampled_from(["0.6.0", "0.8", "0.19.0", "latest"]), st.text(max_size=8)),
    "profile": st.sampled_from(["textbook", "h100-published", "../models/qwen3-8b", "/etc/passwd"]),
}
NAMES = [f.name for f in fields(Scenario) if f.name != "config"]


def _value(name):
    good = CHOICES.get(name)
    if good is None and name not in SCENARIO_FIELDS:
        good = st.text(max_size=8)  # a field added since: any text is at least hostile
    elif good is None:
        b = SCENARIO_FIELDS[name]
        good = in_range(b.low, b.high, b.integer)
    return st.one_of(good, good, hostile)


scenarios = subsets({name: _value(name) for name in NAMES}, max_size=8)


@fuzz("api")
@given(batches(scenarios))
def test_evaluate_never_raises_and_answers_consistently(batch):
    check_each(batch, _check_changes)


def _check_changes(changes):
    r = evaluate(Scenario(**changes))
    for e in r.errors:
        assert isinstance(e["field"], str) and isinstance(e["message"], str) and len(e["message"]) < 600
    if r.errors:
        assert r.batch == 0
        return
    assert not finite_numbers(r.to_dict()), finite_numbers(r.to_dict())
    assert 0 <= r.kv_pool_bytes <= r.capacity_bytes
    assert r.batch <= r.max_sequences or r.max_sequences == 0
    for name, bound in SCENARIO_FIELDS.items():  # what was used is what was asked (integral floats as ints)
        if name in changes and changes[name] is not None:
            used = r.scenario[name]
            assert used == changes[name] and (not bound.integer or type(used) is int)
