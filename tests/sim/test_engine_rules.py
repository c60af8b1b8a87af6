"""vLLM 0.5's host time per row (sim/data/engine_rules.json, host_rules): the derivation its source
states, recomputed from sim's own step model, so a change to the step model that leaves the figure
stale fails here; and the release post's second figure, which the derivation does not use."""

import json

import pytest
from kvlab.sim import roofline
from kvlab.sim.catalog import DATA_DIR
from kvlab.sim.engine_rules import rules
from kvlab.sim.resolve import machine_for
from kvlab.sim.scenario import Scenario

# The v0.6.0 release post (blog.vllm.ai/2024/09/05/perf-update.html) on v0.5.3, Llama 3 8B, one H100:
# the API server 33% and scheduling 29% of the time, so the GPU busy 38%.
GPU_BUSY_SHARE = 0.38
BATCH = 256  # vLLM 0.5's default max_num_seqs, which an overloaded ShareGPT run fills
# Llama 70B on 4 H100s: v0.6.0 (host hidden by --num-scheduler-steps 10) served it 1.8x as fast as v0.5.3.
SPEEDUP_70B = 1.8


def _sharegpt_context_tokens() -> float:
    d = json.loads((DATA_DIR / "datasets" / "sharegpt.json").read_text())
    return d["prompt_tokens"]["table_mean"] + d["output_tokens"]["mean"] / 2


def _step(model: str, tp: int, version: str) -> roofline.StepCost:
    s = Scenario(model=model, gpu="h100-sxm", profile="h100-published", engine="vllm", engine_version=version, tp=tp)
    return roofline.decode_step(machine_for(s), BATCH, _sharegpt_context_tokens())


def test_the_per_row_figure_is_what_its_derivation_gives_today():
    step = _step("llama-3.1-8b", 1, "0.5")
    host_s = step.time_s * (1 - GPU_BUSY_SHARE) / GPU_BUSY_SHARE
    derived_row_s = (host_s - rules("vllm", "0.5").cpu_step_s) / BATCH
    assert rules("vllm", "0.5").cpu_row_s == pytest.approx(derived_row_s, rel=0.1), derived_row_s
    # and the step's host time is that share of the step
    assert step.cpu_s / step.wall_s == pytest.approx(1 - GPU_BUSY_SHARE, abs=0.03)


def test_the_posts_70b_speedup_follows_without_being_used():
    step = _step("llama-3.1-70b", 4, "0.5")
    assert step.wall_s / step.time_s == pytest.approx(SPEEDUP_70B, rel=0.1)


def test_later_releases_have_no_cost_per_row_and_a_05_step_costs_more_host_time():
    assert all(rules("vllm", v).cpu_row_s == 0.0 for v in ("0.6", "0.7", "0.11", "0.19"))
    old, new = _step("llama-3.1-8b", 1, "0.5"), _step("llama-3.1-8b", 1, "0.6")
    assert old.time_s == new.time_s and old.cpu_s > new.cpu_s + BATCH * 5e-5
