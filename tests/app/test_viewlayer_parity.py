"""One view layer, two runtimes: for hundreds of random states per page, every Bokeh model
property the Panel server's views and widgets hold equals what the browser bridge would apply
(`viewlayer.pages.PanelPage.models()`, the same call the static site's worker makes)."""

import math

import panel as pn
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kvlab.app.viewlayer.pages import PanelPage
from kvlab.app.viewlayer.settings import choices
from kvlab.app.views.controls import name_widget_models
from kvlab.app.views.panels import AdmissionPanel, PhasesPanel
from kvlab.sim import model_ids

TOKENS = st.integers(min_value=0, max_value=17 * 8).map(lambda i: max(1, round(2 ** (i / 8))))
OPTIONAL_INT = st.one_of(st.none(), st.integers(min_value=1, max_value=65536))

STATE = st.fixed_dictionaries({
    "model": st.sampled_from(list(model_ids())),
    "gpu": st.sampled_from(list(choices("gpu").values())),
    "prompt_tokens": TOKENS,
    "output_tokens": TOKENS,
    "concurrency": st.integers(min_value=1, max_value=4096),
    "kv_dtype": st.sampled_from(list(choices("kv_dtype").values())),
    "weight_dtype": st.sampled_from(list(choices("weight_dtype").values())),
    "gpu_memory_utilization": st.integers(min_value=50, max_value=100).map(lambda x: x / 100),
    "force_mha": st.booleans(),
    "tp": st.sampled_from(list(choices("tp").values())),
    "allocation": st.sampled_from(list(choices("allocation").values())),
    "engine": st.sampled_from(list(choices("engine").values())),
    "profile": st.sampled_from(list(choices("profile").values())),
    "block_size_tokens": st.sampled_from([16, 32]),
    "max_num_seqs": OPTIONAL_INT,
    "max_num_batched_tokens": st.one_of(st.none(), st.integers(min_value=16, max_value=65536)),
    "spec_draft_model": st.sampled_from(["", "qwen3-0.6b", "llama-3.1-8b"]),
    "spec_tokens": st.integers(min_value=1, max_value=16),
    "spec_acceptance": st.integers(min_value=0, max_value=20).map(lambda x: x / 20),
})


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool) and not isinstance(b, bool):
        return a == b
    return a == b


class _Server:
    """A panel laid out as `kvlab serve` lays it out, with every model the bridge sets findable by name."""

    def __init__(self, cls, page: str):
        self.panel = cls()
        # One bridge session through the same sequence of states: the slider range is kept while a
        # state cannot be evaluated, in both runtimes, so history matters and must be shared.
        self.bridge = PanelPage(page)
        named = {}
        for view in self.panel.parts:  # before layout: a pane names its Bokeh model when it makes it
            named.update(view.name_models())
        root = pn.Row(self.panel.controls, self.panel.main).get_root()
        named.update(name_widget_models(root))
        # A pane's Bokeh model is made at layout time; look it up by the name its pane gave it.
        by_name = {m.name: m for m in root.references() if m.name}
        self.models = {name: by_name.get(name, target) for name, target in named.items()}

    def check(self, page: str, state: dict) -> int:
        settings_ = self.panel.settings
        settings_.param.update(**state)
        self.bridge.values = settings_.values()
        expected = self.bridge.models()
        for name, props in expected.items():
            model = self.models[name]
            for prop, value in props.items():
                held = model.data if prop == "data" else getattr(model, prop)
                if prop == "data":
                    held = {k: list(v) for k, v in held.items()}
                assert _same(held, value), f"{page} {name}.{prop}: server {held!r} != bridge {value!r} for {state}"
        return len(expected)


@pytest.fixture(scope="module")
def servers():
    return {"admission": _Server(AdmissionPanel, "admission"), "phases": _Server(PhasesPanel, "phases")}


@pytest.mark.parametrize("page", ["admission", "phases"])
def test_every_model_name_the_bridge_sets_exists_on_the_server_page(servers, page):
    expected = servers[page].bridge.models()
    assert set(expected) <= set(servers[page].models), set(expected) - set(servers[page].models)
    assert servers[page].check(page, {}) > 30


@pytest.mark.parametrize("page", ["admission", "phases"])
def test_server_models_equal_bridge_patches(servers, page):
    server = servers[page]

    @settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(state=STATE)
    def check(state):
        server.check(page, state)

    check()
