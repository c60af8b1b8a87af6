"""Seed 001's deployment can be set up: Kimi-K2.5 (the kimi-k2 text architecture) served by SGLang
with NVFP4 weights on eight RTX PRO 6000 cards at mem_fraction_static 0.85. The seed saw running
requests capped near 50 of 150 once responses averaged 4,116 tokens; kvlab's pool must cap the
batch in that region, for memory, not for the scheduler."""

from kvlab.sim import Scenario, evaluate


def test_kimi_k2_on_eight_rtx_pro_6000_caps_the_batch_near_fifty():
    r = evaluate(Scenario(model="kimi-k2", gpu="rtx-pro-6000", tp=8, weight_dtype="nvfp4", engine="sglang",
                          mem_fraction_static=0.85, prompt_tokens=1000, output_tokens=4116, concurrency=150,
                          allocation="paged"))
    assert r.ok, r.errors
    assert r.kv_bytes_per_token == 61 * 576 * 2  # the MLA latent, replicated on every rank
    assert r.batch_limited_by != "concurrency"
    assert 40 <= r.batch <= 70, r.batch


def test_the_log_explains_the_cap_and_attention_groups_lift_it():
    """Why the cap: every one of the 8 GPUs keeps the whole latent of every request. With SGLang's
    attention data parallelism each GPU keeps only its own requests' latent, and 150 fit."""
    kw = dict(model="kimi-k2", gpu="rtx-pro-6000", tp=8, weight_dtype="nvfp4", engine="sglang", mem_fraction_static=0.85,
              prompt_tokens=1000, output_tokens=4116, concurrency=150, allocation="paged")
    tp = evaluate(Scenario(**kw))
    assert any("every request's whole latent cache" in line for line in tp.log)
    dp = evaluate(Scenario(**kw, attention_dp=8, expert_parallel=True))
    assert dp.ok, dp.errors
    assert dp.batch == 150 and dp.batch_limited_by == "concurrency"
    assert dp.max_sequences > 4 * tp.max_sequences
    assert any("the cache of its group's requests only" in line for line in dp.log)
