"""DeepSeek-V3.2's sparse attention (DSA): what a token costs to keep (its MLA latent and the
lightning indexer's key, in every layer) and what a decode step reads (every indexer key, at most
index_topk latents). Fixed points from DeepSeek-V3.2-Exp's config.json and vLLM's layouts:
the indexer cache 'head_dim + head_dim // quant_block_size * 4' bytes of uint8 (132), the FP8
latent 'fp8_ds_mla' of 656 bytes."""

from __future__ import annotations

import pytest
from kvlab.sim import Scenario, evaluate, from_config
from kvlab.sim.catalog import model_entry
from kvlab.sim.engine.clock import StepClock
from kvlab.sim.errors import InputError
from kvlab.sim.evaluate import resolve_architecture
from kvlab.sim.resolve import machine_for
from kvlab.sim.roofline import decode_step

V32 = "deepseek-v3.2-exp"
ON_H200 = dict(gpu="h200", tp=8, weight_dtype="fp8", engine="vllm")


def test_a_token_keeps_its_latent_and_its_indexer_key_in_every_layer():
    bf16 = evaluate(Scenario(model=V32, **ON_H200))
    assert bf16.ok, bf16.errors
    assert bf16.kv_bytes_per_token == 61 * (576 * 2 + 132) == 78_324
    # FP8: vLLM's fp8_ds_mla latent (512 FP8 + 4 FP32 scales + 64 BF16 rope = 656) and the same key
    fp8 = evaluate(Scenario(model=V32, kv_dtype="fp8", **ON_H200))
    assert fp8.kv_bytes_per_token == 61 * (512 + 16 + 128 + 132) == 48_068
    assert "656 B latent + 132 B indexer key" in fp8.kv_formula
    # the latent and the key are whole on every rank (MLA's latent is not split; the indexer is replicated)
    assert evaluate(Scenario(model=V32, gpu="h200", tp=1, weight_dtype="fp8", gpu_memory_gib=1024)).kv_bytes_per_token == 78_324
    # V3 without the indexer: the latent alone
    assert evaluate(Scenario(model="deepseek-v3", **ON_H200)).kv_bytes_per_token == 61 * 1152


def test_a_decode_step_reads_every_key_but_at_most_2048_latents():
    m = machine_for(Scenario(model=V32, **ON_H200))
    per_layer = {c: 132 * c + 1152 * min(c, 2048) for c in (4096, 65536)}
    read = {c: decode_step(m, batch=1, context_tokens=c).kv_bytes for c in (4096, 65536)}
    assert read[4096] == pytest.approx(61 * per_layer[4096])  # 176,898,048 B
    assert read[65536] == pytest.approx(61 * per_layer[65536])  # 671,612,928 B
    assert read[65536] / read[4096] == pytest.approx(3.80, abs=0.01)  # 16x more context, 3.8x the reads
    # DeepSeek-V3 (dense MLA) reads 16 times as much at 64k as at 4k
    v3 = machine_for(Scenario(model="deepseek-v3", **ON_H200))
    dense = [decode_step(v3, batch=1, context_tokens=c).kv_bytes for c in (4096, 65536)]
    assert dense[1] / dense[0] == pytest.approx(16.0)
    # below 2,048 tokens every latent is read: the step reads what it keeps
    assert decode_step(m, batch=1, context_tokens=1000).kv_bytes == pytest.approx(1000 * 78_324)


def test_the_pool_still_holds_every_token():
    short = evaluate(Scenario(model=V32, prompt_tokens=4096, output_tokens=256, **ON_H200))
    long = evaluate(Scenario(model=V32, prompt_tokens=65536, output_tokens=256, **ON_H200))
    assert long.kv_bytes_per_sequence - short.kv_bytes_per_sequence == pytest.approx(61_440 * 78_324, rel=1e-3)


def test_the_engines_clock_reads_the_same_bytes():
    m = machine_for(Scenario(model=V32, **ON_H200))
    clock = StepClock(m)
    assert clock.window_tokens == 2048 and clock.window_fraction == pytest.approx(1152 / 1284)
    for c in (100, 2048, 5000, 65536):
        assert clock.kv_read(c) == m.cache_read_tokens(c)


def test_prefill_attends_to_at_most_2048_keys_a_query_and_the_indexer_scores_all():
    a = resolve_architecture(Scenario(model=V32))
    assert a.indexer_pair_ratio == pytest.approx(2 * 64 * 128 / ((2 * 192 + 2 * 128) * 128)) == 0.2
    assert a.causal_pairs(1000) == pytest.approx(1.2 * 1000**2 / 2)
    n = 65536
    sparse = 2048**2 / 2 + (n - 2048) * 2048
    assert a.causal_pairs(n) == pytest.approx(sparse + 0.2 * n**2 / 2)
    v3 = resolve_architecture(Scenario(model="deepseek-v3"))
    # a quarter of dense MLA's at 64k (0.26), most of it the indexer's own n^2 / 2 at a fifth the cost a pair
    assert a.causal_pairs(n) < 0.3 * v3.causal_pairs(n)


def test_the_indexer_adds_replicated_weights():
    a, v3 = (resolve_architecture(Scenario(model=m)) for m in (V32, "deepseek-v3"))
    indexer = 1536 * 64 * 128 + 7168 * 128 + 2 * 128 + 7168 * 64
    assert a.params_total - v3.params_total == 61 * indexer == 851_524_864
    assert a.params_replicated - v3.params_replicated == 61 * indexer
    assert a.attention_kind == "MLA" and a.indexer.topk == 2048


def test_an_indexer_needs_latent_attention():
    cfg = {**model_entry("qwen3-8b")["config"], "index_topk": 2048, "index_n_heads": 64, "index_head_dim": 128}
    with pytest.raises(InputError) as e:
        from_config(cfg)
    assert e.value.issues[0].field == "index_topk"
