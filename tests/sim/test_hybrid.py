"""Hybrid models: Qwen3-Next's Gated DeltaNet layers keep a fixed recurrent state per sequence
instead of a per-token cache. The fixed points are the public shapes (config.json, and vLLM's
MambaStateShapeCalculator.gated_delta_net_state_shape), worked out by hand below."""

from __future__ import annotations

import pytest
from kvlab.sim import Scenario, evaluate, from_config
from kvlab.sim.catalog import model_entry
from kvlab.sim.engine import EngineConfig, Workload, simulate
from kvlab.sim.engine.block_manager import BlockManager
from kvlab.sim.engine.blocks import blocks_for
from kvlab.sim.engine.setup import build
from kvlab.sim.errors import InputError
from kvlab.sim.evaluate import resolve_architecture
from kvlab.sim.resolve import machine_for
from kvlab.sim.roofline import decode_step

NEXT = "qwen3-next-80b-a3b"
# 80B in BF16 does not fit one H200; FP8 weights (as Qwen publishes an FP8 checkpoint) do.
ON_H200 = dict(model=NEXT, gpu="h200", weight_dtype="fp8", output_tokens=256)


def arch(**kw):
    return resolve_architecture(Scenario(model=NEXT, **kw))


def test_layers_split_three_linear_to_one_full():
    a = arch()
    assert (a.num_layers, a.num_linear_layers, a.kv_layers) == (48, 36, 12)
    # every fourth layer (1-based) is full attention
    assert [i for i, lin in enumerate(a.linear_layers) if not lin] == [3, 7, 11, 15, 19, 23, 27, 31, 35, 39, 43, 47]
    assert {k.attention for k in a.layer_kinds} == {"linear", "full"}


def test_state_per_layer_is_vllms_gated_delta_net_shape():
    lin = arch().linear
    # conv state: (2 x 16 x 128 + 32 x 128) channels x (4 - 1) taps; temporal: 32 x 128 x 128
    assert lin.state_elements(1) == 8192 * 3 + 32 * 128 * 128 == 548_864
    # vLLM's page for one such layer in BF16 (the model dtype): 1,097,728 bytes
    assert lin.state_elements(1) * 2 == 1_097_728
    # tensor parallelism splits both over the ranks
    assert lin.state_elements(2) == 4096 * 3 + 16 * 128 * 128


def test_kv_per_token_counts_only_the_attention_layers():
    r = evaluate(Scenario(**ON_H200))
    assert r.kv_bytes_per_token == 2 * 12 * 2 * 256 * 2 == 24_576
    assert "12 attention layers (of 48)" in r.kv_formula
    assert r.state_bytes_per_sequence == 36 * 548_864 * 2 == 39_518_208
    # the state stays BF16 when the cache is FP8 (vLLM's mamba_cache_dtype "auto": the model dtype)
    fp8 = evaluate(Scenario(**ON_H200, kv_dtype="fp8"))
    assert fp8.kv_bytes_per_token == 12_288 and fp8.state_bytes_per_sequence == 39_518_208


def test_cache_at_32k_is_well_under_eight_times_the_cache_at_4k():
    short = evaluate(Scenario(**ON_H200, prompt_tokens=4096))
    long = evaluate(Scenario(**ON_H200, prompt_tokens=32768))
    assert short.ok and long.ok
    ratio = long.kv_bytes_per_sequence / short.kv_bytes_per_sequence
    assert ratio < 6.0, ratio  # (32,768 + 256) x 24 KiB + 37.7 MiB over (4,096 + 256) x 24 KiB + 37.7 MiB = 5.8
    # the state is the same at both lengths: the difference is the attention layers' tokens alone
    assert long.kv_bytes_per_sequence - short.kv_bytes_per_sequence == pytest.approx(28672 * 24_576, rel=1e-3)
    # a dense GQA model of the same family grows almost 8 times
    dense = [evaluate(Scenario(model="qwen3-8b", gpu="h200", prompt_tokens=p, output_tokens=256)).kv_bytes_per_sequence
             for p in (4096, 32768)]
    assert dense[1] / dense[0] > 7.5


def test_sequences_that_fit_pay_for_the_state():
    r = evaluate(Scenario(**ON_H200, prompt_tokens=4096))
    per_seq_without_state = r.kv_bytes_per_sequence - r.state_bytes_per_sequence
    assert r.max_sequences == int(r.kv_pool_bytes // r.kv_bytes_per_sequence)
    assert r.max_sequences < int(r.kv_pool_bytes // per_seq_without_state) * 0.8


def test_a_decode_step_reads_and_writes_every_state():
    s = Scenario(**ON_H200, prompt_tokens=4096)
    m = machine_for(s)
    step = decode_step(m, batch=8, context_tokens=4096)
    cache = 8 * m.arch.kv_read_tokens(4096) * 24_576
    assert step.kv_bytes == pytest.approx(cache + 8 * 2 * 39_518_208)


def test_the_engine_holds_the_state_in_blocks_and_agrees_with_evaluate():
    s = Scenario(**ON_H200, engine="vllm", prompt_tokens=4096)
    cfg = EngineConfig(scenario=s, workload=Workload(rate_per_s=1000, num_requests=800, seed=3, prompt_tokens=4096,
                                                     output_tokens=256, prompt_dist="fixed", output_dist="fixed"))
    setup, issues, _ = build(cfg)
    assert not issues
    manager = BlockManager(setup)
    assert manager.state_blocks == -(-39_518_208 // (16 * 24_576)) == 101
    r = simulate(cfg)
    assert r.completed == 800
    # A running sequence holds at least its prompt's blocks, the block of its first new token and
    # its state: 257 + 101 blocks. Without the state 515 would fit at once.
    peak = max(r.series["running"])
    assert peak <= setup.num_gpu_blocks // (blocks_for(4096 + 1, 16) + 101) == 370
    # and about as many as evaluate() says fit on average over a request's life (355)
    assert peak == pytest.approx(evaluate(s).max_sequences, rel=0.05)


def test_layer_types_list_reads_like_the_interval():
    cfg = dict(model_entry(NEXT)["config"])
    listed = {**cfg, "layer_types": ["full_attention" if (i + 1) % 4 == 0 else "linear_attention" for i in range(48)]}
    del listed["full_attention_interval"]
    assert from_config(listed).linear_layers == from_config(cfg).linear_layers


def test_a_missing_linear_field_is_named():
    cfg = dict(model_entry(NEXT)["config"])
    del cfg["linear_num_value_heads"]
    cfg["layer_types"] = ["linear_attention", "linear_attention", "linear_attention", "full_attention"] * 12
    with pytest.raises(InputError) as e:
        from_config(cfg)
    assert e.value.issues[0].field == "linear_num_value_heads"


def test_tp_must_split_the_linear_heads():
    cfg = {**model_entry(NEXT)["config"], "linear_num_key_heads": 12, "linear_num_value_heads": 24}
    r = evaluate(Scenario(config=cfg, gpu="h200", weight_dtype="fp8", tp=8))
    assert [e["field"] for e in r.errors] == ["tp"]
    assert "linear_num_key_heads (12)" in r.errors[0]["message"]
