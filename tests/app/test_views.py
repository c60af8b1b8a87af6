"""What the panels display equals sim's figures for that state (read from the panes' HTML, the
same data-kv elements the browser tests read), and user text is always escaped."""

import json
from html import escape

import panel as pn
import pytest
from kvlab.app import admission_panel, phases_panel
from kvlab.app.views.hbm_bar import HbmBar
from kvlab.app.views.state import CUSTOM_MODEL
from kvlab.app.views.step_breakdown import StepBreakdown, phase_terms
from kvlab.sim import Scenario, catalog, evaluate
from kvlab.sim.units import GIB, KIB

from .readout import assert_shows, displayed

STATES = [
    {},
    {"prompt_tokens": 32768},
    {"prompt_tokens": 32768, "kv_dtype": "fp8"},
    {"model": "qwen3-14b", "gpu": "a100-80", "concurrency": 64},
    {"model": "qwen3-14b", "prompt_tokens": 128, "output_tokens": 16, "concurrency": 256},
    {"model": "qwen3-8b", "force_mha": True},
    {"engine": "vllm", "allocation": "paged", "tp": 2, "model": "qwen3-32b"},
    {"model": "qwen3-next-80b-a3b", "gpu": "h200", "weight_dtype": "fp8"},
]


@pytest.mark.parametrize("state", STATES)
def test_admission_numbers_are_sims(state):
    r = evaluate(Scenario(**state))
    shown = displayed(admission_panel(**state).main)
    assert shown["max_sequences"] == f"{r.max_sequences:,}"
    assert shown["batch"] == f"{r.batch:,}"
    assert_shows(shown["kv_pool"], r.kv_pool_bytes / GIB)
    assert_shows(shown["kv_per_token"], r.kv_bytes_per_token / KIB)
    assert shown["kv_formula"].startswith(r.kv_formula.replace(" x ", " \u00d7 "))
    assert_shows(shown["hbm_weights"], r.weight_bytes / GIB)
    assert_shows(shown["hbm_kv_used"], r.kv_pool_used_bytes / GIB)
    assert shown["log"] == "".join(r.log)


@pytest.mark.parametrize("state", STATES)
def test_phase_numbers_are_sims(state):
    r = evaluate(Scenario(**state))
    shown = displayed(phases_panel(**state).main)
    assert_shows(shown["ttft"], r.ttft_s, 1e3)
    assert_shows(shown["itl"], r.itl_s, 1e3)
    assert_shows(shown["tokens_per_s"], r.decode_tokens_per_s)
    assert_shows(shown["per_stream"], r.per_stream_tokens_per_s)
    assert_shows(shown["tensor_duty"], r.tensor_duty, 100)
    assert_shows(shown["weight_share"], r.weight_share, 100)


def test_a_hybrid_models_state_is_part_of_what_a_sequence_holds():
    state = {"model": "qwen3-next-80b-a3b", "gpu": "h200", "weight_dtype": "fp8"}
    r = evaluate(Scenario(**state))
    line = displayed(admission_panel(**state).main)["kv_per_sequence"]
    assert f"{r.kv_bytes_per_sequence / GIB:,.2f} GiB" in line
    assert "of which 37.7 MiB is the recurrent state of its linear-attention or Mamba layers" in line
    assert "recurrent state" not in displayed(admission_panel().main)["kv_per_sequence"]


def test_the_itl_tile_says_what_speculative_decoding_buys():
    state = {"model": "qwen3-32b", "concurrency": 1, "spec_draft_model": "qwen3-0.6b"}
    r = evaluate(Scenario(**state))
    panel = phases_panel(**state)
    assert_shows(displayed(panel.main)["itl"], r.itl_s, 1e3)
    assert r.spec_speedup > 2
    text = " ".join(p.object for p in panel.main.select(pn.pane.HTML))
    assert f"{r.spec_tokens_per_step:.2f} tokens a step with Qwen3-0.6B drafting, {r.spec_speedup:.2f}\u00d7 the speed without" in text
    # a draft with another vocabulary: the page names the setting and keeps the others
    panel.settings.param.update(spec_draft_model="llama-3.1-8b")
    text = " ".join(p.object for p in panel.main.select(pn.pane.HTML))
    assert "spec_draft_model: must share the target&#x27;s vocabulary (151,936 tokens); Llama 3.1 8B has 128,256" in text
    assert panel.settings.model == "qwen3-32b" and panel.settings.concurrency == 1


