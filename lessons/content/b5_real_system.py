"""B5. Check it on a real system: the boot line, Little's law, the alerts."""

from __future__ import annotations

from kvlab.sim import Scenario
from kvlab.sim.resolve import resolve_architecture
from kvlab.sim.units import GIB

from .. import course
from .model import Choice, Lesson, LiveView, Prediction, Step, TryThis, between, holds, keyed, near
from .runs import lab, run

MAX_LEN = 32768
LONG = 32768  # the prefill whose score matrix step 2 sizes


def build() -> Lesson:
    boot = run(engine="vllm", max_model_len=MAX_LEN)
    real = run(engine="vllm", max_model_len=MAX_LEN, prompt_tokens=2816, output_tokens=256, allocation="paged",
               concurrency=100_000)
    line = next((entry for entry in boot.log if "Maximum concurrency" in entry), "")
    ratio = real.max_sequences / boot.max_concurrency
    busy = lab("default")
    ll = busy.littles_law
    q = busy.requests
    mean_tokens = sum(q["prompt_tokens"]) / len(q["prompt_tokens"]) + sum(q["output_tokens"]) / len(q["output_tokens"])
    room = busy.kv_pool_tokens / mean_tokens  # requests of the run's mean length that fit the pool at once
    sat = lab("preemption-demo")

    q1 = Prediction(
        key="b5-boot",
        question=(f"vLLM starts and logs \u201c{line.strip()}\u201d. Your requests are about 3k tokens (prompt plus answer). "
                  "How many can it really run at once?"),
        choices=(
            Choice(f"about {boot.max_concurrency:.0f}", "The line divides the pool by max_model_len, the longest request "
                                                        "allowed, not the requests you send."),
            Choice("about 10x that", "Paged blocks are spent on the tokens a request really has; 3k is about a tenth "
                                     "of 32k."),
            Choice("fewer", "The line is a worst case, not an optimistic figure."),
        ),
        **keyed(ratio, [(0.9, "fewer"), (4, f"about {boot.max_concurrency:.0f}")], "about 10x that"),
        reveal=f"**{real.max_sequences}** of them: {ratio:.0f} times the logged figure.",
        gives_away=(f"**{real.max_sequences}** of them",),
    )
    s1 = f"""
vLLM's boot log prints the KV pool in tokens and a "maximum concurrency" computed for requests of
max_model_len tokens. It is your ceiling only if every request is that long; divide the pool by your real
request length instead. Then check the ceiling against demand with **Little's law**: requests in the system =
arrival rate x time each spends there. In the lab's default run, {ll['arrival_rate_per_s']:.2f} requests/s x
{ll['mean_e2e_s']:.2f} s = {ll['rate_x_e2e']:.1f}, and the engine held {ll['mean_in_system']:.1f} on average.
Set that against the ceiling: that run's pool holds {busy.kv_pool_tokens:,} tokens, room for about {room:.0f} of its
requests at their mean length, so demand is {ll['mean_in_system'] / room:.0%} of what the pool could hold. At the
same time per request, the pool alone would allow about {room / ll['mean_e2e_s']:.1f} requests a second. The GPU's
compute can run out sooner, and then the time per request grows: the sweep in lesson C2 finds where.
"""
    step1 = Step(q1, s1, (
        between("vLLM logs about 12x for Qwen3-8B at 32,768 tokens", boot.max_concurrency, 10, 14),
        near("the logged figure is the pool over 32,768-token requests", boot.max_concurrency,
             boot.kv_pool_tokens / MAX_LEN, 0.01),
        holds("3k requests really fit about 10x the logged figure", 8 <= ratio <= 14, f"x{ratio:.2f}"),
        near("Little's law holds in the lab run", ll["rate_x_e2e"], ll["mean_in_system"], 0.05),
        holds("the lab run's demand is under half of what its pool could hold", ll["mean_in_system"] < room / 2,
              f"{ll['mean_in_system']:.1f} of {room:.0f}"),
    ), LiveView("steady", ("engine_log",), {"engine": "vllm", "max_model_len": MAX_LEN}, ("max_model_len",),
                "The boot log vLLM's accounting would print."),
        (TryThis("On the admission panel with vllm accounting, set max_model_len to 32768 and read the log; then set "
                 "the prompt to 2,816 tokens and Allocation to paged.", {"engine": "vllm"}),))

    q2 = Prediction(
        key="b5-alert",
        question=("Which line of a vLLM deployment's output tells you the pool was too small only after it happened?"),
        choices=(
            Choice("GPU KV cache usage", "Usage near 100% is normal under load: a full pool is a used pool."),
            Choice("a preemption warning", "A preemption means a running request lost its blocks: the pool could not "
                                           "hold what was admitted."),
            Choice("Avg generation throughput", "Throughput changes for many reasons; it does not name memory."),
        ),
        # Keyed by the saturated run's preemptions (a claim checks each is logged as a warning).
        **keyed(sat.preemptions, [(0.5, "GPU KV cache usage")], "a preemption warning"),
        reveal=(f"**Preemptions.** In the saturated lab run, {sat.preemptions:,} of them, each logged as a warning and "
                "counted in the metrics."),
        gives_away=("**Preemptions.**",),
    )
    decode = run()  # 32 users at 4k, the panels' default
    long_prompt = run(prompt_tokens=LONG)
    scores = resolve_architecture(Scenario(prompt_tokens=LONG)).attention_scores_bytes(LONG)
    tensor_share = decode.decode_arithmetic_intensity / decode.ridge_intensity
    s2 = f"""
Watch three things: usage near full with a queue (saturation), preemptions above zero (the pool could not hold
what was admitted), and the ratio of requests in the system to the ceiling. GPU "utilization" from
nvidia-smi only says a kernel was running, not how much of the GPU it used. DCGM's counters split it. Take the
decode step of {decode.batch} users at 4k on {decode.model_name}: it does {decode.decode_arithmetic_intensity:.0f} FLOP
for each byte it reads, against the GPU's ridge of {decode.ridge_intensity:.0f}. While memory streams at full
bandwidth the tensor cores have work for about {tensor_share:.0%} of the step, so DCGM's DRAM activity reads high and its
tensor-pipe activity low, while nvidia-smi shows the GPU close to 100% busy.

FlashAttention speeds attention, but it does not shrink the cache: the bytes per token are set by the model. What it
removes is the score matrix. For one {long_prompt.model_name} prefill of {LONG:,} tokens, that matrix holds every
query against every key for every query head: {scores / GIB:.0f} GiB for one layer, which FlashAttention computes tile by
tile and never stores. The sequence's cache is {long_prompt.kv_bytes_per_sequence / GIB:.1f} GiB either way. It is a
saving in activation memory and prefill time, not in the cache.
"""
    step2 = Step(q2, s2, (
        holds("the saturated run logs preemption warnings", any("preempted" in x for x in sat.vllm_log), str(sat.preemptions)),
        between("the default decode step keeps the tensor cores busy 5% to 12% of the time", tensor_share, 0.05, 0.12),
        holds("a 32k prefill's score matrix for one layer is over ten times the sequence's whole cache",
              scores > 10 * long_prompt.kv_bytes_per_sequence, f"{scores / GIB:.1f} vs {long_prompt.kv_bytes_per_sequence / GIB:.2f} GiB"),
    ), LiveView("lab", ("log",), {"preset": "preemption-demo"}, (), "The vLLM-style log and metrics of the saturated run."),
        (TryThis("In the serving lab, open the engine log of the preemption demo and find the first warning.",
                 {"preset": "preemption-demo"}, panel="serving_lab"),))
    return Lesson(
        **course.header("B5"),
        objective="Read vLLM's boot line and steady-state log, check capacity with Little's law, and know which "
                  "signals mean trouble.",
        prerequisites=("A5", "D1"),
        setup="Everything so far can be checked against a running engine's own output.",
        steps=(step1, step2),
        recap=("The boot line's concurrency assumes max_model_len requests.",
               "Little's law: in system = rate x time.", "Alert on preemptions, not on usage."),
        not_captured=("kvlab prints the lines an engine would print; it does not run one. DCGM and nvidia-smi counters "
                      "are not simulated.",),
        ideas=("vllm-log", "littles-law", "preemption-alert", "flashattention-myth", "dcgm-vs-smi"),
    )
