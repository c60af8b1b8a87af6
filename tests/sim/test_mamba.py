"""Nemotron-H: Mamba-2 layers keep a fixed state per sequence, attention layers a cache per token,
MLP blocks nothing. The fixed points are the public shapes (NVIDIA-Nemotron-Nano-9B-v2's
config.json, vLLM's MambaStateShapeCalculator.mamba2_state_shape and extra_groups_for_head_shards),
worked out by hand below."""

from __future__ import annotations

import pytest
from kvlab.sim import Scenario, evaluate, from_config
from kvlab.sim.catalog import model_entry
from kvlab.sim.engine import EngineConfig, Workload, simulate
from kvlab.sim.engine.block_manager import BlockManager
from kvlab.sim.engine.setup import build
from kvlab.sim.errors import InputError
from kvlab.sim.evaluate import resolve_architecture
from kvlab.sim.layer_parts import Mamba2
from kvlab.sim.resolve import machine_for
from kvlab.sim.roofline import decode_step

NANO = "nemotron-nano-9b-v2"
ON_H100 = dict(model=NANO, gpu="h100-sxm", output_tokens=256)
# conv state (4 - 1) x (10,240 + 2 x 8 x 128) and SSM state 128 x 80 x 128, per layer at tp 1
STATE_ELEMENTS = 3 * 12_288 + 128 * 80 * 128


def arch(**kw):
    return resolve_architecture(Scenario(model=NANO, **kw))


def config(**changes):
    return {**model_entry(NANO)["config"], **changes}


def test_the_pattern_gives_27_mamba_4_attention_25_mlp_blocks():
    a = arch()
    assert (a.num_layers, a.num_linear_layers, a.kv_layers, a.num_mixerless_layers, a.num_mlp_layers) == (56, 27, 4, 25, 25)
    # the attention blocks are the '*' of the pattern
    assert [i for i, k in enumerate(model_entry(NANO)["config"]["hybrid_override_pattern"]) if k == "*"] == [14, 21, 30, 39]
    kinds = {(k.attention, k.mlp): k.count for k in a.layer_kinds}
    assert kinds == {("mamba", "none"): 27, ("none", "dense"): 25, ("full", "none"): 4}
    # single blocks: one all-reduce each under tensor parallelism, not two
    assert a.sublayers == 56


