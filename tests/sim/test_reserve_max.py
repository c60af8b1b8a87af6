"""The allocation of engines before paged attention: every sequence reserves max_model_len at
admission (the output length is unknown when a request starts)."""

from kvlab.sim import Scenario, evaluate

BASE = Scenario(model="qwen3-8b", prompt_tokens=1024, output_tokens=3072, concurrency=512)


def test_reserves_the_models_context_when_max_model_len_is_unset():
    r = evaluate(BASE.with_(allocation="reserve_max"))
    context = 40_960  # Qwen3-8B's max_position_embeddings
    assert r.kv_bytes_per_sequence == context * r.kv_bytes_per_token
    assert r.max_sequences == int(r.kv_pool_bytes // (context * r.kv_bytes_per_token))


def test_reserves_max_model_len_rounded_to_blocks():
    r = evaluate(BASE.with_(allocation="reserve_max", max_model_len=8000))
    assert r.kv_bytes_per_sequence == 8000 * r.kv_bytes_per_token  # 8000 is 500 blocks of 16
    r = evaluate(BASE.with_(allocation="reserve_max", max_model_len=8001))
    assert r.kv_bytes_per_sequence == 8016 * r.kv_bytes_per_token


def test_equals_contiguous_when_requests_use_the_whole_length():
    exact = evaluate(BASE.with_(allocation="contiguous"))
    full = evaluate(BASE.with_(allocation="reserve_max", max_model_len=4096))
    assert (full.max_sequences, full.kv_bytes_per_sequence, full.decode_step_s) == (
        exact.max_sequences, exact.kv_bytes_per_sequence, exact.decode_step_s)


def test_orders_reserve_max_contiguous_paged():
    fits = [evaluate(BASE.with_(allocation=a)).max_sequences for a in ("reserve_max", "contiguous", "paged")]
    assert fits[0] < fits[1] < fits[2], fits


def test_pool_and_step_cost_are_unchanged_only_the_count_is():
    a, b = evaluate(BASE.with_(allocation="contiguous")), evaluate(BASE.with_(allocation="reserve_max"))
    assert a.kv_pool_bytes == b.kv_pool_bytes
    assert b.batch == b.max_sequences < a.batch
