"""Small, fast engine configurations shared by the engine tests."""

from __future__ import annotations

import pytest
from kvlab.sim import Scenario
from kvlab.sim.engine import EngineConfig, Scheduling, Workload

# Qwen3-8B on one H100 with only 30% of memory for the engine: a pool of about 61k tokens, so a
# few hundred requests at 10/s fill it and force preemptions, in a fraction of a second.
TIGHT = Scenario(model="qwen3-8b", gpu="h100-sxm", engine="vllm", gpu_memory_utilization=0.3,
                 max_num_seqs=256, max_num_batched_tokens=2048)
ROOMY = TIGHT.with_(gpu_memory_utilization=0.9)


def small(n: int = 300, rate: float = 10.0, scenario: Scenario = TIGHT, **changes) -> EngineConfig:
    cfg = EngineConfig(scenario=scenario, workload=Workload(rate_per_s=rate, num_requests=n, seed=3),
                       scheduling=Scheduling(policy="chunked"))
    return cfg.with_(**changes) if changes else cfg


@pytest.fixture
def tight_config() -> EngineConfig:
    return small()
