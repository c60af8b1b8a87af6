"""sim agrees with sim/textbook.py, design.md section 2's reference model written out on its own
(no formula shared), on a grid of models, GPUs and workloads, to design.md's tolerances: counts
and bytes per token exact, pools within 0.3 GiB, times within 3%. The decode step differs by the
attention FLOPs sim adds to the compute side (section 2 counts 2 x params per token), under 3% on
this grid."""

import itertools

import pytest
from kvlab.sim import Scenario, catalog, evaluate
from kvlab.sim.textbook import textbook

MODELS = ("qwen3-0.6b", "qwen3-8b", "qwen3-14b", "qwen3-32b", "llama-3.1-8b")
GRID = list(itertools.product(("a100-80", "h100-sxm", "h200"), (128, 4096, 32768), (16, 256), (1, 256), ("bf16", "fp8")))


@pytest.mark.parametrize("model", MODELS)
def test_sim_agrees_with_the_textbook_reference(model):
    cfg = catalog.model_entry(model)["config"]
    for gpu, prompt, output, concurrency, kv in GRID:
        s = Scenario(model=model, gpu=gpu, prompt_tokens=prompt, output_tokens=output, concurrency=concurrency, kv_dtype=kv)
        r = evaluate(s)
        g = catalog.gpu(gpu)
        t = textbook(cfg, capacity_bytes=g.memory_bytes, bandwidth_bytes_per_s=g.hbm_bandwidth_bytes_per_s,
                     peak_flops=g.bf16_dense_flops, activation_reserve_bytes=r.activation_reserve_bytes,
                     prompt_tokens=prompt, output_tokens=output, concurrency=concurrency,
                     kv_bytes_per_element=1.0 if kv == "fp8" else 2.0)
        where = (gpu, prompt, output, concurrency, kv)
        assert (r.kv_bytes_per_token, r.params_total) == (t.kv_bytes_per_token, t.params), where
        assert abs(r.kv_pool_bytes - t.kv_pool_bytes) <= 0.3 * 2**30, where
        assert (r.max_sequences, r.batch) == (t.max_sequences, t.batch), where
        assert r.ttft_s == pytest.approx(t.ttft_s, rel=0.03) and r.prefill_bound == t.prefill_bound, where
        if t.batch:
            assert r.decode_step_s == pytest.approx(t.decode_step_s, rel=0.03), where
            assert r.decode_tokens_per_s == pytest.approx(t.tokens_per_s, rel=0.03), where
        else:
            assert r.refusal is not None and r.itl_s is None, where
