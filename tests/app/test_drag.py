"""The charts' drag handles (app/viewlayer/drag.py): each sits where sim puts the thing it stands for,
and its tags map that place back to the setting it edits, so a drag lands on the value whose figures
the chart then draws (app/templates/drag.js applies the same map in the browser)."""

import math

import pytest
from kvlab.app.viewlayer.drag import handle
from kvlab.app.viewlayer.hbm_bar import view_hbm_bar
from kvlab.sim import Scenario, evaluate
from kvlab.sim.units import GIB


def _value_at(edge: dict, x: float) -> float:
    """The setting's value at x, as drag.js computes it from the tags."""
    spec = edge["tags"][0]
    return math.log2(x) if spec["scale"] == "log2" else (x - spec["a"]) / spec["b"]


@pytest.mark.parametrize("state", [dict(gpu_memory_utilization=0.9), dict(gpu_memory_utilization=0.72, gpu="h200"),
                                   dict(gpu_memory_utilization=0.5, engine="vllm", model="qwen3-32b", tp=2)])
def test_the_utilisation_edge_sits_at_sims_reserve_and_maps_back_to_the_setting(state):
    r = evaluate(Scenario(**state))
    edge = view_hbm_bar(r)["edge"]
    assert edge["tags"][0]["kv_drag"] == "gpu_memory_utilization"
    assert edge["location"] == pytest.approx(r.context_reserve_bytes / GIB)
    assert _value_at(edge, edge["location"]) == pytest.approx(state["gpu_memory_utilization"])
    # one more GiB of reserve is that GiB's share of the card less for the engine
    assert _value_at(edge, edge["location"] + 1) == pytest.approx(state["gpu_memory_utilization"] - GIB / r.capacity_bytes)


@pytest.mark.parametrize("engine", ["sglang", "tensorrt-llm"])
def test_no_edge_where_the_engine_does_not_read_the_setting(engine):
    assert view_hbm_bar(evaluate(Scenario(engine=engine)))["edge"]["location"] is None


def test_no_edge_without_figures():
    assert view_hbm_bar(None)["edge"]["location"] is None


def test_a_handle_refuses_a_scale_drag_js_does_not_know():
    with pytest.raises(ValueError, match="scale"):
        handle("prompt_tokens", 1.0, "x", scale="log10")


def test_the_prompt_handle_sits_at_the_prompt_and_maps_back_to_the_log2_slider():
    from kvlab.app.viewlayer.controls import log2
    from kvlab.app.viewlayer.fit_curve import view_fit_curve
    from kvlab.app.viewlayer.settings import defaults
    from kvlab.app.viewlayer.state import compute

    c = compute({**defaults(), "prompt_tokens": 5000}, ("fit",))
    marker = view_fit_curve(c.result, c.fit)
    assert marker["handle"]["location"] == marker["point"]["data"]["x"][0] == 5000
    assert _value_at(marker["handle"], 5000) == pytest.approx(log2(5000))  # the prompt slider's own position
    assert view_fit_curve(None)["handle"]["location"] is None
