"""The view layer runs without Panel, Bokeh, param or numpy (as it must in Pyodide), and its page
session answers a widget change with exactly the figures sim gives for the new state."""

import json
import math
import re
import subprocess
import sys

from kvlab.app.site.wheels import ROOT
from kvlab.app.viewlayer.controls import LOG_SLIDERS
from kvlab.app.viewlayer.pages import PanelPage
from kvlab.sim import Scenario, evaluate

# Imports anything outside the standard library and kvlab would make; blocked in a fresh interpreter.
_PROBE = r"""
import importlib, json, pkgutil, sys
BLOCKED = ("panel", "bokeh", "param", "numpy", "pandas", "pyviz_comms", "tornado", "jinja2")
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"view layer imported {name}")
        return None
sys.meta_path.insert(0, Block())
before = set(sys.modules)
import kvlab.app.viewlayer as vl
names = [m.name for m in pkgutil.iter_modules(vl.__path__, "kvlab.app.viewlayer.")]
for n in names:
    importlib.import_module(n)
loaded = sorted(set(sys.modules) - before)
outside = [m for m in loaded if m.split(".")[0] not in sys.stdlib_module_names and m.split(".")[0] != "kvlab"]
kvlab = sorted({m for m in loaded if m.startswith("kvlab.") and not m.startswith(("kvlab.sim", "kvlab.app.viewlayer"))})
print(json.dumps({"modules": names, "outside": outside, "kvlab": kvlab}))
"""


def test_view_layer_imports_only_the_standard_library_and_kvlab():
    proc = subprocess.run([sys.executable, "-c", _PROBE], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout)
    assert len(seen["modules"]) >= 15, seen["modules"]
    assert seen["outside"] == []
    # Besides sim: only kvlab.app's standard-library helpers (and the lazy kvlab.app package itself).
    assert set(seen["kvlab"]) <= {"kvlab.app", "kvlab.app.viewlayer.format", "kvlab.app.viewlayer.html", "kvlab.app.viewlayer.palette",
                                  "kvlab.app.viewlayer.config_paste", "kvlab.app.viewlayer.query_limits"}, seen["kvlab"]


def _html(patch: dict, name: str) -> str:
    return patch["patch"][name]["text"]


def test_panel_page_session_follows_a_slider_with_sims_numbers():
    page = PanelPage("admission", "?prompt_tokens=4096")
    first = page.start()
    assert "93" in _html(first, "admission_numbers.pane")  # seed 002's 93 sequences at 4k
    moved = page.change("w.prompt_tokens", 15.0)  # the log slider: 2**15 = 32,768 tokens
    r = evaluate(Scenario(prompt_tokens=32768))
    assert f"&gt;{r.max_sequences:,}&lt;" in _html(moved, "admission_numbers.pane")
    assert moved["query"] == "?prompt_tokens=32768"
    assert "w.prompt_tokens" not in moved["patch"]  # the handle is left where the student put it
    assert moved["patch"]["w.prompt_tokens-exact"] == {"value": 32768}
    # Only what changed is sent: the KV formula's first line and the engine choice did not move.
    assert "w.engine" not in moved["patch"]


def _drain(page) -> list[dict]:
    ticks = []
    while page.busy:
        ticks.append(page.tick())
    return ticks


def test_a_move_answers_the_numbers_then_the_other_views_then_the_swept_curve():
    page = PanelPage("phases")
    shown = {name: dict(props) for name, props in page.start()["patch"].items()}
    first = page.change("w.prompt_tokens", 13.0)
    assert first["busy"] and page.busy
    assert set(first["patch"]) == set(first["first"]) == {"phase_numbers.pane", "w.prompt_tokens-exact"}
    rest = page.tick()  # the same evaluation's other views, set after the numbers' frame
    assert rest["busy"] and rest["first"] == []
    assert {n.partition(".")[0] for n in rest["patch"]} == {"step_prefill", "step_decode", "roofline", "engine_log"}
    curve = page.tick()
    assert not curve["busy"] and not page.busy
    assert set(curve["patch"]) <= {n for n in page.models() if n.startswith("batch_chart.")}
    assert curve["patch"]["batch_chart.curve"] == page.models()["batch_chart.curve"]  # the sweep at 8,192 tokens
    # Nothing is lost in the split: the three answers bring the page to this state's models (the
    # moved slider holds its value in the browser: it is never echoed).
    shown["w.prompt_tokens"]["value"] = 13.0
    for answer in (first, rest, curve):
        for name, props in answer["patch"].items():
            shown.setdefault(name, {}).update(props)
    models = page.models()
    assert {n: {k: shown[n][k] for k in props} for n, props in models.items()} == models
    # A refused value in between leaves the ticks due; a refused value itself answers whole.
    page.change("w.prompt_tokens", 12.0)
    assert page.change("w.prompt_tokens", "x")["busy"] is True
    assert _drain(page)[-1]["patch"]["batch_chart.curve"] == page.models()["batch_chart.curve"]


