"""Issue 36: attention data parallelism and expert parallelism, as SGLang and vLLM run them.

With attention_dp groups each group serves its own requests and keeps only their cache, so an MLA
model (whose latent every tensor-parallel GPU would otherwise hold whole) fits attention_dp times
the tokens, while each GPU holds more attention weights. Expert parallelism keeps experts whole:
the same bytes per GPU, multiplied at full width."""

import pytest
from kvlab.sim import Scenario, evaluate, resolve
from kvlab.sim.memory import weight_bytes_per_rank
from kvlab.sim.parallelism import rank_holds, rank_holds_line

V3 = dict(model="deepseek-v3", gpu="h200", tp=8, weight_dtype="fp8", engine="sglang", prompt_tokens=1000,
          output_tokens=2000, concurrency=64, profile="h200-published")


def test_mla_cache_per_token_divides_by_the_attention_groups():
    arch = resolve(Scenario(model="deepseek-v3")).arch
    assert arch.kv_bytes_per_token(2, 8) == 61 * 576 * 2 == 70_272  # the latent cannot be split by heads
    assert arch.kv_bytes_per_token(2, 8, attention_dp=8) == 70_272 / 8
    # A grouped-query model gains nothing: tp 8 already split its 8 KV heads.
    llama = resolve(Scenario(model="llama-3.1-70b")).arch
    assert llama.kv_bytes_per_token(2, 8, attention_dp=8) == llama.kv_bytes_per_token(2, 8)


def test_attention_groups_hold_more_tokens_and_more_attention_weights():
    tp = evaluate(Scenario(**V3))
    dp = evaluate(Scenario(**V3, attention_dp=8))
    assert dp.kv_pool_tokens > 5 * tp.kv_pool_tokens  # 8x the tokens per byte, in a pool a little smaller
    assert dp.max_sequences > 5 * tp.max_sequences
    arch = resolve(Scenario(model="deepseek-v3")).arch
    # Every GPU holds all the split attention weights (7/8 more of them than under tp 8).
    extra = weight_bytes_per_rank(arch, 1.0, 8, attention_dp=8) - weight_bytes_per_rank(arch, 1.0, 8)
    assert extra == pytest.approx(arch.split_attention_params * 7 / 8)
    assert dp.weight_bytes > tp.weight_bytes


def test_expert_parallelism_keeps_bytes_and_widens_the_expert_gemms():
    ep = resolve(Scenario(**V3, expert_parallel=True)).machine
    sliced = resolve(Scenario(**V3)).machine
    # 2,048-wide experts whole against a 256-wide slice of each: w / (w + 128).
    assert ep.moe_gemm_efficiency == pytest.approx(2048 / (2048 + 128))
    assert sliced.moe_gemm_efficiency == pytest.approx(256 / (256 + 128))
    assert evaluate(Scenario(**V3, expert_parallel=True)).weight_bytes == evaluate(Scenario(**V3)).weight_bytes
    assert evaluate(Scenario(**V3, expert_parallel=True)).itl_s < evaluate(Scenario(**V3)).itl_s


def test_what_each_gpu_holds_is_stated():
    holds = evaluate(Scenario(**V3, attention_dp=8, expert_parallel=True)).rank_holds
    assert holds == {"gpus": 8, "pipeline_stages": 1, "layers": 61, "layers_total": 61, "attention_groups": 8,
                     "gpus_per_attention_group": 1, "attention_heads": 128,
                     "attention_heads_total": 128, "request_share": 1 / 8, "kv_replicated": False, "experts": 32,
                     "experts_total": 256, "expert_share": 1.0, "expert_parallel": True}
    line = rank_holds_line(rank_holds(resolve(Scenario(model="deepseek-v3")).arch, Scenario(**V3)))
    assert "16 of 128 attention heads" in line and "whole latent cache" in line and "1/8 slice of each of the 256" in line
    log = evaluate(Scenario(**V3, attention_dp=8, expert_parallel=True)).log
    assert any("32 of the 256 experts whole" in entry for entry in log)


