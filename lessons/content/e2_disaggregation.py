"""E2. Disaggregating prefill and decode is a sizing problem."""

from __future__ import annotations

from kvlab.sim.engine import preset
from kvlab.sim.engine.run import prepare

from .. import course
from .model import Choice, Lesson, LiveView, Prediction, Step, TryThis, holds, keyed
from .runs import lab, ms, secs

PRESET = "disagg-1p1d"
NETWORK_BYTES_PER_S = 400e9 / 8  # a 400 Gb/s link between machines (InfiniBand NDR, one port)
STEP2_STATE = {"preset": PRESET, "rate_per_s": 12.0, "itl_target_s": 0.025}


def pair(rate: float, itl_target_s: float):
    d = lab(PRESET, rate_per_s=rate, itl_target_s=itl_target_s)
    c = lab(PRESET, rate_per_s=rate, itl_target_s=itl_target_s, disaggregated=False, replicas=2)
    return d, c


def build() -> Lesson:
    d8, c8 = pair(8.0, 0.015)
    d12, c12 = pair(STEP2_STATE["rate_per_s"], STEP2_STATE["itl_target_s"])

    q1 = Prediction(
        key="e2-low",
        question=(f"Two H100s serve Qwen3-8B at 8 requests/s. A request counts as good only if both targets hold: its "
                  f"first token within {d8.ttft_target_s:g} s, and its mean inter-token latency at most "
                  f"{ms(d8.itl_target_s, 0)}. Option A: two colocated replicas. Option B: one prefill GPU and one decode "
                  "GPU, moving each request's cache between them. Which completes more good requests per second "
                  "(goodput)?"),
        choices=(
            Choice("colocated", "Colocated replicas have twice the prefill capacity, but every prefill interrupts the "
                                "decodes sharing its GPU."),
            Choice("disaggregated", "The decode GPU never runs a prefill, so decode steps stay short and steady."),
        ),
        **keyed(d8.goodput_per_s / c8.goodput_per_s, [(1.0, "colocated")], "disaggregated"),
        reveal=(f"**Disaggregated {d8.goodput_per_s:.2f}, colocated {c8.goodput_per_s:.2f} requests/s.** p99 ITL "
                f"{ms(d8.itl_s.p99)} against {ms(c8.itl_s.p99)}; median TTFT {ms(d8.ttft_s.p50, 0)} against "
                f"{ms(c8.ttft_s.p50, 0)} (one GPU does all the prefills, and the cache must travel)."),
        gives_away=(f"**Disaggregated {d8.goodput_per_s:.2f}",),
    )
    # The KV transfer of a mean request: its prompt's cache over the link the engine assumes (sim.engine.setup:
    # the GPU's interconnect unless a bandwidth is set), and over a 400 Gb/s network link between machines.
    setup = prepare(preset(PRESET).with_(rate_per_s=8.0)).setup
    q = d8.requests
    cache_bytes = sum(q["prompt_tokens"]) / len(q["prompt_tokens"]) * setup.evaluation.kv_bytes_per_token
    transfer_s, network_s = cache_bytes / setup.kv_transfer_bytes_per_s, cache_bytes / NETWORK_BYTES_PER_S
    s1 = f"""
Disaggregation separates the two phases so neither disturbs the other: decode steps no longer carry prefill
chunks, so ITL is low and steady. The costs are a KV transfer per request and a fixed split of GPUs between
the phases. The transfer is the prompt's cache: {cache_bytes / 1e6:,.0f} MB for a request of mean length here. Over
the {setup.kv_transfer_bytes_per_s / 1e9:,.0f} GB/s link between these two GPUs it takes {ms(transfer_s, 2)}, under 1% of
the median TTFT of {ms(d8.ttft_s.p50, 0)}. Between machines, over a 400 Gb/s network link, it would take
{ms(network_s)}. It grows with the prompt, and every request pays it once.
"""
    step1 = Step(q1, s1, (
        holds("at 8 req/s with a 15 ms target, 1P+1D has the higher goodput", d8.goodput_per_s > c8.goodput_per_s,
              f"{d8.goodput_per_s:.2f} vs {c8.goodput_per_s:.2f}"),
        holds("disaggregation cuts p99 ITL at least 3x", d8.itl_s.p99 * 3 < c8.itl_s.p99, f"{d8.itl_s.p99:.4f} vs {c8.itl_s.p99:.4f}"),
        holds("disaggregation raises median TTFT", d8.ttft_s.p50 > c8.ttft_s.p50, f"{d8.ttft_s.p50:.3f} vs {c8.ttft_s.p50:.3f}"),
        holds("the KV transfer of a mean request is under 1% of the median TTFT", transfer_s < 0.01 * d8.ttft_s.p50,
              f"{transfer_s:.5f} vs {d8.ttft_s.p50:.3f} s"),
    ), LiveView("lab", ("summary",), {"preset": PRESET}, ("disaggregated", "rate_per_s"),
                "One prefill and one decode instance at 8 requests/s."),
        (TryThis("In the serving lab, untick disaggregated and set 2 colocated replicas; compare goodput.",
                 {"preset": PRESET}, panel="serving_lab"),))

    q2 = Prediction(
        key="e2-high",
        question=(f"Now 12 requests/s, a looser inter-token target of at most {ms(d12.itl_target_s, 0)}, and the same "
                  f"first-token target of {d12.ttft_target_s:g} s. Which has more goodput?"),
        choices=(
            Choice("colocated", "One prefill GPU cannot keep up with 12 prompts a second; two colocated GPUs share it."),
            Choice("disaggregated", "Steady decode helps only if the prefill side keeps up."),
        ),
        **keyed(d12.goodput_per_s / c12.goodput_per_s, [(1.0, "colocated")], "disaggregated"),
        reveal=(f"**Colocated {c12.goodput_per_s:.2f}, disaggregated {d12.goodput_per_s:.2f} requests/s.** The decode GPU "
                f"still keeps every stream steady (median of the requests' mean ITL {ms(d12.tpot_s.p50)}), but the one "
                f"prefill GPU falls behind: median TTFT {secs(d12.ttft_s.p50)} against the {d12.ttft_target_s:g} s "
                f"target, where the colocated pair gives {secs(c12.ttft_s.p50)}."),
        gives_away=(f"**Colocated {c12.goodput_per_s:.2f}",),
    )
    s2 = """
Goodput needs both targets, and here the first-token one decides: a request whose first token comes too late
is lost however steady its stream. The split is a sizing decision: the prefill pool must keep up with arrivals,
and the decode pool with the running streams. 1P+1D is right for one load and target and wrong for another; the ratio has to follow the
traffic.
"""
    step2 = Step(q2, s2, (
        holds("at 12 req/s, 25 ms, colocated has the higher goodput", c12.goodput_per_s > d12.goodput_per_s,
              f"{c12.goodput_per_s:.2f} vs {d12.goodput_per_s:.2f}"),
        holds("at 12 req/s disaggregated's median TTFT misses the first-token target", d12.ttft_s.p50 > d12.ttft_target_s,
              f"{d12.ttft_s.p50:.2f} s vs {d12.ttft_target_s:g} s"),
        holds("at 12 req/s disaggregated's median mean ITL meets the 25 ms target", d12.tpot_s.p50 <= d12.itl_target_s,
              f"{d12.tpot_s.p50 * 1e3:.1f} ms"),
    ), LiveView("lab", ("summary",), STEP2_STATE, ("disaggregated",),
                "1P+1D at 12 requests/s with the 25 ms inter-token target."),
        (TryThis("The serving lab opens at 12 requests/s with the 25 ms inter-token target: note goodput, then untick "
                 "disaggregated and set 2 colocated replicas; then try 1 prefill and 2 decode instances.",
                 STEP2_STATE, panel="serving_lab"),))
    return Lesson(
        **course.header("E2"),
        objective="Judge when one prefill plus one decode instance beats two colocated ones, and what the KV transfer costs.",
        prerequisites=("C3",),
        setup="Two GPUs, two ways to use them.",
        steps=(step1, step2),
        recap=("Goodput counts a request only if its first token and its stream both meet their targets.",
               "Disaggregation buys steady decode at the price of KV transfer and a fixed split.",
               "It wins where ITL targets are tight and prefill keeps up; it loses when one side saturates."),
        not_captured=("The KV transfer uses one link bandwidth per GPU with no contention or protocol overhead.",),
        ideas=("disaggregation", "kv-transfer"),
    )
