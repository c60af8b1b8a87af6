"""D4. Offloading to a host tier."""

from __future__ import annotations

from kvlab.sim import catalog

from .. import course
from .model import Choice, Lesson, LiveView, Prediction, Step, TryThis, holds, keyed
from .runs import gib, lab, ms, pct, run

PRESET = "prefix-eviction"
HOST_GIB = 64.0
PREFIX_TOKENS = 2000
LONG_TOKENS = 32768  # the running sequence step 2 imagines decoding from host memory


def build() -> Lesson:
    off, on = lab(PRESET), lab(PRESET, host_cache_gib=HOST_GIB)
    prefix = run(prompt_tokens=PREFIX_TOKENS)
    link = catalog.gpu("h100-sxm").host_link_bytes_per_s
    copy_s = PREFIX_TOKENS * prefix.kv_bytes_per_token / link
    recompute_s = prefix.ttft_s

    q1 = Prediction(
        key="d4-hits",
        question=(f"400 different 2,000-token prefixes, each reused now and then, on a pool too small to keep them: "
                  f"{pct(off.prefix_hit_rate)} of prompt tokens hit the cache. Keep evicted blocks in {HOST_GIB:g} GiB of "
                  "host memory. The hit rate becomes about..."),
        choices=(
            Choice("the same", "The host tier does not change what the GPU pool holds, but it keeps what the pool drops."),
            Choice("about half", "The host holds many more prefixes than the GPU pool, so far more reuses find their blocks."),
            Choice("nearly all", "Only reuses can hit: the first request with each prefix still computes it."),
        ),
        **keyed(on.prefix_hit_rate, [(off.prefix_hit_rate * 1.3, "the same"), (0.75, "about half")], "nearly all"),
        reveal=(f"**{pct(on.prefix_hit_rate)}**, and median TTFT goes from {ms(off.ttft_s.p50)} to {ms(on.ttft_s.p50)}."),
        gives_away=(f"**{pct(on.prefix_hit_rate)}**",),
    )
    s1 = """
Offloading adds a slower, larger tier beneath the GPU pool: blocks evicted from HBM go to host memory instead
of disappearing, and a later request with the same prefix copies them back. It adds capacity for reuse; it
does not make anything on the GPU faster. SGLang calls it the hierarchical cache (`--enable-hierarchical-cache`),
sized as a multiple of the GPU pool (`--hicache-ratio`) or in gigabytes (`--hicache-size`). Size it against the
memory the host has free: a tier larger than that overflows the host before it helps the GPU.
"""
    step1 = Step(q1, s1, (
        holds("the host tier at least doubles the hit rate", on.prefix_hit_rate > 2 * off.prefix_hit_rate,
              f"{off.prefix_hit_rate:.3f} -> {on.prefix_hit_rate:.3f}"),
        holds("the host tier lowers median TTFT", on.ttft_s.p50 < off.ttft_s.p50, f"{off.ttft_s.p50:.4f} -> {on.ttft_s.p50:.4f}"),
    ), LiveView("lab", ("summary",), {"preset": PRESET, "host_cache_gib": HOST_GIB}, ("host_cache_gib",),
                "Many shared prefixes with a host tier; set it to 0 to compare."),
        (TryThis("In the serving lab, set Host prefix tier from 0 to 64 GiB and compare the prefix hit rate.",
                 {"preset": PRESET}, panel="serving_lab"),))

    q2 = Prediction(
        key="d4-speed",
        question=(f"A hit in host memory must cross PCIe (about {link / 1e9:.0f} GB/s each way on an H100). For one 2,000-token prefix "
                  "of Qwen3-8B, copying it back takes..."),
        choices=(
            Choice("longer than recomputing it", "PCIe is slow next to HBM, but recomputing 2,000 tokens is a full prefill."),
            Choice("a fraction of recomputing it", "The copy moves bytes at PCIe speed; recomputing does billions of FLOPs "
                                                   "per token."),
            Choice("nothing: a hit is free", "A GPU hit is nearly free; a host hit is a copy."),
        ),
        **keyed(copy_s / recompute_s, [(0.01, "nothing: a hit is free"), (1, "a fraction of recomputing it")],
                      "longer than recomputing it"),
        reveal=f"**{ms(copy_s)} to copy, against {ms(recompute_s)} to recompute** on an idle GPU.",
        gives_away=(f"**{ms(copy_s)} to copy",),
    )
    # A running sequence decoded from host memory instead of HBM: its cache read over the host link each step.
    resident = run(prompt_tokens=LONG_TOKENS, concurrency=1)
    host_read_s = resident.kv_bytes_per_sequence / link
    s2 = f"""
A host hit is cheaper than a recompute but dearer than a GPU hit, and the copy competes with everything else on
the host link. That is why offloading is a capacity tool: it widens the set of prefixes you can reuse. The
same link carries swapped-out sequences in preemption by swap (lesson D3).

It would be a poor tier to decode from. A running {resident.model_name} sequence of {LONG_TOKENS:,} tokens holds
{gib(resident.kv_bytes_per_sequence)} of cache, and every decode step reads all of it: {ms(resident.decode_kv_read_s)} from
HBM, {ms(host_read_s, 0)} over the {link / 1e9:.0f} GB/s host link. Engines copy blocks back before they are read, which is
why a host tier adds room for reuse and no speed.
"""
    step2 = Step(q2, s2, (
        holds("copying a 2,000-token prefix from host is faster than recomputing it", copy_s < recompute_s,
              f"{copy_s:.4f} vs {recompute_s:.4f} s"),
        holds("reading a 32k sequence's cache over the host link takes over 20x as long as from HBM",
              host_read_s > 20 * resident.decode_kv_read_s, f"{host_read_s:.4f} vs {resident.decode_kv_read_s:.4f} s"),
    ), None, ())
    return Lesson(
        **course.header("D4"),
        objective="Explain what a host-memory tier adds, and compare a host hit with a GPU hit and with a recompute.",
        prerequisites=("E1", "D3"),
        setup="The pool is too small to keep every prefix worth reusing. Host memory is large and cheap.",
        steps=(step1, step2),
        recap=("A host tier keeps evicted blocks: more hits, lower TTFT.",
               "A host hit costs a PCIe copy: cheaper than recompute, dearer than a GPU hit."),
        not_captured=("Host-link contention with networking and storage is not modelled; SGLang's hierarchical cache "
                      "adds a disk tier kvlab does not have.",),
        ideas=("offload-host-tier", "hierarchical-cache"),
    )