@pytest.mark.parametrize("changes, field", [
    (dict(model="llama-3.1-8b", tp=2, expert_parallel=True), "expert_parallel"),  # no experts
    (dict(tp=2, attention_dp=4), "attention_dp"),  # more groups than GPUs
    (dict(model="llama-3.1-70b", tp=8, attention_dp=8, concurrency=1, prompt_tokens=10, output_tokens=10, gpu="b200",
          weight_dtype="fp8", expert_parallel="yes"), "expert_parallel"),
])
def test_bad_parallelism_names_the_field(changes, field):
    r = evaluate(Scenario(**{**V3, **changes}))
    assert not r.ok and r.errors[0]["field"] == field


def test_cli_takes_the_flags():
    from kvlab.sim.cli import main
    assert main(["--model", "deepseek-v3", "--gpu", "h200", "--tp", "8", "--weight-dtype", "fp8", "--attention-dp", "8",
                 "--expert-parallel", "--json"]) == 0
    assert main(["--model", "llama-3.1-8b", "--expert-parallel"]) == 2


LLAMA70 = dict(model="llama-3.1-70b", gpu="h100-sxm", engine="vllm", profile="h100-published", weight_dtype="fp8", prompt_tokens=1024,
               output_tokens=256)


def test_pipeline_stages_split_the_layers_and_their_cache():
    arch = resolve(Scenario(model="llama-3.1-70b")).arch
    assert arch.stage_fraction(4) == 20 / 80 and arch.stage_fraction(3) == 27 / 80  # the fullest stage
    assert arch.kv_bytes_per_token(2, 2, pp=4) == arch.kv_bytes_per_token(2, 2) / 4
    # The fullest stage: a quarter of the layers and one vocabulary matrix (embedding or lm_head).
    vocab = arch.vocab_size * arch.hidden_size
    body = arch.params_total - arch.params_embedding
    assert weight_bytes_per_rank(arch, 2.0, 2, pp=4) == pytest.approx((body / 2 / 4 + vocab / 2) * 2.0)
    r = evaluate(Scenario(**LLAMA70, tp=2, pp=4))
    assert r.rank_holds["gpus"] == 8 and r.rank_holds["layers"] == 20
    assert any("4 pipeline stages of 2, the fullest with 20 of the 80 layers" in entry for entry in r.log)


def test_a_pipeline_keeps_throughput_but_not_latency():
    """pp micro-batches in flight: a token waits for the whole model at batch / pp, so one request
    is slower than on tp 8, while a full batch keeps every stage busy."""
    alone_pp = evaluate(Scenario(**LLAMA70, tp=2, pp=4, concurrency=1))
    alone_tp2 = evaluate(Scenario(**LLAMA70, tp=2, concurrency=1))
    alone_tp8 = evaluate(Scenario(**LLAMA70, tp=8, concurrency=1))
    # One request crosses every stage in turn: the tp-2 group's time for the whole model, plus hand-offs.
    assert alone_pp.itl_s == pytest.approx(alone_tp2.itl_s, rel=0.02) and alone_pp.itl_s > alone_tp2.itl_s
    assert alone_pp.ttft_s == pytest.approx(alone_tp2.ttft_s, rel=0.02)
    assert alone_pp.itl_s > 1.5 * alone_tp8.itl_s and alone_pp.ttft_s > 1.5 * alone_tp8.ttft_s
    busy = evaluate(Scenario(**LLAMA70, tp=2, pp=4, concurrency=256))
    quarter = evaluate(Scenario(**LLAMA70, tp=2, concurrency=64))
    # ITL at 256 in flight is the tp-2 step of a 64-sequence micro-batch plus the stage hand-offs.
    assert busy.itl_s == pytest.approx(quarter.itl_s, rel=0.05) and busy.itl_s > quarter.itl_s
    assert busy.decode_tokens_per_s == pytest.approx(256 / busy.itl_s)
    priced = evaluate(Scenario(**LLAMA70, tp=2, pp=4, dollars_per_gpu_hour=2.0))
    assert priced.decode_dollars_per_million_tokens == pytest.approx(8 * 2.0 / 3600 / priced.decode_tokens_per_s * 1e6)


def test_pipeline_limits_name_their_field():
    r = evaluate(Scenario(model="llama-3.1-70b", pp=3))
    assert not r.ok and r.errors[0]["field"] == "pp"
    from kvlab.sim.engine import EngineConfig, simulate
    lab = simulate(EngineConfig(scenario=Scenario(**LLAMA70, tp=2, pp=2)))
    assert lab.errors and lab.errors[0]["field"] == "pp"
