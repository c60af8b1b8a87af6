"""B2. The levers of TTFT and of ITL."""

from __future__ import annotations

from .. import course
from .model import Choice, Lesson, LiveView, Prediction, Step, TryThis, keyed, near
from .runs import gib, ms, run, times

SCENE = dict(model="qwen3-14b", concurrency=64)


def build() -> Lesson:
    a100, h100, h200 = (run(gpu=g, **SCENE) for g in ("a100-80", "h100-sxm", "h200"))
    ttft_change = h200.ttft_s / h100.ttft_s
    itl_change = h100.itl_s / h200.itl_s
    pool_change = h200.kv_pool_bytes / h100.kv_pool_bytes

    q1 = Prediction(
        key="b2-ttft",
        question=(f"{h100.model_name}, 4k prompts, 64 users. Move from an H100 to an H200: same tensor cores, more and "
                  f"faster memory ({h200.hbm_bandwidth_bytes_per_s / 1e12:.2f} vs {h100.hbm_bandwidth_bytes_per_s / 1e12:.2f} TB/s). "
                  f"Time to first token changes by..."),
        choices=(
            Choice("nothing", "A 4k prefill is compute-bound, and the compute did not change."),
            Choice("about 1.4x faster", "That is the bandwidth ratio; it applies to memory-bound steps, and this one "
                                        "is not."),
            Choice("about 3x faster", "That is the A100-to-H100 compute ratio; the H200 has the H100's compute."),
        ),
        **keyed(ttft_change, [(0.5, "about 3x faster"), (0.85, "about 1.4x faster")], "nothing"),
        reveal=f"**{ms(h100.ttft_s)} on both.**",
        gives_away=(f"**{ms(h100.ttft_s)} on both.**",),
    )
    s1 = f"""
A complaint about the wait before the first word is a complaint about prefill, and prefill of a real prompt is
compute-bound: more FLOP/s helps, more bandwidth does not. From an A100 to an H100 ({h100.peak_flops / a100.peak_flops:.2f}x
the BF16 compute)
time to first token goes from {ms(a100.ttft_s)} to {ms(h100.ttft_s)}, {times(a100.ttft_s / h100.ttft_s)}.
"""
    step1 = Step(q1, s1, (
        near("H200 TTFT equals H100 TTFT", ttft_change, 1.0, 1e-9),
        near("A100 to H100 cuts TTFT about 3.17x", a100.ttft_s / h100.ttft_s, 3.17, 0.03),
        near("A100 TTFT is about 745 ms", a100.ttft_s * 1e3, 745, 0.03),
    ), LiveView("steady", ("phase_numbers",), {**SCENE, "gpu": "a100-80"}, ("gpu",),
                "Time to first token and inter-token latency on the A100; switch the GPU to compare."),
        (TryThis("On the phases panel, switch GPU between A100, H100 and H200 and read TTFT.", {**SCENE, "gpu": "a100-80"},
                 panel="phases"),))

    q2 = Prediction(
        key="b2-itl",
        question=f"Same move. Inter-token latency on the H100 is {ms(h100.itl_s)}. On the H200 it is about...",
        choices=(
            Choice(f"still {ms(h100.itl_s)}", "Unchanged would mean decode waits on compute; it waits on memory."),
            Choice("about 20 ms", "Decode reads weights and cache every step; faster memory shortens it by nearly the "
                                  "bandwidth ratio."),
            Choice("about 9 ms", "That would be three times faster: more than the bandwidth ratio allows."),
        ),
        **keyed(h200.itl_s * 1e3, [(14, "about 9 ms"), (25, "about 20 ms")], f"still {ms(h100.itl_s)}"),
        reveal=f"**{ms(h200.itl_s)}**, {times(itl_change)} faster.",
        gives_away=(f"**{ms(h200.itl_s)}**",),
    )
    s2 = f"""
Decode is memory-bound, so its lever is bandwidth. The H200 also has more memory: its pool is
{gib(h200.kv_pool_bytes)} against {gib(h100.kv_pool_bytes)}, {times(pool_change)} (more than the capacity ratio,
because the weights take the same bytes on both). Map the complaint to the phase: slow first word, buy
compute (or shorter prompts, or prefix caching); slow streaming, buy bandwidth (or smaller bytes per step).
"""
    step2 = Step(q2, s2, (
        near("H100 ITL is about 28.0 ms", h100.itl_s * 1e3, 28.0, 0.03),
        near("H200 ITL is about 19.6 ms", h200.itl_s * 1e3, 19.6, 0.03),
        near("A100 to H100 cuts ITL about 1.64x", a100.itl_s / h100.itl_s, 1.64, 0.03),
        near("the H200 pool is more than twice the H100's", pool_change, 2.06, 0.03),
    ), LiveView("steady", ("phase_numbers", "hbm_bar"), {**SCENE, "gpu": "h200"}, ("gpu",),
                "Both latencies and the card, on the chosen GPU."),
        (TryThis("On the admission panel, switch GPU from H100 to H200 and compare the pools.", SCENE),))
    return Lesson(
        **course.header("B2"),
        objective="Map a latency complaint to the phase behind it and to the resource that moves it.",
        prerequisites=("B1",),
        setup="Three GPUs, three ratios of compute to bandwidth. Which latency follows which?",
        steps=(step1, step2),
        recap=("TTFT of a real prompt follows compute; ITL follows bandwidth.",
               "More memory grows the pool by more than its own ratio, because the weights stay the same size."),
        not_captured=("Under load, TTFT includes queueing, which no GPU upgrade removes by itself (Unit C).",),
        ideas=("ttft-itl-levers", "gpu-choice"),
    )
