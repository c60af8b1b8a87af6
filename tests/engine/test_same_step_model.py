"""The time-domain engine and evaluate() time a step with the same function (roofline.step_cost,
host time per step included) and add the same front end: one request alone on the engine must see
evaluate()'s served TTFT and ITL for the same settings (issue 11)."""

from __future__ import annotations

import pytest
from kvlab.sim import Scenario, evaluate
from kvlab.sim.engine import EngineConfig, Scheduling, Workload, simulate
from kvlab.sim.engine.setup import engine_scenario

CASES = [
    # textbook profile under vLLM's engine rules: the whole-step max plus 3 ms of host time per step
    Scenario(model="qwen3-8b", gpu="h100-sxm", engine="vllm", prompt_tokens=1500, output_tokens=300),
    # per-kernel model, a prompt in three chunks of max_num_batched_tokens (each a step with its host time)
    Scenario(model="llama-3.1-8b", gpu="h100-sxm", engine="vllm", profile="h100-published", prompt_tokens=5000,
             output_tokens=200, max_num_batched_tokens=2048),
    # per-kernel, tensor parallel, FP8 weights, SGLang's rules
    Scenario(model="llama-3.1-70b", gpu="h200", tp=4, engine="sglang", profile="h200-published", weight_dtype="fp8",
             prompt_tokens=3000, output_tokens=150),
    # DeepSeek sparse attention: a decode past 2,048 tokens reads every indexer key and 2,048 latents
    # (the engine's clock takes the latents' cap as a window)
    Scenario(model="deepseek-v3.2-exp", gpu="h200", tp=8, weight_dtype="fp8", engine="vllm", profile="h200-published",
             prompt_tokens=6000, output_tokens=300),
    # Nemotron-H: Mamba-2 state read and written every step, single-block layers
    Scenario(model="nemotron-nano-9b-v2", gpu="h100-sxm", engine="vllm", profile="h100-published", prompt_tokens=5000,
             output_tokens=200),
    # the textbook engine: no host time, no front end
    Scenario(model="qwen3-8b", gpu="a100-80", engine="textbook", prompt_tokens=1000, output_tokens=100),
]


@pytest.mark.parametrize("scenario", CASES, ids=lambda s: f"{s.model}-{s.engine}-{s.profile}")
def test_one_request_sees_evaluates_served_ttft_and_itl(scenario):
    s = scenario.with_(concurrency=1)
    cfg = EngineConfig(
        scenario=s,
        workload=Workload(arrival="poisson", rate_per_s=1.0, num_requests=1, prompt_dist="fixed",
                          prompt_tokens=s.prompt_tokens, output_dist="fixed", output_tokens=s.output_tokens, seed=0),
        # evaluate() has no per-admission block-table bookkeeping; the engine's own seed-000 cost is off here
        scheduling=Scheduling(policy="chunked", block_table_s_per_block=0.0),
    )
    run = simulate(cfg)
    assert run.ok and run.completed == 1, run.errors
    r = evaluate(engine_scenario(cfg))  # the same settings, paged as the engine allocates
    assert r.batch == 1
    assert run.ttft_s.mean == pytest.approx(r.served_ttft_s, rel=1e-9)
    # TPOT: the request's mean gap between tokens, output - 1 decode steps
    assert run.tpot_s.mean == pytest.approx(r.served_itl_s, rel=1e-9)
    assert r.served_ttft_s == pytest.approx(r.ttft_frontend_s + r.ttft_prefill_s)
    if s.engine != "textbook":
        assert r.cpu_step_s > 0 and r.ttft_frontend_s > 0
        assert r.itl_s == pytest.approx(r.decode_step_s + r.cpu_step_s)


def test_host_time_has_a_fixed_part_and_a_part_per_row_sampled():
    """cpu_s = cpu_step_s + cpu_row_s x rows sampled: a decode step samples every sequence, a
    prefill pass one row per prompt it completes (none for an earlier chunk)."""
    from dataclasses import replace

    from kvlab.sim.evaluate import machine_for
    from kvlab.sim.roofline import decode_step, prefill

    m = replace(machine_for(Scenario(engine="vllm", profile="h100-published")), cpu_step_s=0.002, cpu_row_s=1e-5)
    dec = decode_step(m, 64, 4096)
    assert dec.cpu_s == pytest.approx(0.002 + 64e-5) and dec.wall_s == pytest.approx(dec.time_s + dec.cpu_s)
    pre = prefill(m, 5000, 2048)  # three passes, the last one samples
    assert pre.cpu_s == pytest.approx(3 * 0.002 + 1e-5)
