"""The serving lab without a browser: settings mirror the engine, presets and links round-trip,
the store runs in slices and cancels, and every view fills from a real run."""

from __future__ import annotations

import panel as pn
import pytest
from kvlab.app.engine_views.lab import ServingLab
from kvlab.app.engine_views.settings import LAB_PRESETS, LabSettings
from kvlab.app.engine_views.store import LabStore
from kvlab.app.engine_views.urlstate import apply_query, encode_query
from kvlab.sim.engine import ENGINE_FIELDS, PRESETS, preset, simulate


def test_every_engine_bound_is_the_widget_bound():
    s = LabSettings()
    for name, b in ENGINE_FIELDS.items():
        if name in s.param:
            assert s.param[name].bounds == ((int(b.low), int(b.high)) if b.integer else (b.low, b.high)), name
            assert s.param[name].doc == b.help


@pytest.mark.parametrize("name", LAB_PRESETS)
def test_loading_a_preset_reproduces_its_config(name):
    """The lab exposes every field a preset sets: the run it starts is the preset's run."""
    s = LabSettings()
    if name != s.preset:
        s.preset = name
    assert s.config().to_dict() == preset(name).to_dict()


def test_lab_presets_are_the_engine_presets():
    assert set(LAB_PRESETS) == set(PRESETS)


def test_links_round_trip_and_bad_values_become_notices():
    s = LabSettings()
    s.preset = "seed001-saturation"
    s.param.update(num_requests=321, kv_dtype="fp8", prefix_caching=False, compare_policy="lanes")
    query = encode_query(s)
    assert query.startswith("preset=seed001-saturation") and "num_requests=321" in query and "clients" not in query
    t = LabSettings()
    assert apply_query(t, query) == []
    assert t.config().to_dict() == s.config().to_dict() and t.compare_policy == "lanes"
    u = LabSettings()
    notices = apply_query(u, "policy=sjf&rate_per_s=-4&num_requests=abc&prefix_caching=maybe&unknown=1")
    assert len(notices) == 4 and any(n.startswith("policy: must be one of fcfs, chunked, lanes") for n in notices)
    assert u.config().to_dict() == LabSettings().config().to_dict()


def test_store_publishes_main_then_comparison_and_reruns_on_change():
    st = LabStore(synchronous=True)
    assert st.result is not None and st.compare is not None and not st.running
    assert st.result.to_dict() == simulate(st.settings.config()).to_dict()
    st.settings.policy = "lanes"
    assert st.result.policy == "lanes" and st.compare.policy == "fcfs"
    st.settings.compare_policy = "none"
    assert st.compare is None


def test_store_reports_input_errors_instead_of_raising():
    st = LabStore(synchronous=True)
    st.settings.param.update(prompt_min_tokens=9000, prompt_max_tokens=100)
    assert st.result is None and st.issues[0]["field"] == "prompt_max_tokens"
    assert st.status == "no run: see the message above"


def test_store_runs_long_runs_in_slices_and_cancels():
    s = LabSettings()
    s.num_requests = 50_000
    st = LabStore(s, synchronous=False)
    try:
        assert st.running and 0 < st.progress < 0.5  # the first slice ran; the rest waits for the callback
        before, done = st.progress, st.done_requests
        st._tick()
        st._tick()
        assert st.progress > before and st.done_requests > done
        assert st.total_requests == 50_000  # the main run's requests (the comparison counts once it starts)
        st.cancel()
        assert not st.running
        assert st.status.startswith("cancelled after") and st.result is not None and st.result.cancelled
        assert 0 < st.result.completed < 50_000
    finally:
        if st._callback is not None:
            st._callback.stop()


def test_trace_upload():
    st = LabStore(synchronous=True)
    st.load_trace(b"arrival_s,prompt_tokens,output_tokens\n0,100,5\n0.5,300,9\n", "t.csv")
    assert st.settings.arrival == "trace" and st.result.completed == 2
    assert st.trace_note.startswith("2 requests from t.csv")
    st.load_trace(b"arrival_s,prompt_tokens,output_tokens\n0,x,5\n", "bad.csv")
    assert st.trace_note.startswith("Trace refused: row 2: prompt_tokens must be an integer")
    assert st.result.completed == 2  # the previous run stays
    st.load_trace(b"\xff\xfe\x00", "binary.bin")
    assert "not UTF-8" in st.trace_note
    st.load_trace(b"", "empty.csv")
    assert st.trace_note.startswith("Trace refused: is empty")
    st.load_trace(b"arrival_s,prompt_tokens,output_tokens\n0," + b"9" * 5000 + b",5\n", "big.csv")
    assert "at most 4,096 are accepted per row" in st.trace_note
    assert st.result.completed == 2


def test_the_file_box_reports_an_empty_file():
    """Panel turns an empty file's "" into None; the file box still hands it to the store, which
    says it is empty (the page script refuses one before it is sent; this is the server's answer)."""
    from kvlab.app.engine_views.controls import LabControls
    st = LabStore(synchronous=True)
    controls = LabControls(st)
    controls.trace._process_events({"value": "", "filename": "empty.csv", "mime_type": "text/csv"})
    assert st.trace_note.startswith("Trace refused: is empty")
    controls.trace._process_events({"value": "YXJyaXZhbF9zLHByb21wdF90b2tlbnMsb3V0cHV0X3Rva2VucwowLDEwMCw1Cg==",
                                    "filename": "one.csv", "mime_type": "text/csv"})
    assert st.trace_note.startswith("1 requests from one.csv") and st.result.completed == 1


def test_a_long_trace_is_read_in_slices():
    from kvlab.app.engine_views import store as store_mod
    st = LabStore(synchronous=True)
    text = "arrival_s,prompt_tokens,output_tokens\n" + "".join(f"{i * 0.01:.2f},50,3\n" for i in range(store_mod.TRACE_FIRST_ROWS + 5000))
    ticks = []
    real_tick = st._tick
    st._tick = lambda: (ticks.append(st.session.reading_trace), real_tick())
    st.load_trace(text.encode(), "long.csv")
    assert ticks and ticks[0] is True  # the rest of the file was read from the tick callback
    assert st.result.completed == store_mod.TRACE_FIRST_ROWS + 5000


def test_every_view_fills_from_a_run():
    pn.extension()
    lab = ServingLab(synchronous=True, preset="seed001-saturation", num_requests=300)
    v = lab.views
    r = lab.store.result
    assert 'data-kv="lab-ttft-p50"' in v["summary"].pane.object
    assert len(v["distribution"].src["main"].data["top"]) == 48
    assert sum(v["distribution"].src["main"].data["top"]) == pytest.approx(1.0)
    v["distribution"].metric.value = "ITL"
    assert v["distribution"].spans[("p99", "h")].location == pytest.approx(r.itl_s.p99)
    assert "ITL: p50" in v["distribution"].caption.object
    assert len(v["timeline"].main.data["t"]) == len(r.series["t_s"])
    assert v["timeline"].preempt.data["t"]  # seed 001 preempts
    assert "lab-compare" in v["comparison"].pane.object
    v["log"].source.value = "Prometheus /metrics"
    assert "vllm:num_preemptions_total" in v["log"].pane.object
    lab.store.settings.param.update(sweep_low_per_s=0.5, sweep_high_per_s=2.0, sweep_points=3)
    lab.store.run_sweep()
    assert len(lab.store.sweep.points) == 3 and len(v["sweep"].src.data["rate"]) == 3
