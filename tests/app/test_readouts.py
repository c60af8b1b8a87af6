"""The words that replace impossible numbers, and the text summaries under the charts, against sim."""

from kvlab.app.viewlayer import readouts
from kvlab.app.viewlayer.series import batch_curve, fit_curve
from kvlab.app.viewlayer.step_breakdown import phase_terms
from kvlab.app.views.state import Settings
from kvlab.app.views.store import Store
from kvlab.app.views.urlstate import apply_values
from kvlab.sim import Scenario, evaluate


def _store(**values) -> Store:
    settings = Settings()
    assert apply_values(settings, values) == []
    return Store(settings)


def test_plural():
    assert readouts.plural(1, "sequence") == "1 sequence"
    assert readouts.plural(2, "sequence") == "2 sequences"
    assert readouts.plural(1024, "request") == "1,024 requests"


def test_weights_that_do_not_fit_block_every_latency():
    st = _store(model="qwen3-32b", gpu_memory_utilization=0.72)
    r = st.result
    assert r.ok and r.kv_pool_bytes == 0
    short, sentence = readouts.refusal(r)
    assert short == "weights do not fit"
    assert f"{r.weight_bytes / 2**30:,.2f} GiB" in sentence


def test_a_request_longer_than_the_context_is_refused():
    st = _store(model="qwen3-8b", prompt_tokens=40960, output_tokens=4096)
    assert st.settings.prompt_tokens + st.settings.output_tokens > st.context_tokens
    short, sentence = readouts.refusal(st.result)
    assert short == "longer than the context"
    assert f"{st.context_tokens:,} tokens" in sentence


def test_a_normal_configuration_is_not_blocked():
    st = _store()
    assert readouts.refusal(st.result) is None


def test_chart_summaries_carry_sims_numbers():
    st = _store()
    s, r = Scenario(), st.result
    assert r == evaluate(s)
    fit = fit_curve(s, st.context_tokens)
    text = readouts.fit_curve_summary(fit, r, s.prompt_tokens, s.concurrency)
    assert f"{fit.max_sequences[0]:,} sequences at {fit.prompt_tokens[0]:,}" in text
    assert f"{r.max_sequences:,} sequences." in text
    step = readouts.step_summary(phase_terms(r, "decode"), "decode")
    assert f"KV read {r.decode_kv_read_s * 1e3:.2f} ms" in step or f"KV read {r.decode_kv_read_s * 1e3:.1f} ms" in step
    assert step.endswith("binds.") and ("memory traffic binds" in step) == (r.decode_bound == "memory")
    curve = batch_curve(s, r.max_sequences)
    text = readouts.batch_summary(curve, r)
    assert f"at {curve.batch[-1]:,}, where the KV pool is full" in text
    assert f"This batch ({r.batch:,})" in text
    assert "no step" in readouts.step_summary(None, "prefill")
