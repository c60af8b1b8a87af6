"""One view layer, two runtimes, for the serving lab: for random states (preset, policies, arrivals,
memory and cluster settings, the latency and log shown), every Bokeh model property the Panel
server's lab holds after its run equals what the browser's `LabPage` gives after the same run
(`viewlayer.lab_page`, the object the static site's worker drives), and so does the link."""

import panel as pn
import param
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kvlab.app.engine_views.lab import ServingLab
from kvlab.app.engine_views.urlstate import encode_query
from kvlab.app.viewlayer.lab_page import LabPage
from kvlab.app.viewlayer.lab_settings import LAB_PRESETS, LOG_SOURCES, METRICS, lab_choices, preset_values
from kvlab.app.viewlayer.lab_url import encode_lab_query
from kvlab.app.views.controls import name_widget_models

from tests.app.test_viewlayer_parity import _same

STATE = st.fixed_dictionaries({
    "policy": st.sampled_from(lab_choices("policy")),
    "compare_policy": st.sampled_from(lab_choices("compare_policy")),
    "arrival": st.sampled_from(("poisson", "gamma", "closed")),
    "rate_per_s": st.sampled_from((0.5, 2.0, 6.0, 20.0)),
    "num_requests": st.integers(min_value=1, max_value=120),
    "kv_dtype": st.sampled_from(lab_choices("kv_dtype")),
    "engine": st.sampled_from(lab_choices("engine")),
    "preemption": st.sampled_from(lab_choices("preemption")),
    "prefix_caching": st.booleans(),
    "disaggregated": st.booleans(),
    "max_num_seqs": st.sampled_from((4, 16, 256)),
    "seed": st.integers(min_value=0, max_value=5),
})


class _Server:
    """The serving lab laid out as `kvlab serve` lays it out, with every model the bridge sets findable by name."""

    def __init__(self):
        self.lab = ServingLab(synchronous=True)
        named = {}
        for view in self.lab.views.values():  # before layout: a pane names its Bokeh model when it makes it
            named.update(view.name_models())
        root = pn.Row(self.lab.controls, self.lab.main).get_root()
        named.update(name_widget_models(root))
        by_name = {m.name: m for m in root.references() if m.name}
        self.models = {name: by_name.get(name, target) for name, target in named.items()}

    def check(self, preset: str, state: dict, metric: str, source: str) -> int:
        s = self.lab.store.settings
        with param.parameterized.discard_events(s):  # one run of the preset with the state on top, not two
            s.preset = preset
        self.lab.controls.widgets["preset"].value = preset  # the widget follows (the setting already holds it: no run)
        s.param.update(**{**preset_values(preset), **state})
        self.lab.views["distribution"].metric.value = metric
        self.lab.views["log"].source.value = source
        page = LabPage()
        page.values = {**s.values(), "metric": metric, "log_source": source}
        page.run()
        page.finish()
        assert encode_query(s) == encode_lab_query(page.values)
        return self.compare(page.models(), f"{preset} {state}")

    def compare(self, expected: dict, state: str) -> int:
        for name, props in expected.items():
            model = self.models[name]
            for prop, value in props.items():
                held = model.data if prop == "data" else getattr(model, prop)
                if prop == "data":
                    held = {k: list(v) for k, v in held.items()}
                if prop == "value" and value is None and held != held:
                    held = None  # an empty number box: Panel sends None at first and NaN after an update
                assert _same(held, value), f"{name}.{prop}: server {held!r} != browser {value!r} for {state}"
        return len(expected)


@pytest.fixture(scope="module")
def server():
    return _Server()


def test_every_model_name_the_lab_bridge_sets_exists_on_the_server_page(server):
    expected = LabPage().models()
    assert set(expected) <= set(server.models), set(expected) - set(server.models)
    assert server.check("default", {}, "TTFT", LOG_SOURCES[0]) > 80


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(preset=st.sampled_from(LAB_PRESETS), state=STATE, metric=st.sampled_from(tuple(METRICS)), source=st.sampled_from(LOG_SOURCES))
def test_server_lab_models_equal_browser_patches(server, preset, state, metric, source):
    server.check(preset, state, metric, source)


def test_a_sweep_shows_the_same_in_both(server):
    s = server.lab.store.settings
    with param.parameterized.discard_events(s):
        s.preset = "seed004-cliff"
    server.lab.controls.widgets["preset"].value = "seed004-cliff"
    s.param.update(**{**preset_values("seed004-cliff"), "num_requests": 60, "sweep_points": 3})
    server.lab.store.run_sweep()
    page = LabPage()
    page.values = {**s.values(), "metric": server.lab.views["distribution"].metric.value,
                   "log_source": server.lab.views["log"].source.value}
    page.run()
    page.run_sweep()
    page.finish()
    expected = page.models()
    assert expected["lab_sweep.src"]["data"]["rate"] == server.lab.store.sweep_rates()
    assert len(expected["lab_sweep.band"]["data"]["rate"]) == 3 and expected["w.lab-sweep-chart"]["visible"] is True
    server.compare(expected, "a sweep of seed004-cliff")


def test_a_chosen_run_of_a_result_file_shows_the_same_in_both():
    """vLLM's --append-result file of three runs, uploaded in both runtimes, then its second run chosen
    in the chooser: the same run replayed, the same table, the same chooser. (A lab of its own: the
    module's has run a sweep.)"""
    import base64
    from pathlib import Path

    server = _Server()
    data = (Path(__file__).parents[1] / "engine" / "data" / "vllm_append_result_l40s.jsonl").read_bytes()
    store, chooser = server.lab.store, server.lab.views["bench"].chooser
    store.load_trace(data, "results.json")
    assert chooser.visible and len(chooser.options) == 3 and chooser.value == chooser.options[0]
    chooser.value = chooser.options[1]  # the student's pick
    assert store.session.trace_note.startswith("Benchmark result results.json (run 2 of 3)")
    page = LabPage()
    page.values = {**store.settings.values(), "metric": server.lab.views["distribution"].metric.value,
                   "log_source": server.lab.views["log"].source.value, "arrival": "poisson"}
    page.run()
    page.upload("results.json", base64.b64encode(data).decode())
    page.finish()
    patch = page.change("w.lab-bench-run", chooser.options[1])
    assert "w.lab-bench-run" not in patch["patch"] or "value" not in patch["patch"]["w.lab-bench-run"]  # no echo
    page.finish()
    expected = page.models()
    assert expected["w.lab-bench-run"]["value"] == chooser.options[1]
    server.compare(expected, "run 2 of a result file")
