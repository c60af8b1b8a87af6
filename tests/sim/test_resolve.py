"""`sim.resolve()` is the public way to the parts an evaluation uses, its caches are keyed by
value, and one `clear_caches()` makes a changed data file take effect (issue 33: callers reached
into evaluate's private cache and architecture functions)."""

import json

import pytest
from kvlab.sim import InputError, Scenario, catalog, clear_caches, evaluate, profiles, resolve
from kvlab.sim.engine.setup import machine_for


def test_resolve_gives_the_parts_evaluate_uses():
    s = Scenario(model="qwen3-8b", gpu="h200", profile="h200", engine="vllm")
    parts = resolve(s)
    r = evaluate(s)
    assert parts.arch.max_position_embeddings == r.context_tokens and parts.arch.name == r.model_name
    assert parts.gpu.name == r.gpu_name and parts.profile.name == r.profile and parts.rules.version == r.engine_version
    assert parts.machine is machine_for(s)  # the time-domain engine shares it


def test_resolve_raises_for_bad_input_naming_the_field():
    with pytest.raises(InputError) as e:
        resolve(Scenario(model="qwen3-8b", tp=3))
    assert e.value.issues[0].field == "tp"


def test_equal_pasted_configs_share_one_cached_model():
    cfg = catalog.model_entry("qwen3-8b")["config"]
    a, b = resolve(Scenario(config=json.loads(json.dumps(cfg)))), resolve(Scenario(config=json.loads(json.dumps(cfg))))
    assert a.arch is b.arch and a.machine is b.machine  # keyed by the config's text, not the dict's identity


def test_clear_caches_makes_a_changed_profile_take_effect(monkeypatch, tmp_path):
    monkeypatch.setenv("KVLAB_DATA_DIR", str(tmp_path))
    user = tmp_path / "profiles"
    user.mkdir()
    shipped = json.loads((profiles.PROFILE_DIR / "textbook.json").read_text())
    path = user / "mine.json"
    path.write_text(json.dumps({**shipped, "name": "mine", "bandwidth_efficiency": 0.8}))
    clear_caches()
    try:
        before = evaluate(Scenario(profile="mine")).itl_s
        path.write_text(json.dumps({**shipped, "name": "mine", "bandwidth_efficiency": 0.4}))
        assert evaluate(Scenario(profile="mine")).itl_s == before  # read once per process...
        clear_caches()
        assert evaluate(Scenario(profile="mine")).itl_s > 1.5 * before  # ...until the caches are cleared
    finally:
        monkeypatch.undo()
        clear_caches()


def test_the_score_matrix_flashattention_never_stores_is_heads_times_tokens_squared():
    """Qwen3-8B has 32 query heads: a 32k prefill's BF16 scores for one layer are 32 x 32,768^2 x 2 B = 64 GiB,
    and the size grows with the square of the prompt while the cache grows linearly."""
    from kvlab.sim import Scenario
    from kvlab.sim.resolve import resolve_architecture

    arch = resolve_architecture(Scenario(model="qwen3-8b"))
    assert arch.num_q_heads == 32
    assert arch.attention_scores_bytes(32768) == 64 * 2**30
    assert arch.attention_scores_bytes(16384) * 4 == arch.attention_scores_bytes(32768)