def test_seed_figures_show_on_the_panels():
    shown = displayed(admission_panel(prompt_tokens=32768).main)
    assert (shown["max_sequences"], shown["batch"]) == ("12", "12")
    shown = displayed(phases_panel(prompt_tokens=32768, kv_dtype="fp8").main)
    assert shown["itl"] == "27.9" and shown["tokens_per_s"] == "860"


def test_nothing_fits_shows_dashes_and_the_reason():
    panel = phases_panel(model="qwen3-32b", gpu_memory_utilization=0.72)
    shown = displayed(panel.main)
    assert shown["itl"] == "\u2014" and shown["tokens_per_s"] == "\u2014"
    assert "Model weights need 61.02 GiB" in shown["warnings"]
    assert displayed(admission_panel(model="qwen3-32b", gpu_memory_utilization=0.72).main)["max_sequences"] == "0"


def test_hbm_bar_segments_fill_the_card_in_order():
    panel = admission_panel()
    bar = next(v for v in _views(panel) if isinstance(v, HbmBar))
    data = bar.source.data
    r = panel.store.result
    assert data["key"] == ["context_reserve", "non_torch", "weights", "activation", "kv_used", "kv_free"]
    assert data["right"][-1] * GIB == pytest.approx(r.context_reserve_bytes + r.weight_bytes + r.activation_reserve_bytes
                                                    + r.kv_pool_bytes)
    assert all(a == pytest.approx(b) for a, b in zip(data["right"], data["left"][1:], strict=False))


def test_step_breakdown_binding_term_is_sims_bound():
    for state, phase in (({"prompt_tokens": 128}, "prefill"), ({}, "decode"),
                         ({"model": "qwen3-14b", "prompt_tokens": 128, "output_tokens": 16, "concurrency": 256}, "decode")):
        panel = phases_panel(**state)
        view = next(v for v in _views(panel) if isinstance(v, StepBreakdown) and v.phase == phase)
        r = panel.store.result
        bound = r.prefill_bound if phase == "prefill" else r.decode_bound
        solid = {row for row, alpha, width in zip(view.bars.data["row"], view.bars.data["alpha"], view.bars.data["width"],
                                                   strict=True) if alpha == 1.0 and width == 3}
        assert solid == {bound}
        t = phase_terms(r, phase)
        assert t["total"] == (r.ttft_s if phase == "prefill" else r.itl_s)


PAYLOAD = '<script>window.__xss=1</script><img src=x onerror="window.__xss=2">'


def test_user_text_is_escaped_everywhere():
    cfg = dict(catalog.model_entry("qwen3-8b")["config"], _name_or_path=PAYLOAD)
    panel = admission_panel(model=CUSTOM_MODEL, config_text=json.dumps(cfg))
    assert panel.store.result.model_name == PAYLOAD
    shown = displayed(panel.main)
    assert shown["model_name"].startswith(PAYLOAD)  # shown as text...
    for pane in pn.Column(panel.main).select(pn.pane.HTML):
        assert "<script" not in (pane.object or "") and "<img" not in (pane.object or "")  # ...never as markup


def test_hostile_notebook_arguments_become_notices():
    panel = admission_panel(prompt_tokens=-1, gpu="<b>x</b>", concurrency=8)
    shown = displayed(panel.main)
    assert panel.settings.concurrency == 8 and panel.settings.prompt_tokens == 4096
    assert "prompt_tokens=-1" in shown["url_notices"] and "gpu='<b>x</b>'" in shown["url_notices"]


def _views(panel):
    return panel.parts


def test_shipped_css_drops_comments_and_keeps_rules():
    from kvlab.app.viewlayer.html import shipped_css

    text = "a { color: red; }\n  /* why,\n   over two lines */\nb { margin: 0; } /* after a rule */\n"
    assert shipped_css(text) == "a { color: red; }\nb { margin: 0; }"


@pytest.mark.parametrize("state", [{"prompt_tokens": 65536}, {"model": "qwen3-8b", "engine": "vllm", "gpu": "l4"},
                                   {"model": "qwen3-32b", "gpu_memory_utilization": 0.72}, {}])
