"""sim.fidelity: the sentences the panels, the lab and kvlab compare show about how far kvlab's
predictions have been, read from sim/data/fidelity.json (tests/validation keeps the file current)."""

from __future__ import annotations

from kvlab.app.viewlayer.phase_numbers import view_phase_numbers
from kvlab.sim import Scenario, evaluate
from kvlab.sim.fidelity import fidelity, replay_line, served_line


def test_each_model_has_a_family():
    assert evaluate(Scenario(model="qwen3-8b")).model_family == "dense"
    assert evaluate(Scenario(model="qwen3-30b-a3b")).model_family == "moe"
    assert evaluate(Scenario(model="deepseek-v3", gpu="h200", tp=8, weight_dtype="fp8")).model_family == "mla"


def test_the_sentences_carry_the_files_figures_and_counts():
    served = fidelity()["served"]["figures"]
    line = served_line("dense")
    for figure, label in (("itl", "ITL"), ("tok_per_s", "output tok/s"), ("ttft", "TTFT")):
        entry = served[figure]["dense"]
        assert f"{entry['median_abs']:.0%} for {label} ({entry['n']})" in line
    assert "mixture-of-experts" in served_line("moe") and "MLA models" in served_line("mla")
    assert served_line("unknown") == ""
    replays = fidelity()["replays"]["figures"]
    assert f"duration {replays['duration_s']['dense']['median_abs']:.0%}" in replay_line("dense")


def test_the_phases_panel_says_how_far_its_latencies_have_been():
    page = view_phase_numbers(evaluate(Scenario(model="qwen3-8b")))["pane"]["html"]
    assert 'data-kv="fidelity"' in page and "dense models" in page
    refused = view_phase_numbers(evaluate(Scenario(model="qwen3-32b", gpu="l4")))["pane"]["html"]
    assert 'data-kv="fidelity"' not in refused  # nothing runs: no figure to qualify
