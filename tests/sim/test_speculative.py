"""Speculative decoding with a draft model (sim.speculative): the expected tokens a step, what the
draft costs in memory and time, where it pays (a memory-bound decode step) and where it stops
paying (a compute-bound one), the errors a bad draft gets, and the time-domain engine running it."""

from __future__ import annotations

import json

import pytest
from kvlab.sim import Scenario, evaluate
from kvlab.sim.cli import main
from kvlab.sim.engine import EngineConfig, Scheduling, Workload, simulate
from kvlab.sim.engine.block_manager import BlockManager
from kvlab.sim.engine.cli import main as engine_main
from kvlab.sim.engine.setup import build, engine_scenario
from kvlab.sim.speculative import expected_tokens_per_step
from kvlab.sim.units import GIB

# Qwen3-8B on an H100 with Qwen3-0.6B as its draft (same tokenizer, 151,936 tokens).
BASE = dict(model="qwen3-8b", gpu="h100-sxm", prompt_tokens=512, output_tokens=256)
SPEC = dict(BASE, spec_draft_model="qwen3-0.6b", spec_tokens=3, spec_acceptance=0.7)


def test_tokens_a_step_follow_the_geometric_series():
    assert expected_tokens_per_step(3, 0.7) == pytest.approx(1 + 0.7 + 0.49 + 0.343)
    assert expected_tokens_per_step(3, 0.0) == 1.0  # every proposal rejected: the target's own token
    assert expected_tokens_per_step(3, 1.0) == 4.0  # every proposal kept, and the target's next
    r = evaluate(Scenario(**SPEC, concurrency=1))
    assert r.spec_tokens_per_step == pytest.approx(2.533)


def test_the_itl_is_a_cycle_over_its_tokens():
    r = evaluate(Scenario(**SPEC, concurrency=1))
    assert r.itl_s == pytest.approx((r.spec_draft_s + r.spec_verify_s) / r.spec_tokens_per_step)
    plain = evaluate(Scenario(**BASE, concurrency=1))
    assert r.spec_speedup == pytest.approx(plain.itl_s / r.itl_s)
    assert r.decode_tokens_per_s == pytest.approx(r.batch / r.itl_s)


def test_it_pays_in_a_memory_bound_step_and_stops_paying_in_a_compute_bound_one():
    alone = evaluate(Scenario(**SPEC, concurrency=1))
    crowded = evaluate(Scenario(**SPEC, concurrency=256))
    assert alone.decode_bound == "memory" and alone.spec_speedup > 1.8
    # 256 sequences x 4 positions: the verify step is compute-bound and the draft's steps are extra
    assert crowded.batch == 256 and crowded.decode_bound == "compute" and crowded.spec_speedup < 0.8
    speedups = [evaluate(Scenario(**SPEC, concurrency=b)).spec_speedup for b in (1, 8, 32, 64, 128, 256)]
    assert speedups == sorted(speedups, reverse=True)


def test_a_draft_whose_proposals_are_all_rejected_only_costs():
    r = evaluate(Scenario(**dict(SPEC, spec_acceptance=0.0), concurrency=1))
    assert r.spec_tokens_per_step == 1.0 and r.spec_speedup < 1.0


def test_the_draft_takes_memory_beside_the_target():
    plain = evaluate(Scenario(**dict(BASE, prompt_tokens=4096), concurrency=512))
    spec = evaluate(Scenario(**dict(SPEC, prompt_tokens=4096), concurrency=512))
    # Qwen3-0.6B's weights (0.60B parameters in BF16) join the target's
    assert spec.spec_draft_weight_bytes == pytest.approx(0.596e9 * 2, rel=0.01)
    assert spec.weight_bytes - plain.weight_bytes == pytest.approx(spec.spec_draft_weight_bytes)
    # and each sequence holds the draft's cache too: 2 x 28 x 8 x 128 x 2 = 112 KiB a token
    assert spec.spec_draft_kv_bytes_per_sequence == pytest.approx(114_688 * (4096 + 256), rel=0.01)
    assert spec.kv_bytes_per_sequence == pytest.approx(plain.kv_bytes_per_sequence + spec.spec_draft_kv_bytes_per_sequence)
    assert spec.max_sequences < plain.max_sequences * 0.6
    assert spec.kv_pool_bytes < plain.kv_pool_bytes - 1.1 * GIB


