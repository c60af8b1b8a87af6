"""A run's cost: every GPU billed for the run's whole duration, over the output tokens it made."""

from __future__ import annotations

import pytest
from kvlab.sim.engine import Cluster, simulate
from kvlab.sim.engine.cost import dollars_per_million_output_tokens, gpu_hours
from kvlab.sim.engine.result import EngineResult

from .conftest import ROOMY, small


def test_price_is_gpu_hours_over_output_tokens():
    r = EngineResult(config={}, gpus=8, duration_s=1800.0, output_tokens_generated=2_000_000)
    assert gpu_hours(r) == pytest.approx(4.0)
    assert dollars_per_million_output_tokens(r, 2.5) == pytest.approx(5.0)  # $10 for two million tokens


def test_no_output_has_no_price():
    assert dollars_per_million_output_tokens(EngineResult(config={}, gpus=1, duration_s=10.0), 2.5) is None


def test_a_second_replica_bills_its_gpus_even_when_idle():
    """At a load one engine carries, a second one finishes no sooner and makes no more tokens: the same
    output costs twice as much."""
    one = simulate(small(n=120, rate=2.0, scenario=ROOMY))
    two = simulate(small(n=120, rate=2.0, scenario=ROOMY).with_(cluster=Cluster(replicas=2)))
    assert (one.gpus, two.gpus) == (1, 2)
    ratio = dollars_per_million_output_tokens(two, 2.5) / dollars_per_million_output_tokens(one, 2.5)
    assert ratio == pytest.approx(2.0, rel=0.05)
