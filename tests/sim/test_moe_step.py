"""Issue 36: the step model's MoE and MLA terms. A routed expert sliced by tensor parallelism is a
narrow GEMM that reaches w / (w + w_half) of a dense GEMM's bandwidth and rate; MLA layers launch
vLLM's seven extra decode kernels."""

import pytest
from kvlab.sim import Scenario, evaluate, resolve
from kvlab.sim.roofline import (
    KERNELS_MLA_EXTRA,
    KERNELS_PER_DENSE_LAYER,
    KERNELS_PER_MOE_LAYER,
    KERNELS_PER_SHARED_EXPERT,
    KERNELS_PER_STEP,
)


def machine(**kw):
    return resolve(Scenario(**kw)).machine


def test_half_width_gives_the_expert_fraction():
    # Qwen3-235B-A22B: experts 1,536 wide; h200-published's fitted half width is 256.
    m = machine(model="qwen3-235b-a22b", gpu="h200", tp=8, weight_dtype="fp8", profile="h200-published")
    assert m.profile.moe_half_efficiency_width == 256
    assert m.moe_gemm_efficiency == pytest.approx(192 / (192 + 256))
    assert machine(model="qwen3-235b-a22b", gpu="h200", tp=4, weight_dtype="fp8",
                   profile="h200-published").moe_gemm_efficiency == pytest.approx(384 / (384 + 256))


@pytest.mark.parametrize("kw", [dict(model="qwen3-8b", profile="h200-published"),  # dense: no experts
                                dict(model="qwen3-235b-a22b", tp=8, profile="textbook")])  # no fitted width
def test_the_fraction_is_one_without_experts_or_a_fitted_width(kw):
    assert machine(gpu="h200", weight_dtype="fp8", **kw).moe_gemm_efficiency == 1.0


def test_narrow_experts_slow_the_step_and_only_the_mlp_row():
    kw = dict(model="qwen3-235b-a22b", gpu="h200", tp=8, weight_dtype="fp8", prompt_tokens=2048, output_tokens=256,
              concurrency=128, allocation="paged", engine="vllm")
    fitted = evaluate(Scenario(profile="h200-published", **kw))
    rows = {k["kind"]: k for k in fitted.decode_kernels}
    m = machine(profile="h200-published", **{k: v for k, v in kw.items() if k in ("model", "gpu", "tp", "weight_dtype")})
    # The expert part of the MLP row reads its bytes at the reduced bandwidth: more time than bytes / dense rate.
    dense_rate_s = rows["mlp"]["bytes"] / (m.gpu.hbm_bandwidth_bytes_per_s * m.profile.weight_bandwidth_efficiency("fp8"))
    assert rows["mlp"]["time_s"] > 1.5 * dense_rate_s


def test_mla_layers_count_seven_more_kernels():
    v3 = machine(model="deepseek-v3", gpu="h200", tp=8, weight_dtype="fp8", profile="h200-published")
    dense_layers, moe_layers = 3, 58
    expected = (dense_layers * (KERNELS_PER_DENSE_LAYER + KERNELS_MLA_EXTRA)
                + moe_layers * (KERNELS_PER_MOE_LAYER + KERNELS_PER_SHARED_EXPERT + KERNELS_MLA_EXTRA) + KERNELS_PER_STEP)
    assert v3.kernels_per_step() == expected == 1451
    llama = machine(model="llama-3.1-8b", gpu="h200", profile="h200-published")
    assert llama.kernels_per_step() == 32 * KERNELS_PER_DENSE_LAYER + KERNELS_PER_STEP