def test_the_verify_step_runs_every_position():
    spec = evaluate(Scenario(**SPEC, concurrency=8))
    plain = evaluate(Scenario(**BASE, concurrency=8))
    # 8 sequences x 4 positions through the weights, each position attending to its sequence's cache
    weights = {k["kind"]: k for k in spec.decode_kernels}["weights"]
    assert weights["flops"] == pytest.approx(4 * {k["kind"]: k for k in plain.decode_kernels}["weights"]["flops"])
    # which is read once a sequence, not once a position
    assert spec.decode_kv_read_s == pytest.approx(plain.decode_kv_read_s)


@pytest.mark.parametrize(("draft", "field_text"), [
    ("llama-3.1-8b", "must share the target's vocabulary (151,936 tokens); Llama 3.1 8B has 128,256"),
    ("nope", "unknown model 'nope'"),
    ("../etc", "must be a catalog model id, or unset for no draft"),
])
def test_a_bad_draft_is_named(draft, field_text):
    r = evaluate(Scenario(**dict(SPEC, spec_draft_model=draft)))
    assert [e["field"] for e in r.errors] == ["spec_draft_model"]
    assert field_text in r.errors[0]["message"]


def test_the_cli_takes_a_draft_and_refuses_bad_settings(capsys):
    assert main(["--model", "qwen3-32b", "--spec-draft-model", "qwen3-0.6b", "--concurrency", "1"]) == 0
    assert "speculative decoding with Qwen3-0.6B: 2.53 tokens a step" in capsys.readouterr().out
    assert main(["--spec-draft-model", "qwen3-0.6b", "--spec-tokens", "0", "--spec-acceptance", "2"]) == 2
    err = capsys.readouterr().err
    assert "--spec-tokens: must be between 1 and 16, got 0" in err
    assert "--spec-acceptance: must be between 0 and 1, got 2" in err


def _engine_run(scenario: Scenario, clients: int, seed: int = 0, policy: str = "chunked"):
    """`clients` closed-loop clients sending fixed 512 + 256-token requests, four each."""
    cfg = EngineConfig(scenario=scenario.with_(engine="vllm", prompt_tokens=512, output_tokens=256),
                       workload=Workload(arrival="closed", clients=clients, num_requests=4 * clients, prompt_dist="fixed",
                                         prompt_tokens=512, output_dist="fixed", output_tokens=256, seed=seed),
                       # evaluate() has no per-admission block-table bookkeeping (test_same_step_model.py)
                       scheduling=Scheduling(policy=policy, block_table_s_per_block=0.0))
    run = simulate(cfg)
    assert run.ok and run.completed == 4 * clients, run.errors
    return run, evaluate(engine_scenario(cfg).with_(concurrency=clients))


@pytest.mark.parametrize("clients", [1, 8])
def test_the_engine_decodes_at_the_steady_state_spec_itl(clients):
    """A light load on the time-domain engine sees evaluate()'s speculative ITL: its decode steps
    are sim.speculative's cycle over the expected tokens a cycle."""
    run, r = _engine_run(Scenario(**SPEC), clients)
    assert r.spec_speedup > 1.5
    # one request alone: every decode step is a pure cycle, exactly evaluate()'s
    assert run.itl_s.mean == pytest.approx(r.itl_s, rel=1e-9 if clients == 1 else 0.03)
    assert run.output_tokens_generated == 4 * clients * 256  # every token once, none past the end