def test_state_per_layer_is_vllms_mamba2_state_shape():
    m = arch().linear
    assert isinstance(m, Mamba2) and m.intermediate == 10_240
    assert m.state_elements(1) == STATE_ELEMENTS == 1_347_584
    # tp 2 splits both parts: conv (3, 6,144) and SSM (64, 80, 128)
    assert m.state_elements(2) == 3 * 6_144 + 64 * 80 * 128
    # n_groups 1 over 4 ranks: vLLM adds tp - n_groups = 3 groups so each rank holds its heads' B and C
    one_group = Mamba2(num_heads=128, head_dim=64, n_groups=1, state_size=128, conv_kernel_tokens=4)
    assert one_group.state_elements(4) == 3 * ((8_192 + 2 * 4 * 128) // 4) + 32 * 64 * 128


def test_only_the_attention_layers_cache_tokens():
    r = evaluate(Scenario(**ON_H100))
    assert r.ok, r.errors
    assert r.kv_bytes_per_token == 2 * 4 * 8 * 128 * 2 == 16_384
    assert "4 attention layers (of 56)" in r.kv_formula
    assert r.state_bytes_per_sequence == 27 * STATE_ELEMENTS * 2 == 72_769_536
    # the state stays in the model's dtype when the cache is FP8 (vLLM's mamba_cache_dtype "auto")
    fp8 = evaluate(Scenario(**ON_H100, kv_dtype="fp8"))
    assert fp8.kv_bytes_per_token == 8_192 and fp8.state_bytes_per_sequence == 72_769_536


def test_cache_at_32k_is_well_under_eight_times_the_cache_at_4k():
    short = evaluate(Scenario(**ON_H100, prompt_tokens=4096))
    long = evaluate(Scenario(**ON_H100, prompt_tokens=32768))
    assert short.ok and long.ok
    ratio = long.kv_bytes_per_sequence / short.kv_bytes_per_sequence
    # (32,768 + 256) x 16 KiB + 69.4 MiB over (4,096 + 256) x 16 KiB + 69.4 MiB = 4.3
    assert ratio < 4.5, ratio
    assert long.kv_bytes_per_sequence - short.kv_bytes_per_sequence == pytest.approx(28_672 * 16_384, rel=1e-3)
    assert long.max_sequences > short.max_sequences / 4.5


def test_parameters_count_mixers_mlps_and_attention_by_block():
    a = arch()
    h = 4480
    mamba = h * (2 * 10_240 + 2 * 8 * 128 + 128) + 12_288 * 5 + 3 * 128 + 10_240 + 10_240 * h
    attention = h * 40 * 128 * 2 + h * 8 * 128 * 2
    mlp = 2 * h * 15_680  # up and down: ReLU^2 has no gate
    assert a.params_total == 27 * mamba + 4 * attention + 25 * mlp + 56 * h + h + 2 * 131_072 * h == 8_888_227_328


def test_a_decode_step_reads_and_writes_every_state():
    m = machine_for(Scenario(**ON_H100))
    step = decode_step(m, batch=8, context_tokens=4096)
    assert step.kv_bytes == pytest.approx(8 * 4096 * 16_384 + 8 * 2 * 72_769_536)


def test_the_engine_holds_the_state_in_blocks():
    s = Scenario(**ON_H100, engine="vllm", prompt_tokens=2048)
    cfg = EngineConfig(scenario=s, workload=Workload(rate_per_s=1000, num_requests=200, seed=3, prompt_tokens=2048,
                                                     output_tokens=256, prompt_dist="fixed", output_dist="fixed"))
    setup, issues, _ = build(cfg)
    assert not issues
    assert BlockManager(setup).state_blocks == -(-72_769_536 // (16 * 16_384)) == 278
    r = simulate(cfg)
    assert r.completed == 200


def test_pattern_problems_are_named():
    for pattern, words in (("M*-E" * 14, "MoE blocks"), ("M-*", "one character per layer"), ("M-" * 28, "no attention layer")):
        with pytest.raises(InputError) as e:
            from_config(config(hybrid_override_pattern=pattern))
        assert e.value.issues[0].field == "hybrid_override_pattern" and words in e.value.issues[0].message
    with pytest.raises(InputError) as e:
        from_config({k: v for k, v in config().items() if k != "ssm_state_size"})
    assert e.value.issues[0].field == "ssm_state_size"


def test_tp_must_split_the_mamba_heads():
    r = evaluate(Scenario(config=config(mamba_num_heads=100, n_groups=4), gpu="h100-sxm", tp=8))
    assert [e["field"] for e in r.errors] == ["tp"]
    assert "mamba_num_heads (100)" in r.errors[0]["message"]
    assert evaluate(Scenario(model=NANO, gpu="h100-sxm", tp=8)).ok


def test_the_concurrency_line_counts_the_state():
    # textbook and SGLang: a max_model_len request's blocks and its 69.4 MiB of state, in pool tokens
    for engine in ("textbook", "sglang"):
        r = evaluate(Scenario(**ON_H100, prompt_tokens=32768, engine=engine, max_model_len=33024))
        held = 33024 + 72_769_536 / 16_384
        assert r.max_concurrency == pytest.approx(r.kv_pool_tokens / held)
        assert r.max_concurrency == pytest.approx(r.max_sequences, abs=1)


# ai21labs/AI21-Jamba-1.5-Mini config.json, the fields kvlab reads
# (https://huggingface.co/ai21labs/AI21-Jamba-1.5-Mini/blob/main/config.json). Its model card: "Jamba
# 1.5 Mini (12B active/52B total)". Mamba (v1) layers, attention at i % 8 == 4, MoE at i % 2 == 1.
JAMBA = {"architectures": ["JambaForCausalLM"], "model_type": "jamba", "hidden_size": 4096, "intermediate_size": 14336,
         "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "attn_layer_offset": 4,
         "attn_layer_period": 8, "expert_layer_offset": 1, "expert_layer_period": 2, "num_experts": 16,
         "num_experts_per_tok": 2, "mamba_conv_bias": True, "mamba_d_conv": 4, "mamba_d_state": 16, "mamba_dt_rank": 256,
         "mamba_expand": 2, "mamba_proj_bias": False, "max_position_embeddings": 262144, "tie_word_embeddings": False,
         "vocab_size": 65536}


def test_jamba_layers_and_its_mamba_state_follow_vllms_mamba1_shape():
    a = from_config(JAMBA)
    assert [i for i, lin in enumerate(a.linear_layers) if not lin] == [4, 12, 20, 28]
    assert (a.kv_layers, a.num_linear_layers, a.num_moe_layers) == (4, 28, 16)
    # vLLM's mamba1_state_shape: conv (8,192 / tp, 4 - 1) and SSM (8,192 / tp, 16)
    assert a.linear.state_elements(1) == 8192 * 3 + 8192 * 16 == 155_648
    assert a.state_bytes_per_sequence() == 28 * 155_648 * 2 == 8_716_288
    assert a.kv_bytes_per_token(2) == 2 * 4 * 8 * 128 * 2
    # 52B total, 12B active (the model card), within 1%
    assert a.params_total == pytest.approx(52e9, rel=0.01) and a.params_active == pytest.approx(12e9, rel=0.01)
    r = evaluate(Scenario(config=JAMBA, gpu="h200", tp=2, prompt_tokens=32768))
    assert r.ok and r.state_bytes_per_sequence == 8_716_288 / 2


def test_a_128k_sequence_costs_what_nvidias_nim_sizing_says():
    # NVIDIA-AI-Blueprints/video-search-and-summarization PR #1649 (sizing the Nemotron NIM): "only
    # 4 of 56 layers attend, so KV cost is ~16 KiB/token, plus ~70 MiB of constant Mamba state per
    # sequence -- about 2.0 GiB per sequence fully extended to the 128000 ceiling"
    r = evaluate(Scenario(model=NANO, gpu="h100-sxm", prompt_tokens=127_744, output_tokens=256))
    assert r.kv_bytes_per_token == 16 * 1024
    assert r.state_bytes_per_sequence / 2**20 == pytest.approx(70, rel=0.01)
    assert r.kv_bytes_per_sequence / 2**30 == pytest.approx(2.0, rel=0.02)
