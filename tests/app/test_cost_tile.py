"""A price per GPU-hour shows its cost per million tokens on both steady-state panels: sim's
served cost (all GPU time) as the headline, the decode-only cost in the caption."""

from kvlab.app.views.admission_numbers import AdmissionNumbers
from kvlab.app.views.panels import make_store
from kvlab.app.views.phase_numbers import PhaseNumbers
from kvlab.sim import Scenario, evaluate


def test_cost_tile_follows_the_price_and_sim():
    store = make_store({"dollars_per_gpu_hour": 2.5, "prompt_tokens": 32768})
    r = evaluate(Scenario(dollars_per_gpu_hour=2.5, prompt_tokens=32768))
    served, decode = r.served_dollars_per_million_tokens, r.decode_dollars_per_million_tokens
    assert served > 3 * decode  # the 32k prompts' prefills are most of the GPU time
    for view in (AdmissionNumbers(store=store), PhaseNumbers(store=store)):
        assert f'data-kv="served_dollars_per_million_tokens">${served:,.2f}<' in view.pane.object
        assert f"the decode steps alone: ${decode:,.2f}" in view.pane.object
    store.settings.dollars_per_gpu_hour = 5.0
    assert f">${2 * served:,.2f}<" in PhaseNumbers(store=store).pane.object


def test_no_price_no_tile():
    store = make_store({})
    assert "dollars_per_million_tokens" not in AdmissionNumbers(store=store).pane.object
    assert "dollars_per_million_tokens" not in PhaseNumbers(store=store).pane.object


def test_the_caption_bills_every_gpu_and_prices_holding_one_sequence():
    settings = {"dollars_per_gpu_hour": 2.5, "model": "llama-3.1-70b", "tp": 2, "pp": 2}
    r = evaluate(Scenario(**settings))
    assert r.dollars_per_sequence_hour == 2.5 * 4 / r.max_sequences  # tp x pp GPUs, as sim bills the tokens
    pane = AdmissionNumbers(store=make_store(settings)).pane.object
    assert "x 4 GPU(s)" in pane and f"holding one sequence&#x27;s cache: ${r.dollars_per_sequence_hour:,.3f} an hour" in pane  # escaped