def test_warming_up_leaves_the_page_as_it_was():
    page = PanelPage("phases", "?prompt_tokens=8192")
    page.start()
    before = (dict(page.values), page.models(), page.query)
    steps = 0
    while page.warm_up()["more"]:
        steps += 1
    moves = len(PanelPage.WARM_UP) * PanelPage.WARM_UP_ROUNDS
    assert moves <= steps <= 3 * moves  # each move, its other views, and its curve tick when it sweeps
    assert {name for name, _ in PanelPage.WARM_UP} >= {f"w.{n}" for n in LOG_SLIDERS}  # every log slider's path
    assert (dict(page.values), page.models(), page.query) == before
    moved = page.change("w.prompt_tokens", 14.0)  # and the page's own moves are answered as ever
    assert moved["busy"] and moved["query"] == "?prompt_tokens=16384"


def test_refused_value_is_named_and_the_widget_set_back():
    page = PanelPage("phases")
    page.start()
    out = page.change("w.gpu_memory_utilization", 7.5)
    assert "gpu_memory_utilization" in _html(out, "notices.pane")
    assert out["patch"]["w.gpu_memory_utilization"]["value"] == 0.9
    assert page.values["gpu_memory_utilization"] == 0.9
    assert out["first"] == ["notices.pane", "w.gpu_memory_utilization"]  # the refusal is shown first


def test_a_change_names_the_numbers_and_widgets_to_show_first():
    for name, numbers in (("admission", "admission_numbers.pane"), ("phases", "phase_numbers.pane")):
        page = PanelPage(name)
        page.start()
        out = page.change("w.prompt_tokens", 13.0)
        assert set(out["first"]) == set(out["patch"]) == {numbers, "w.prompt_tokens-exact"}
        rest = page.tick()  # the charts and the other panes come after, none of them first
        assert rest["first"] == [] and rest["patch"] and not set(rest["patch"]) & {numbers, "w.prompt_tokens-exact"}


def test_hostile_link_text_stays_text():
    page = PanelPage("admission", "?gpu=%3Cscript%3Ealert(1)%3C/script%3E")
    text = _html(page.start(), "notices.pane")
    assert "<script>" not in text and "&amp;lt;script&amp;gt;" in text


def test_the_default_lab_answers_before_its_opening_run_and_runs_it_in_silent_ticks():
    from kvlab.app.viewlayer.lab_page import LabPage

    at_once = LabPage("")
    at_once.start()
    opening = at_once.models()  # the page as built: the default run, run to the end at once
    ticked = LabPage("")
    # Nothing to send (the page was built showing this run), but busy: the worker ticks at once.
    assert ticked.start() == {"patch": {}, "query": ticked.query, "busy": True}
    ticks = [ticked.tick()]
    while ticks[-1]["busy"]:
        ticks.append(ticked.tick())
    assert len(ticks) > 1 and not ticked.busy  # in slices, each a few thousand events
    assert all(t["patch"] == {} for t in ticks)  # the page already shows the run: no chart redrawn
    assert ticked.models() == opening
    # A change that comes before the ticks finished the opening run answers as one after it.
    early, late = LabPage(""), LabPage("")
    early.start(), late.start()
    early.tick()
    while late.tick()["busy"]:
        pass
    assert early.change("w.lab-seed", 3) == late.change("w.lab-seed", 3)
    assert early.finish() == late.finish()


def test_the_default_lab_takes_the_sites_copy_of_its_opening_run_only_when_it_is_that_run():
    from kvlab.app.viewlayer.lab_page import LabPage, opening_json

    text = opening_json()
    ran = LabPage("")
    ran.start()
    ran.finish()
    opening = ran.models()
    known = LabPage("", opening=text)
    assert known.start() == {"patch": {}, "query": known.query, "busy": False} and known.opening_source == "file"
    assert known.models() == opening
    # What follows is answered as on a page that ran it: a display choice, then a new run.
    assert known.change("w.lab-metric", 1) == ran.change("w.lab-metric", 1)
    assert known.change("w.lab-seed", 5) == ran.change("w.lab-seed", 5)
    assert known.finish() == ran.finish()
    # A damaged copy, another format, runs of another state: the page runs its own opening run.
    data = json.loads(text)
    for bad in (text[:-9], "[]", json.dumps({**data, "format": 0}), json.dumps({**data, "compare": None}),
                json.dumps({**data, "result": {**data["result"], "config": {}}})):
        page = LabPage("", opening=bad)
        assert page.start()["busy"] and page.opening_source == "run", bad[:60]
        page.finish()
        assert page.models() == opening
    linked = LabPage("?seed=3", opening=text)  # a link's own state: its own run, as ever
    linked.start()
    assert linked.opening_source == "" and linked.finish()["patch"]


