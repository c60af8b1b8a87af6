"""The serving lab's settings live in one table (`viewlayer.lab_settings.LAB_FIELDS`): both runtimes'
field lists, the server's param class, the link codec and both sidebars come from it, so a setting
added to the table (plus its engine field) appears everywhere with no other edit."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import param
from kvlab.app.engine_views.settings import LabSettings
from kvlab.app.engine_views.urlstate import apply_query, encode_query
from kvlab.app.viewlayer import lab_settings
from kvlab.app.viewlayer.lab_controls import view_lab_controls, widget_name
from kvlab.app.viewlayer.lab_page import LabPage
from kvlab.app.viewlayer.lab_settings import LAB_FIELDS, URL_FIELDS, bound, lab_choices, lab_defaults


def test_both_runtimes_take_their_fields_from_the_table():
    names = [f.name for f in LAB_FIELDS]
    assert list(URL_FIELDS) == names
    assert [n for n in LabSettings.param if n != "name"] == names  # the server's params: one per row, in order
    page = LabPage()
    assert set(names) <= set(page.values) and set(page.values) - set(names) == {"metric", "log_source"}
    sidebar = view_lab_controls(lab_defaults())
    assert {widget_name(f.name) for f in LAB_FIELDS if f.section or f.group != "sweep"} <= set(sidebar)


def test_every_param_is_its_row():
    s = LabSettings()
    defaults = lab_defaults()
    for f in LAB_FIELDS:
        p = s.param[f.name]
        assert p.label == f.label and getattr(s, f.name) == defaults[f.name], f.name
        if lab_choices(f.name) is not None:
            assert isinstance(p, param.Selector)
        elif f.boolean:
            assert isinstance(p, param.Boolean)
        else:
            low, high, integer, optional = bound(f.name)
            assert isinstance(p, param.Integer) == integer and p.allow_None == optional, f.name
            assert p.bounds == ((int(low), int(high)) if integer else (low, high)), f.name


# A setting the engine has (the KV transfer link of a disaggregated cluster) and the lab does not yet show.
NEW_ROW = '    F("kv_transfer_gb_per_s", "cluster", "KV transfer link (GB/s)", section=CL),\n'
ANCHOR = '    F("decode_instances", "cluster", "Decode instances", section=CL),\n'
CHECK = """
import sys, types
import kvlab.app.viewlayer as pkg
path = pkg.__path__[0] + "/lab_settings.py"
source = open(path).read()
assert ANCHOR in source and "kv_transfer_gb_per_s" not in source
module = types.ModuleType("kvlab.app.viewlayer.lab_settings")
module.__package__, module.__file__ = "kvlab.app.viewlayer", path
sys.modules[module.__name__] = module
exec(compile(source.replace(ANCHOR, ANCHOR + NEW_ROW), path, "exec"), module.__dict__)

from kvlab.app.engine_views.controls import LabControls
from kvlab.app.engine_views.store import LabStore
from kvlab.app.engine_views.urlstate import apply_query, encode_query
from kvlab.app.viewlayer.lab_page import LabPage
from kvlab.sim.engine import ENGINE_FIELDS

link = "?preset=disagg-1p1d&num_requests=20&kv_transfer_gb_per_s=5"
# The server: a parameter with the engine's bounds and help, read from and written to the link, run, shown.
store = LabStore.from_query(link, synchronous=True)
p = store.settings.param["kv_transfer_gb_per_s"]
b = ENGINE_FIELDS["kv_transfer_gb_per_s"]
assert p.bounds == (b.low, b.high) and p.doc == b.help and p.label == "KV transfer link (GB/s)"
assert store.settings.kv_transfer_gb_per_s == 5.0 and "kv_transfer_gb_per_s=5&" in encode_query(store.settings) + "&"
assert store.result.config["cluster"]["kv_transfer_gb_per_s"] == 5.0
assert "kv_transfer_gb_per_s" in LabControls(store).widgets
store.settings.kv_transfer_gb_per_s = 7.0
assert store.result.config["cluster"]["kv_transfer_gb_per_s"] == 7.0, "a change reruns"
# The browser: the same link, the same value, run, its box in the sidebar, a refused value a notice.
page = LabPage(link)
page.start(); page.finish()
assert page.values["kv_transfer_gb_per_s"] == 5.0 and page.query == encode_query(store.settings).replace("=7", "=5")
assert page.result.config["cluster"]["kv_transfer_gb_per_s"] == 5.0
assert page.models()["w.lab-kv-transfer-gb-per-s"]["value"] == 5.0
page.change("w.lab-kv-transfer-gb-per-s", 9.0)
assert page.result.config["cluster"]["kv_transfer_gb_per_s"] == 9.0
bad = LabPage("?kv_transfer_gb_per_s=-1")
assert any(i["message"].startswith("kv_transfer_gb_per_s:") for i in bad.link_issues)
print("ok")
"""


def test_a_row_added_to_the_table_appears_in_both_runtimes_and_the_link():
    """A new row in lab_settings.py (and nothing else) gives the server a parameter, a widget and a run
    setting, the browser a value, a widget and a run setting, and the link a field with its notices."""
    script = f"ANCHOR = {ANCHOR!r}\nNEW_ROW = {NEW_ROW!r}\n" + textwrap.dedent(CHECK)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]


def test_the_server_and_the_browser_read_a_link_alike():
    """One codec: the param settings hold exactly the values the browser's session reads from a link."""
    link = "?preset=seed001-saturation&num_requests=321&kv_dtype=fp8&prefix_caching=false&rate_per_s=-3&tp=3"
    s = LabSettings()
    notices = apply_query(s, link)
    page = LabPage(link)
    assert notices == [i["message"] for i in page.link_issues] and len(notices) == 2
    assert {k: getattr(s, k) for k in URL_FIELDS} == {k: page.values[k] for k in URL_FIELDS}
    assert encode_query(s) == page.query
    assert lab_settings.merge_values(lab_defaults(), {"preset": "seed001-saturation"})["num_requests"] != 321


def test_the_lab_has_the_panels_speculative_card_and_runs_it():
    """The "Speculative decoding" card: no draft is sim's None (the list holds text), a draft model
    or an EAGLE head runs in the engine, and the server's Scenario is the browser's."""
    assert lab_settings.section_fields("Speculative decoding") == ("spec_method", "spec_draft_model", "spec_tokens",
                                                                   "spec_acceptance")
    values = lab_defaults()
    assert values["spec_draft_model"] == "" and lab_settings.lab_scenario(values).spec_draft_model is None
    for changes in ({"spec_draft_model": "qwen3-0.6b"}, {"spec_method": "eagle"}):
        chosen = lab_settings.merge_values(values, changes)
        cfg = lab_settings.lab_config(chosen)
        assert cfg.scenario.spec_method == chosen["spec_method"]
        settings = LabSettings()
        settings.param.update(**changes)
        assert settings.scenario() == cfg.scenario
