"""D1. Saturation: what sets the running count."""

from __future__ import annotations

from .. import course
from .model import Choice, Lesson, LiveView, Prediction, Step, TryThis, holds, keyed
from .runs import lab, pct

PRESET = "seed001-saturation"
REQUESTS = 600


def steady(r, key: str) -> float:
    """Mean of a series over the middle of the run, after the start-up and before the closed loop drains."""
    v = r.series[key]
    mid = v[len(v) // 4: len(v) * 3 // 5]
    return sum(mid) / len(mid)


def build() -> Lesson:
    r = lab(PRESET, num_requests=REQUESTS)
    more = lab(PRESET, num_requests=REQUESTS, max_num_seqs=300)
    short = lab(PRESET, num_requests=REQUESTS, output_tokens=1500)
    slots = r.config["scenario"]["max_num_seqs"]
    running, usage = steady(r, "running"), steady(r, "kv_usage")
    # The published figures the prose sets beside these: ../shared/seeds/001 ("server-side gen throughput of 780-890
    # tok/s", "0.1 req/s at 4,116 tokens each yields ~411 tok/s effective", the client's figure later found misleading).
    gen = steady(r, "generation_tokens_per_s")  # the log's generation rate, mid-run
    q = r.requests
    mean_output = sum(q["output_tokens"]) / len(q["output_tokens"])
    prompt_tokens, prompt_computed = sum(q["prompt_tokens"]), r.prompt_tokens_computed

    q1 = Prediction(
        key="d1-running",
        question=(f"An SGLang deployment allows {slots} requests at once (max_running_requests). {slots} clients send "
                  f"requests with short prompts and answers of about 3,000 tokens; the KV pool holds "
                  f"{r.kv_pool_tokens:,} tokens. In steady state, how many requests run at once?"),
        choices=(
            Choice(f"about {slots}", "The limit is only a ceiling; something else may bind first."),
            Choice("about 100", "Halfway guesses ignore the arithmetic: each running request holds thousands of tokens."),
            Choice("fewer than 60", "The pool divided by the tokens each running request holds is well under the limit."),
        ),
        **keyed(running, [(60, "fewer than 60"), (125, "about 100")], f"about {slots}"),
        reveal=f"**About {running:.0f} run** while the cache is {pct(usage)} full; the rest wait.",
        gives_away=(f"**About {running:.0f} run**",),
    )
    s1 = f"""
When the pool is nearly full and the waiting queue is long while running stays far below the limit, the pool
binds. Read it in the engine's log: SGLang prints `#running-req`, `token usage` and `#queue-req` every few
seconds; a usage of 0.9 or more with a queue is saturation. Each running request holds its prompt and
everything it has generated, so long answers mean few running requests.

Generation throughput (tokens per second while decoding) stays high; what users feel is effective
throughput, completed requests per second, which the queue caps at {r.throughput_per_s:.2f} requests/s here.
In the same unit: mid-run the engine generates {gen:,.0f} tokens a second (the log's `gen throughput`), and
completed requests deliver {r.output_tokens_per_s:,.0f} output tokens a second over the whole run
({r.throughput_per_s:.2f} requests/s x {mean_output:,.0f} tokens). The gap is the run's start and end, when fewer
requests run, and work done twice: preempted requests recompute their tokens, and the engine computed
{prompt_computed / prompt_tokens:.1f}x the prompt tokens the requests hold. A published account of such a deployment
set 780-890 generated tokens a second against about 411 effective, and later found the client's figure misleading:
it came from a different stream of requests. Measured on the same requests the two differ by {1 - r.output_tokens_per_s / gen:.0%}
here, not by half.
"""
    step1 = Step(q1, s1, (
        holds("fewer than half the slots run at saturation", running < 0.5 * slots, f"{running:.1f} of {slots}"),
        holds("the cache is more than 85% full", usage > 0.85, f"{usage:.3f}"),
        holds("effective output tokens/s trail the mid-run generation rate by 5% to 25%",
              0.75 <= r.output_tokens_per_s / gen <= 0.95, f"{r.output_tokens_per_s:.0f} vs {gen:.0f}"),
        holds("preemptions make the engine compute more prompt tokens than the requests hold",
              prompt_computed > prompt_tokens and r.preemptions > 0, f"{prompt_computed} vs {prompt_tokens}"),
    ), LiveView("lab", ("timeline", "log"), {"preset": PRESET, "num_requests": REQUESTS}, ("output_tokens",),
                "KV usage, running and waiting over time, and the SGLang-style log."),
        (TryThis("In the serving lab, watch running, waiting and KV usage over time, then halve the output median.",
                 {"preset": PRESET}, panel="serving_lab"),))

    q2 = Prediction(
        key="d1-limit",
        question=f"Raise max_running_requests from {slots} to 300. Running requests become...",
        choices=(
            Choice("about twice as many", "That would be true if the limit bound; it does not."),
            Choice("unchanged", "The pool, not the limit, decides how many run."),
            Choice("fewer", "Raising a ceiling nobody reaches does not lower anything."),
        ),
        **keyed(steady(more, "running") / running, [(0.8, "fewer"), (1.25, "unchanged")], "about twice as many"),
        reveal=(f"**Unchanged at {steady(more, 'running'):.0f}.** Halving the answers instead lets "
                f"{steady(short, 'running'):.0f} run."),
        gives_away=(f"Halving the answers instead lets {steady(short, 'running'):.0f} run",),
    )
    s2 = """
The lever is tokens per request or bytes per token: shorter outputs, a cheaper cache (FP8), or more memory.
A bigger limit only admits more requests that then wait for blocks or get preempted.
"""
    step2 = Step(q2, s2, (
        holds("a higher limit leaves the running count within 5%", abs(steady(more, "running") / running - 1) < 0.05,
              f"{running:.1f} -> {steady(more, 'running'):.1f}"),
        holds("halving the outputs lets at least 25% more run", steady(short, "running") > 1.25 * running,
              f"{running:.1f} -> {steady(short, 'running'):.1f}"),
    ), LiveView("lab", ("timeline", "summary"), {"preset": PRESET, "num_requests": REQUESTS, "max_num_seqs": 300},
                ("max_num_seqs", "output_tokens"), "The same run with a limit of 300."),
        (TryThis("In the serving lab, set max_num_seqs to 300 and compare the running line.", {"preset": PRESET},
                 panel="serving_lab"),))
    return Lesson(
        **course.header("D1"),
        objective="Diagnose KV saturation from running, waiting and usage, and pick a lever that moves it.",
        prerequisites=("A4", "C1"),
        setup="A case study: long answers and many clients on one SGLang deployment, whose log reports what runs, what "
              "waits and how full the cache is.",
        steps=(step1, step2),
        recap=("Saturation: usage above 0.9, a queue, running below the limit.",
               "The limit does not bind; tokens per request and bytes per token do."),
        not_captured=("The case study's deployment used an MLA model over eight GPUs; the preset reproduces its pool in "
                      "tokens with Qwen3-8B on one H100, not its hardware.",),
        ideas=("saturation", "sglang-log", "generation-vs-effective"),
    )
