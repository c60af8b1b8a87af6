"""Issue 36: the lab runs an attention-data-parallel, expert-parallel instance on the same setup as
the steady-state evaluation: its block pool is the deployment's, attention_dp times the tokens of
an MLA model's tensor-parallel pool."""

from kvlab.sim import Scenario
from kvlab.sim.engine import EngineConfig, Workload, simulate
from kvlab.sim.engine.setup import build

V3 = Scenario(model="deepseek-v3", gpu="h200", tp=8, weight_dtype="fp8", engine="sglang", profile="h200-published")


def test_attention_groups_give_the_lab_their_pool():
    tp, _, _ = build(EngineConfig(scenario=V3))
    dp, issues, _ = build(EngineConfig(scenario=V3.with_(attention_dp=8, expert_parallel=True)))
    assert not issues
    assert dp.num_gpu_blocks > 5 * tp.num_gpu_blocks


def test_a_dp_ep_run_completes_and_a_bad_one_names_the_field():
    cfg = EngineConfig(scenario=V3.with_(attention_dp=8, expert_parallel=True),
                       workload=Workload(rate_per_s=4.0, num_requests=40, seed=1))
    r = simulate(cfg)
    assert not r.errors and r.completed == 40
    bad = simulate(cfg.with_(scenario=V3.with_(model="llama-3.1-8b", tp=1, expert_parallel=True)))
    assert bad.errors and bad.errors[0]["field"] == "expert_parallel"
