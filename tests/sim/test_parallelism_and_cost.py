"""Tensor parallelism (per-rank weights and cache, KV-head replication, the all-reduce) and the
cost per million output tokens."""

import pytest
from kvlab.sim import Scenario, evaluate
from kvlab.sim.catalog import gpu
from kvlab.sim.evaluate import resolve_architecture
from kvlab.sim.profiles import load_profile


def run(**kw):
    r = evaluate(Scenario(**kw))
    assert r.ok, r.errors
    return r


@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_each_rank_holds_a_tp_share_of_the_weights(tp):
    r = run(model="llama-3.1-70b", tp=tp, gpu="h200")
    assert r.weight_bytes == pytest.approx(r.params_total * 2 / tp)


@pytest.mark.parametrize(("tp", "heads_per_rank"), [(1, 8), (2, 4), (4, 2), (8, 1)])
def test_kv_heads_split_across_ranks(tp, heads_per_rank):
    r = run(model="llama-3.1-70b", tp=tp, gpu="h200")
    assert r.kv_bytes_per_token == 2 * 80 * heads_per_rank * 128 * 2


def test_kv_heads_replicate_once_ranks_outnumber_them():
    # Qwen3-30B-A3B has 4 KV heads: at tp 8 each head lives on two ranks, so a rank's cache per
    # token equals tp 4's instead of halving again.
    assert resolve_architecture(Scenario(model="qwen3-30b-a3b")).num_kv_heads == 4
    tp4 = run(model="qwen3-30b-a3b", tp=4)
    tp8 = run(model="qwen3-30b-a3b", tp=8)
    assert tp8.kv_bytes_per_token == tp4.kv_bytes_per_token == 2 * 48 * 1 * 128 * 2
    assert "1 kv_heads" in tp8.kv_formula


def test_tp_must_fit_the_heads():
    cfg = {"num_hidden_layers": 2, "hidden_size": 768, "num_attention_heads": 12, "num_key_value_heads": 12,
           "intermediate_size": 2048, "vocab_size": 1000}
    r = evaluate(Scenario(config=cfg, tp=8))
    assert not r.ok and r.errors[0]["field"] == "tp" and "12" in r.errors[0]["message"]
    cfg6 = {**cfg, "num_attention_heads": 24, "num_key_value_heads": 6}
    r = evaluate(Scenario(config=cfg6, tp=4))  # 6 KV heads: 4 neither divides nor is a multiple
    assert not r.ok and r.errors[0]["field"] == "tp"


def test_allreduce_cost_per_layer_from_the_interconnect():
    r = run(model="qwen3-32b", tp=4, concurrency=16)
    a = resolve_architecture(Scenario(model="qwen3-32b"))
    h100 = gpu("h100-sxm")
    p = load_profile("textbook")
    # Two ring all-reduces per layer of batch x hidden BF16 values; a ring moves 2 (tp-1)/tp of it.
    per_call = 2 * 3 / 4 * r.batch * a.hidden_size * 2 / (h100.interconnect_bytes_per_s * p.interconnect_efficiency)
    assert r.decode_allreduce_s == pytest.approx(2 * a.num_layers * per_call)
    assert run(model="qwen3-32b", tp=1, concurrency=16).decode_allreduce_s == 0


def test_sharding_a_large_model_grows_the_pool_more_than_tp_times():
    # seed 002: "the pool grows by more than four times because the weights stop being paid for
    # four times over", and a decode step moves a quarter of the bytes.
    one = run(model="qwen3-32b", prompt_tokens=4096)
    four = run(model="qwen3-32b", prompt_tokens=4096, tp=4)
    assert 4 * four.kv_pool_bytes > 4 * one.kv_pool_bytes * 4
    assert four.itl_s < one.itl_s
    assert four.decode_tokens_per_s > one.decode_tokens_per_s


def test_dollars_per_million_output_tokens():
    r = run(model="qwen3-8b", dollars_per_gpu_hour=2.5, tp=2)
    assert r.decode_dollars_per_million_tokens == pytest.approx(2.5 * 2 / 3600 / r.decode_tokens_per_s * 1e6)
    assert run(model="qwen3-8b").decode_dollars_per_million_tokens is None
    nothing_fits = run(model="qwen3-32b", gpu_memory_utilization=0.72, dollars_per_gpu_hour=2.5)
    assert nothing_fits.batch == 0 and nothing_fits.decode_dollars_per_million_tokens is None


def test_price_zero_is_free():
    assert run(model="qwen3-8b", dollars_per_gpu_hour=0).decode_dollars_per_million_tokens == 0


def test_weights_that_do_not_fit_one_card_fit_when_sharded():
    one = run(model="llama-3.1-70b", gpu="h100-sxm")
    assert one.batch == 0 and any("tensor parallelism" in w for w in one.warnings)
    four = run(model="llama-3.1-70b", gpu="h100-sxm", tp=4)
    assert four.batch > 0 and four.weight_bytes == pytest.approx(one.weight_bytes / 4)
    assert four.weight_bytes < four.usable_bytes < one.weight_bytes