def test_in_the_engine_a_draft_that_is_never_right_costs_more_than_none():
    plain, _ = _engine_run(Scenario(**BASE), 4)
    spec, _ = _engine_run(Scenario(**SPEC), 4)
    wasted, _ = _engine_run(Scenario(**dict(SPEC, spec_acceptance=0.0)), 4)
    assert spec.tpot_s.mean < 0.6 * plain.tpot_s.mean
    assert wasted.tpot_s.mean > 1.1 * plain.tpot_s.mean
    assert wasted.duration_s > plain.duration_s


@pytest.mark.parametrize("policy", ["fcfs", "chunked", "lanes"])
def test_a_speculative_engine_run_is_deterministic(policy):
    a, _ = _engine_run(Scenario(**SPEC), 6, seed=5, policy=policy)
    b, _ = _engine_run(Scenario(**SPEC), 6, seed=5, policy=policy)
    assert a.to_dict() == b.to_dict()


def test_the_engine_pool_holds_the_draft_cache_and_the_lookahead_slots():
    plain, _, _ = build(EngineConfig(scenario=Scenario(**BASE, engine="vllm")))
    spec, _, _ = build(EngineConfig(scenario=Scenario(**SPEC, engine="vllm")))
    r = spec.evaluation
    # a block holds the draft's cache beside the target's: 144 + 112 KiB a token
    assert spec.clock.kv_bytes_per_token == pytest.approx(r.kv_bytes_per_token + 114_688)
    assert spec.pool_tokens == pytest.approx(r.kv_pool_bytes / spec.clock.kv_bytes_per_token, abs=spec.block_size)
    assert spec.num_gpu_blocks < 0.6 * plain.num_gpu_blocks
    # one figure: the panels' "KV pool ... tokens" tile (evaluate) is the engine's pool
    assert r.kv_pool_tokens == spec.pool_tokens < plain.pool_tokens
    # a running sequence holds its tokens and the 3 slots its verify step writes ahead of them
    blocks = BlockManager(spec)
    assert blocks.blocks_held(16 * 10) == 11 and blocks.blocks_held(16 * 10 - 3) == 10
    assert BlockManager(plain).blocks_held(16 * 10) == 10


