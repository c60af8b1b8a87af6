"""One GPU's HBM as a single bar, filled left to right in the order an engine fills it:
reserve it never touches, weights, activation reserve, then the KV pool (used by the batch,
and free). A vertical line marks the card's capacity, so weights that do not fit visibly cross it.
"""

from __future__ import annotations

from kvlab.sim.engine_rules import reads_setting
from kvlab.sim.parallelism import rank_holds_line

from . import format as fmt
from . import html, readouts
from .drag import handle
from .palette import COLORS

GIB = 2**30
SEGMENTS = (
    ("context_reserve", "Driver & context reserve"),
    ("non_torch", "Non-torch memory"),
    ("weights", "Weights"),
    ("activation", "Activation reserve"),
    ("kv_used", "KV pool: used by the batch"),
    ("kv_free", "KV pool: free"),
)
# The edge a student drags: the right end of the share outside gpu_memory_utilization, which sim
# computes as capacity x (1 - utilization) (sim/memory.py, MemoryBudget.context_reserve_bytes), so
# the edge at x GiB is utilization 1 - x / capacity. Only the engines that read the setting draw it.
EDGE_LABEL = "Edge of the memory the engine may use (gpu_memory_utilization)"
COLUMNS = ("left", "right", "color", "name", "gib", "share", "label", "label_x", "label_color", "key")
DARK_TEXT_ON = {"activation", "kv_free", "context_reserve"}  # light fills need dark text
ALWAYS_LISTED = ("weights", "kv_used", "kv_free")


def segment_bytes(result) -> dict[str, float]:
    r = result
    if r is None or not r.ok:
        return {key: 0.0 for key, _ in SEGMENTS}
    return {
        "context_reserve": r.context_reserve_bytes,
        "non_torch": r.non_torch_bytes,
        "weights": r.weight_bytes,
        "activation": r.activation_reserve_bytes,
        "kv_used": r.kv_pool_used_bytes,
        "kv_free": r.kv_pool_free_bytes,
    }


def view_hbm_bar(result) -> dict:
    r = result
    sizes = segment_bytes(r)
    capacity = r.capacity_bytes if r is not None and r.ok else GIB
    cols = {k: [] for k in COLUMNS}
    left = 0.0
    for key, name in SEGMENTS:
        size = sizes[key]
        right = left + size
        share = size / capacity
        cols["key"].append(key)
        cols["left"].append(left / GIB)
        cols["right"].append(right / GIB)
        cols["color"].append(COLORS[key])
        cols["name"].append(name)
        cols["gib"].append(size / GIB)
        cols["share"].append(share)
        # Drawn inside the segment where it fits in the window (app/views/hbm_bar.py decides, by pixels).
        cols["label"].append(fmt.gib(size) if size > 0 else "")
        cols["label_x"].append((left + right) / 2 / GIB)
        cols["label_color"].append("#1F2328" if key in DARK_TEXT_ON else "#FFFFFF")
        left = right
    if r is None or not r.ok:
        # No figures (a setting sim refused): an empty bar on a 0-1 GiB axis and a title that says
        # why, not an axis of 1 byte ("0.000e+0 ... 8.000e-10 GiB").
        return {"bars": {"data": cols}, "legend": {"html": ""}, "capacity": {"location": None}, "edge": edge(None),
                "x_range": {"end": 1.0}, "title": readouts.title("HBM: no figures until the settings above are fixed")}
    gpu = f" {r.gpu_name}" if r.gpu_name else ""
    gpus = (r.rank_holds or {}).get("gpus", 1)
    rank = f" (one of {gpus} ranks)" if gpus > 1 else ""
    return {
        "bars": {"data": cols},
        # The legend is HTML, not a Bokeh Legend: it wraps on a phone, reads the live GiB, and is
        # text a screen reader and the browser tests can find.
        "legend": {"html": html.legend([(COLORS[key], name, fmt.gib(sizes[key]), key) for key, name in SEGMENTS
                                        if sizes[key] > 0 or key in ALWAYS_LISTED])
                           + (html.note(rank_holds_line(r.rank_holds), "kv-rank-holds") if rank and r.rank_holds else "")},
        "capacity": {"location": capacity / GIB},
        "edge": edge(r),
        "x_range": {"end": max(capacity, left) / GIB * 1.01},
        "title": readouts.title(f"HBM of one{gpu or ' GPU'}{rank}, {capacity / GIB:,.1f} GiB"),
    }


def edge(result) -> dict:
    """The utilisation edge's handle: at the end of the share outside gpu_memory_utilization, where the
    engine reads that setting (none without a result, or under SGLang's or TensorRT-LLM's accounting)."""
    r = result
    drawn = r is not None and r.ok and reads_setting(r.scenario["engine"], "gpu_memory_utilization")
    capacity = r.capacity_bytes / GIB if drawn else 1.0
    return handle("gpu_memory_utilization", r.context_reserve_bytes / GIB if drawn else None, EDGE_LABEL,
                  a=capacity, b=-capacity)
