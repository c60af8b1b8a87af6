"""The serving lab assembled: a Viewer for notebooks and the page template for `panel serve`.

    import panel as pn
    pn.extension()
    from kvlab.app.engine_views.lab import ServingLab
    ServingLab(preset="seed001-saturation")     # displays in a notebook
"""

from __future__ import annotations

import panel as pn

from ..pages import building_site
from ..shell.a11y import KvTemplate
from ..shell.page import HEADER_COLOR, LATER_CLASS, SITE
from ..shell.share import nav_links, share_buttons, theme_button
from ..viewlayer.html import BASE_CSS
from .comparison import BenchComparison, PolicyComparison
from .controls import LabControls
from .distribution import LatencyDistribution
from .log_console import LogConsole
from .settings import URL_FIELDS, LabSettings
from .store import LabStore
from .summary import LabNotices, RunStatus, SummaryTiles
from .sweep_chart import RateSweep
from .timeline import Timeline
from .ttft_by_prompt import TtftByPrompt

SLUG = "serving_lab"
TITLE = "The serving lab"
LEAD = ("Requests arrive, queue for the KV pool, share steps and sometimes lose their blocks. Change the workload or "
        "the policy; read distributions, not means.")
SIDEBAR_WIDTH_PX = 340


def _section(title: str, note: str, *items, later: bool = False) -> pn.Column:
    """A titled section; `later`: below the page's first screen (the static site builds it once the page is up)."""
    head = pn.pane.HTML(f"<h2 style='margin:18px 0 2px;font-size:1.15rem'>{title}</h2><p class='kv-caption'>{note}</p>",
                        stylesheets=[BASE_CSS], margin=(0, 10), sizing_mode="stretch_width")
    return pn.Column(head, *items, sizing_mode="stretch_width", margin=0, css_classes=[LATER_CLASS] if later else [])


class ServingLab(pn.viewable.Viewer):
    """The whole lab: sidebar controls and every view, over one LabStore."""

    def __init__(self, store: LabStore | None = None, synchronous: bool = False, **initial):
        super().__init__()
        if store is None:
            settings = LabSettings()
            if "preset" in initial:
                settings.preset = initial.pop("preset")
            settings.param.update(**initial)
            store = LabStore(settings, synchronous=synchronous)
        self.store = store
        self.controls = LabControls(store)
        st = store
        self.views = {
            "status": RunStatus(store=st), "notices": LabNotices(store=st), "summary": SummaryTiles(store=st),
            "distribution": LatencyDistribution(store=st), "comparison": PolicyComparison(store=st),
            "timeline": Timeline(store=st), "sweep": RateSweep(store=st), "log": LogConsole(store=st),
            "ttft_by_prompt": TtftByPrompt(store=st), "bench": BenchComparison(store=st),
        }
        v = self.views
        self.main = pn.Column(
            v["status"], v["notices"], v["summary"],
            _section("Latency distributions", "Histogram and cumulative distribution, p50 / p90 / p99 and the mean marked; the "
                     "comparison policy in orange, on the same requests.", v["distribution"]),
            # The status, the tiles and the distributions fill a first screen (1300 x 900 and smaller).
            _section("Time to first token by prompt length", "Is the tail the longest prompts' own prefill, or waiting "
                     "behind other work?", v["ttft_by_prompt"], later=True),
            _section("Two policies, same workload", "Every figure of the run beside the comparison's.", v["comparison"],
                     later=True),
            _section("A benchmark run, replayed", "A result file of vllm bench serve or SGLang's bench_serving, "
                     "uploaded as the trace: what the run measured beside what this run predicts.", v["bench"], later=True),
            _section("Over time", "KV cache usage and the running and waiting queues, sampled through the run.", v["timeline"],
                     later=True),
            _section("Request rate sweep: find the cliff", "The current settings at a range of Poisson rates.", v["sweep"],
                     later=True),
            _section("Engine log", "The lines vLLM and SGLang would print, and the Prometheus counters at the end.", v["log"],
                     later=True),
            sizing_mode="stretch_width", margin=0)

    def __panel__(self):
        return pn.Row(pn.Column(self.controls, width=SIDEBAR_WIDTH_PX), self.main, sizing_mode="stretch_width")


def _query() -> str:
    loc = pn.state.location
    return (loc.search or "") if loc is not None else ""


def lab_with_address_bar(query: str = "", synchronous: bool = False):
    """(ServingLab, AddressBar): the lab opened from `query`, and the nav bar whose query follows
    every setting (so the address bar and "Copy link" always hold the current state)."""
    store = LabStore.from_query(query, synchronous=synchronous)
    lab = ServingLab(store=store)
    bar = nav_links(SLUG, query=store.session.query)

    def follow(*_):
        bar.query = store.session.query

    store.settings.param.watch(follow, list(URL_FIELDS))
    return lab, bar


def build_lab_page() -> KvTemplate:
    # The static site's build lays out the default run finished (comparison included): no periodic
    # callback runs there, and the browser's worker reruns it anyway.
    lab, bar = lab_with_address_bar(_query(), synchronous=building_site())
    lead = pn.pane.HTML(f'<p class="kv-caption">{LEAD}</p>', stylesheets=[BASE_CSS], sizing_mode="stretch_width", margin=(8, 10, 0, 10))
    toolbar = pn.FlexBox(lead, *share_buttons(TITLE), flex_wrap="wrap", align_items="center", sizing_mode="stretch_width", margin=0)
    toolbar[0].styles = {"flex": "1 1 320px"}
    return KvTemplate(
        title=f"{SITE} \u00b7 {TITLE}",
        header=[bar, theme_button()],
        sidebar=[lab.controls],
        main=[toolbar, lab.main],
        header_background=HEADER_COLOR,
        sidebar_width=SIDEBAR_WIDTH_PX,
        theme="dark" if pn.config.theme == "dark" else "default",
    )
