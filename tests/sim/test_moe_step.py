"""Issue 36: the step model's MoE and MLA terms. A routed expert sliced by tensor parallelism is a
narrow GEMM that reaches w / (w + w_half) of a dense GEMM's bandwidth and rate; MoE and MLA layers
launch small kernels a dense layer does not, each at the profile's latency_kernel_s; MLA's
down-projections and the MoE routers are replicated on every tensor-parallel rank."""

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
    # Qwen3-235B-A22B: experts 1,536 wide; h200-published's fitted half width is 128.
    m = machine(model="qwen3-235b-a22b", gpu="h200", tp=8, weight_dtype="fp8", profile="h200-published")
    assert m.profile.moe_half_efficiency_width == 128
    assert m.moe_gemm_efficiency == pytest.approx(192 / (192 + 128))
    assert machine(model="qwen3-235b-a22b", gpu="h200", tp=4, weight_dtype="fp8",
                   profile="h200-published").moe_gemm_efficiency == pytest.approx(384 / (384 + 128))


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


def test_moe_and_mla_layers_add_their_small_kernels_at_the_latency_cost():
    v3 = machine(model="deepseek-v3", gpu="h200", tp=8, weight_dtype="fp8", profile="h200-published")
    # 58 MoE layers: 4 routing kernels + 3 of the shared expert; 61 MLA layers: 7 each.
    assert v3.extra_kernels_per_step() == 58 * (KERNELS_PER_MOE_LAYER - KERNELS_PER_DENSE_LAYER + KERNELS_PER_SHARED_EXPERT) + 61 * 7 == 833
    assert v3.profile.latency_kernel_s == pytest.approx(8e-6)
    assert v3.fixed_kernel_s == pytest.approx(1451 * v3.profile.kernel_overhead_s + 833 * 8e-6)
    llama = machine(model="llama-3.1-8b", gpu="h200", profile="h200-published")
    assert llama.extra_kernels_per_step() == 0
    assert llama.fixed_kernel_s == pytest.approx(328 * llama.profile.kernel_overhead_s)
    kw = dict(model="deepseek-v3", gpu="h200", tp=8, weight_dtype="fp8", prompt_tokens=1024, output_tokens=256,
              concurrency=1, engine="vllm")
    published = evaluate(Scenario(profile="h200-published", **kw))
    overhead = {k["kind"]: k for k in published.decode_kernels}["overhead"]["time_s"]
    assert overhead == pytest.approx(v3.fixed_kernel_s)
    # The textbook profile has neither cost: the published step is longer by at least that much.
    assert published.itl_s > evaluate(Scenario(profile="textbook", **kw)).itl_s + overhead


def test_mla_down_projections_and_routers_are_whole_on_every_rank():
    from kvlab.sim.memory import weight_bytes_per_rank
    arch = resolve(Scenario(model="deepseek-v3")).arch
    h, mla = arch.hidden_size, arch.mla
    per_layer = h * mla.q_lora_rank + mla.q_lora_rank + h * (mla.kv_lora_rank + mla.qk_rope_head_dim) + mla.kv_lora_rank
    replicated = 61 * per_layer + 58 * h * 256
    assert arch.params_replicated == replicated
    assert weight_bytes_per_rank(arch, 1.0, 8) == pytest.approx((arch.params_total - replicated) / 8 + replicated)
    # A rank reads the replicated down-projections whole in every step's QKV row.
    step = {k["kind"]: k for k in evaluate(Scenario(model="deepseek-v3", gpu="h200", tp=8, weight_dtype="fp8",
                                                     profile="h200-published", concurrency=1)).decode_kernels}
    assert step["qkv"]["bytes"] > 61 * per_layer
    # Grouped-query attention splits everything: a dense rank holds exactly 1/tp, the textbook's rule.
    llama = resolve(Scenario(model="llama-3.1-70b")).arch
    assert llama.params_replicated == 0
    assert weight_bytes_per_rank(llama, 2.0, 8) == llama.params_total * 2.0 / 8
