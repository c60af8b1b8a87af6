"""One validator per field (sim.fields), shared by the steady-state simulator and the engine."""

import pytest
from kvlab.sim import Scenario, evaluate
from kvlab.sim import fields as F
from kvlab.sim import scenario as scenario_mod
from kvlab.sim.engine import EngineConfig, simulate
from kvlab.sim.engine import config as engine_config

BAD_NUMBERS = [10**400, -(10**5000), float("nan"), float("inf"), -float("inf"), 1e308, True, "12", [1], {"a": 1}, None, 2.5]


def test_one_table_and_one_checker_for_both():
    assert scenario_mod.FIELDS is F.SCENARIO_FIELDS
    assert engine_config.ENGINE_FIELDS is F.ENGINE_FIELDS
    assert not hasattr(engine_config, "Bound")  # no private copy of the rules in the engine
    # The fields both tables name have the same bounds.
    for name in set(F.SCENARIO_FIELDS) & set(F.ENGINE_FIELDS):
        a, b = F.SCENARIO_FIELDS[name], F.ENGINE_FIELDS[name]
        assert (a.low, a.high, a.integer) == (b.low, b.high, b.integer), name


@pytest.mark.parametrize("value", BAD_NUMBERS, ids=F.shown)
def test_check_number_never_raises_and_names_the_range(value):
    bound = F.Bound(1, 100, True, "x")
    issue = F.check_number("n", value, bound)
    assert issue is not None and issue.field == "n"
    assert "between 1 and 100" in issue.message
    assert len(issue.message) < 200


def test_huge_ints_are_described_by_size():
    assert F.shown(10**400) == "a 401-digit integer"
    assert "5,001-digit" in F.shown(-(10**5000))


@pytest.mark.parametrize("name", ["rate_per_s", "num_requests", "clients", "seed", "think_time_s"])
@pytest.mark.parametrize("value", [10**400, float("nan"), True, [1]], ids=F.shown)
def test_engine_big_and_wrong_values_are_issues(name, value):
    r = simulate(EngineConfig().with_(**{name: value}))
    assert not r.ok and r.errors[0]["field"] == name


def test_integral_floats_are_accepted_and_become_ints_in_both():
    r = simulate(EngineConfig().with_(num_requests=20.0, rate_per_s=5, clients=4.0))
    assert r.ok and r.completed == 20 and r.num_requests == 20
    assert r.config["workload"]["num_requests"] == 20 and isinstance(r.config["workload"]["num_requests"], int)
    s = evaluate(Scenario(prompt_tokens=4096.0, tp=2.0))
    assert s.ok and s.scenario["prompt_tokens"] == 4096 and isinstance(s.scenario["prompt_tokens"], int)
    assert isinstance(s.scenario["tp"], int)
    assert evaluate(Scenario(prompt_tokens=4096.5)).errors[0]["field"] == "prompt_tokens"
    assert simulate(EngineConfig().with_(num_requests=20.5)).errors[0]["field"] == "num_requests"


@pytest.mark.parametrize("profile", ["../models/qwen3-8b", "/etc/passwd", "..", ".hidden", "a/b", "a\\b", "", "x" * 101])
def test_profiles_are_names_never_paths(profile):
    r = evaluate(Scenario(profile=profile))
    assert [e["field"] for e in r.errors] == ["profile"]
    assert "names, not paths" in r.errors[0]["message"]


@pytest.mark.parametrize("field", ["gpu", "model", "profile"])
@pytest.mark.parametrize("value", [["h100-sxm"], {"a": 1}, 3, None])
def test_catalog_names_of_the_wrong_type_are_issues(field, value):
    r = evaluate(Scenario(**{field: value}))
    assert field in [e["field"] for e in r.errors]


def test_bool_is_not_a_choice_of_numbers():
    assert evaluate(Scenario(tp=True)).errors[0]["field"] == "tp"
    assert evaluate(Scenario(force_mha=1)).errors[0]["field"] == "force_mha"
    assert simulate(EngineConfig().with_(prefix_caching=0)).errors[0]["field"] == "prefix_caching"


def test_wrong_group_types_are_issues():
    from dataclasses import replace
    r = simulate(replace(EngineConfig(), workload={"rate_per_s": 2}))
    assert r.errors[0]["field"] == "workload"