def test_a_latency_marks_label_is_written_leftwards_in_the_right_part_of_the_axis():
    """So it stays inside the plot on a narrow window (tests/browser/test_chart_labels.py measures it)."""
    from kvlab.app.viewlayer.lab_distribution import LEFTWARDS_FROM, MARKS, view_lab_distribution
    from kvlab.app.viewlayer.lab_page import LabPage

    page = LabPage()
    page.run()
    page.finish()
    out = view_lab_distribution(page, {**page.values, "metric": "TTFT"})
    lo, hi = out["hist_main"]["data"]["left"][0], out["hist_main"]["data"]["right"][-1]
    sides = {}
    for mark in MARKS:
        label = out[f"{mark}_h_label"]
        along = math.log(label["x"] / lo) / math.log(hi / lo)
        sides[mark] = label["text_align"]
        assert (label["text_align"], label["x_offset"]) == (("right", -4) if along >= LEFTWARDS_FROM else ("left", 4)), (mark, along)
        assert out[f"{mark}_c_label"] == label  # the CDF's copy says the same
    assert sides["p50"] == "left" and sides["p99"] == "right", sides  # the default run has both sides


def test_a_step_charts_legend_keys_each_colour_it_draws():
    """Weight read and KV read share the memory row; the serial row's colours appear with tensor
    parallelism. The legend is HTML, so it wraps in a narrow window."""
    from kvlab.app.viewlayer import settings
    from kvlab.app.viewlayer.palette import COLORS
    from kvlab.app.viewlayer.step_breakdown import view_step_breakdown

    def keys(phase: str, **changes) -> list[str]:
        values = {**settings.defaults(), **changes}
        html = view_step_breakdown(evaluate(settings.scenario(values)), phase)["legend"]["html"]
        return re.findall(r'background:([^"]+)"></span>([^<]+)</span>', html)

    decode = [("weights", "weight read"), ("kv", "KV read"), ("compute", "tensor-core compute")]
    assert keys("decode") == [(COLORS[c], name) for c, name in decode]
    assert keys("prefill") == [(COLORS[c], name) for c, name in decode if c != "kv"]  # a prefill reads no cache
    assert keys("decode", tp=2) == [*keys("decode"), (COLORS["allreduce"], "all-reduce")]  # its launch overhead is 0 here: no key


def test_a_step_without_launch_overhead_neither_draws_keys_nor_names_one():
    """Qwen3-14B, 64 requests, TP 2: the step's time less its parts left 7e-16 s, which the decode
    chart keyed as "launch overhead" and its summary named as "launch overhead 0.00 ms"."""
    from kvlab.app.viewlayer import settings
    from kvlab.app.viewlayer.step_breakdown import view_step_breakdown

    values = {**settings.defaults(), "model": "qwen3-14b", "concurrency": 64, "tp": 2}
    out = view_step_breakdown(evaluate(settings.scenario(values)), "decode")
    bars = out["bars"]["data"]
    assert "all-reduce" in out["legend"]["html"] and "launch overhead" not in out["legend"]["html"]
    assert "Not overlapped: all-reduce 0.15 ms." in out["summary"]["html"] and "launch overhead" not in out["summary"]["html"]
    assert [ms for term, ms in zip(bars["term"], bars["ms"], strict=True) if term == "launch overhead"] == [0.0]


def test_settings_that_depend_on_others_are_kept_and_sim_names_a_misfit():
    """Issue 36: attention_dp must divide tp and expert_parallel needs an MoE model. Checked alone (on
    tp 1 and Qwen3-8B) both were refused, even for DeepSeek at tp 8. They are kept from links, notebook
    arguments and clicks; a combination that does not fit shows sim's error naming the field, with
    every setting kept (as a link written from that page reads back the same)."""
    page = PanelPage("admission", "?model=deepseek-v3&gpu=h200&tp=8&weight_dtype=fp8")
    page.start()
    page.change("w.expert_parallel", True)
    page.change("w.attention_dp", 3)  # the fourth button: 8 groups
    assert page.input_notices == [] and page.values["expert_parallel"] is True and page.values["attention_dp"] == 8
    moved = page.change("w.tp", 1)  # tp 2 with 8 groups
    assert page.values["tp"] == 2 and page.values["attention_dp"] == 8 and page.values["expert_parallel"] is True
    assert "must divide tp (2)" in json.dumps(moved["patch"]) and "attention_dp" in json.dumps(moved["patch"])
    linked = PanelPage("admission", "?attention_dp=8&tp=8&model=deepseek-v3&expert_parallel=true")
    assert linked.values["attention_dp"] == 8 and linked.values["expert_parallel"] is True and linked.url_notices == []
    alone = PanelPage("admission", "?expert_parallel=true")  # kept; sim says Qwen3-8B has no experts
    assert alone.values["expert_parallel"] is True and "has no routed experts" in json.dumps(alone.start()["patch"])


def test_an_fp4_cache_is_a_choice_kept_from_a_link_and_judged_with_the_gpu():
    """The KV precision buttons offer nvfp4; on a Blackwell card the page runs it, on an H100 (or
    under vLLM) sim's error names kv_dtype, and the link keeps the choice either way."""
    page = PanelPage("admission", "?model=llama-3.1-8b&gpu=b200&kv_dtype=nvfp4&engine=sglang")
    patch = json.dumps(page.start()["patch"])
    assert page.values["kv_dtype"] == "nvfp4" and page.url_notices == [] and "36,864" in patch
    moved = json.dumps(page.change("w.gpu", "h100-sxm")["patch"])
    assert page.values["kv_dtype"] == "nvfp4" and "nvfp4 needs an NVIDIA GPU with FP4 tensor cores" in moved