def test_kvlab_engine_takes_the_spec_options(capsys):
    assert engine_main(["--spec-draft-model", "qwen3-0.6b", "--spec-tokens", "4", "--spec-acceptance", "0.8",
                        "--num-requests", "20", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["completed"] == 20
    assert engine_main(["--spec-draft-model", "llama-3.1-8b", "--spec-acceptance", "1.5", "--num-requests", "20"]) == 2
    err = capsys.readouterr().err
    assert "--spec-acceptance: must be between 0 and 1, got 1.5" in err
    assert "--spec-draft-model: must share the target's vocabulary" in err


# ----- EAGLE heads and MTP layers (sim.spec_heads) ------------------------------------------------
def test_an_eagle_head_is_one_layer_of_the_target_and_an_fc():
    plain = evaluate(Scenario(model="llama-3.1-8b", concurrency=1))
    r = evaluate(Scenario(model="llama-3.1-8b", spec_method="eagle", concurrency=1))
    assert r.spec_draft_name == "EAGLE head for Llama 3.1 8B"
    # one decoder layer (attention 41.9M + MLP 176.2M + its two norms), a final norm and the fc,
    # 2 x 4096 x 4096; the embedding and lm_head are the target's
    layer = 4096 * (2 * 4096 + 2 * 1024) + 3 * 4096 * 14336 + 2 * 4096
    assert r.spec_draft_weight_bytes == pytest.approx(2 * (layer + 4096 + 2 * 4096 * 4096))
    assert r.weight_bytes - plain.weight_bytes == pytest.approx(r.spec_draft_weight_bytes)
    # its cache is one layer's: 2 x 8 heads x 128 x 2 bytes = 4 KiB a token, 1/32 of the target's
    assert r.spec_draft_kv_bytes_per_sequence == pytest.approx(r.kv_bytes_per_sequence / 33)
    # a draft step is one layer and the lm_head, not a whole model: far below the target's step
    assert r.spec_draft_s / r.scenario["spec_tokens"] < 0.2 * plain.decode_step_s
    assert r.spec_speedup > 1.5


def test_deepseek_v3_mtp_layer_is_the_checkpoints_extra_layer():
    s = Scenario(model="deepseek-v3", gpu="h200", tp=8, weight_dtype="fp8", engine="vllm", spec_method="mtp", concurrency=1)
    plain = evaluate(s.with_(spec_method="draft"))
    r = evaluate(s)
    assert not r.errors and r.spec_draft_name == "DeepSeek-V3 MTP layer"
    # The model card: "685B, which includes 671B of the Main Model weights and 14B of the
    # Multi-Token Prediction (MTP) Module weights"; the 14B count the MTP module's own copies of the
    # embedding and output head (2 x 129,280 x 7,168 = 1.85B), which vLLM shares with the target.
    params = r.spec_draft_weight_bytes * 8  # FP8: one byte a parameter, over 8 ranks (MLA's replicated parts aside)
    assert params + 2 * 129_280 * 7_168 == pytest.approx(14e9, rel=0.05)
    # its cache is one MLA layer's latent: 576 elements a token, 1/61 of the target's
    assert r.spec_draft_kv_bytes_per_sequence == pytest.approx(plain.kv_bytes_per_sequence / 61, rel=1e-6)
    assert r.spec_speedup > 1.3


def test_mtp_is_refused_by_name_for_a_model_without_mtp_layers_and_read_from_a_pasted_config():
    r = evaluate(Scenario(model="qwen3-8b", spec_method="mtp"))
    assert [e["field"] for e in r.errors] == ["spec_method"]
    assert "Qwen3-8B has none" in r.errors[0]["message"] and "num_nextn_predict_layers" in r.errors[0]["message"]
    # the same model pasted with Qwen3-Next's spelling of one MTP layer
    from kvlab.sim import catalog
    config = dict(catalog.model_entry("qwen3-8b")["config"], mtp_num_hidden_layers=1)
    r = evaluate(Scenario(config=config, spec_method="mtp", concurrency=1))
    assert not r.errors and r.spec_draft_name.endswith("MTP layer") and r.spec_speedup > 1.0
    # a head replaces a draft model: naming both is refused
    r = evaluate(Scenario(model="qwen3-8b", spec_method="eagle", spec_draft_model="qwen3-0.6b"))
    assert [e["field"] for e in r.errors] == ["spec_draft_model"]
    r = evaluate(Scenario(spec_method="medusa"))
    assert [e["field"] for e in r.errors] == ["spec_method"]


@pytest.mark.parametrize("scenario", [Scenario(model="llama-3.1-8b", spec_method="eagle", spec_tokens=4, spec_acceptance=0.75),
                                      Scenario(model="deepseek-v3", gpu="h200", tp=8, weight_dtype="fp8", spec_method="mtp",
                                               spec_tokens=1, spec_acceptance=0.85)], ids=["eagle", "mtp"])
def test_the_engine_runs_heads_at_the_steady_state_itl(scenario):
    run, r = _engine_run(scenario, 1)
    assert r.spec_speedup > 1.2 and run.itl_s.mean == pytest.approx(r.itl_s, rel=1e-9)


def test_the_cli_takes_a_spec_method(capsys):
    assert main(["--model", "llama-3.1-8b", "--spec-method", "eagle", "--concurrency", "1"]) == 0
    assert "speculative decoding with EAGLE head for Llama 3.1 8B" in capsys.readouterr().out
    assert main(["--spec-method", "mtp"]) == 2
    assert "--spec-method: mtp needs a model whose config.json has MTP layers" in capsys.readouterr().err
    assert engine_main(["--spec-method", "eagle", "--num-requests", "10", "--json"]) == 0