def test_the_panels_show_sims_verdict(state):
    """The view layer has no verdict of its own: where sim refuses, the tiles show sim's reason in
    place of a latency; where sim answers, its numbers (issue 33: the panels refused 65,536-token
    prompts on their own while sim answered them)."""
    r = evaluate(Scenario(**state))
    panel = phases_panel(**state)
    shown = displayed(panel.main)
    if r.refusal is None:
        assert_shows(shown["itl"], r.itl_s, 1e3)
    else:
        assert shown["itl"] == shown["ttft"] == "\u2014"
        panes = "".join(pane.object or "" for pane in pn.Column(panel.main).select(pn.pane.HTML))
        assert r.refusal["reason"] in panes and escape(r.refusal["message"]) in panes


@pytest.mark.parametrize("make", [admission_panel, phases_panel])
def test_an_unreadable_paste_redraws_every_view(make):
    """With no result (a paste that is not JSON) every view still applies its data to its bokeh models:
    a None where bokeh wants a number raised inside the watcher and left the page half-updated."""
    panel = make(prompt_tokens=32768)
    panel.settings.param.update(model=CUSTOM_MODEL, config_text='{"num_hidden_layers": 36')
    assert panel.store.result is None
    assert "config: is not valid JSON" in displayed(panel.main)["errors"]
    panel.settings.param.update(model="qwen3-8b")
    assert displayed(panel.main)["max_sequences" if make is admission_panel else "itl"] != "\u2014"


def test_hbm_bar_with_no_result_says_so_instead_of_an_axis_of_bytes():
    """Issue 37: after a bad setting the bar's axis ran 0 to 9.4e-10 GiB ("0.000e+0 ... 8.000e-10")."""
    from kvlab.app.viewlayer.hbm_bar import view_hbm_bar

    shown = view_hbm_bar(None)
    assert shown["x_range"]["end"] == 1.0 and shown["capacity"]["location"] is None
    assert "no figures until the settings above are fixed" in shown["title"]["html"]
    assert shown["legend"]["html"] == "" and not any(shown["bars"]["data"]["gib"])
    panel = admission_panel()
    panel.settings.param.update(model=CUSTOM_MODEL, config_text="{")  # not JSON: no result
    bar = next(v for v in _views(panel) if isinstance(v, HbmBar))
    assert bar.fig.x_range.end == 1.0


def test_hbm_bar_says_what_each_gpu_holds_from_sims_answer():
    """Issue 36: "show what each rank holds". The legend carries sim's sentence (sim.parallelism),
    escaped, for a multi-GPU setup, and nothing for one GPU."""
    from kvlab.app.viewlayer.hbm_bar import view_hbm_bar

    r = evaluate(Scenario(model="deepseek-v3", gpu="h200", tp=8, weight_dtype="fp8", attention_dp=8, expert_parallel=True))
    legend = view_hbm_bar(r)["legend"]["html"]
    assert 'class="kv-rank-holds"' in legend
    assert escape("32 of the 256 experts whole (expert parallel)") in legend
    assert "one of 8 ranks" in view_hbm_bar(r)["title"]["html"]
    assert "kv-rank-holds" not in view_hbm_bar(evaluate(Scenario()))["legend"]["html"]
    panel = admission_panel(model="deepseek-v3", gpu="h200", tp=8, weight_dtype="fp8", pp=1, attention_dp=8,
                            expert_parallel=True)
    # The sidebar's settings reach sim: 8 attention groups fit far more sequences than tp 8 alone.
    grouped = displayed(panel.main)["max_sequences"]
    plain = displayed(admission_panel(model="deepseek-v3", gpu="h200", tp=8, weight_dtype="fp8").main)["max_sequences"]
    assert int(grouped.replace(",", "")) > 5 * int(plain.replace(",", ""))


@pytest.mark.parametrize("state", [{}, {"model": "gemma-3-27b", "gpu": "h200"}, {"spec_draft_model": "qwen3-0.6b"},
                                   {"max_model_len": 8192}])
def test_reserve_max_names_the_tokens_sim_reserves(state):
    """It divided the bytes by bytes per token: 21,999 tokens for Gemma-3-27B (a mean over windowed
    layers; it reserves 131,072) and 72,818 with a draft model (its cache counted as tokens)."""
    r = evaluate(Scenario(allocation="reserve_max", **state))
    line = displayed(admission_panel(allocation="reserve_max", **state).main)["kv_per_sequence"]
    assert f"reserves max_model_len ({state.get('max_model_len') or r.context_tokens:,} tokens)" in line
