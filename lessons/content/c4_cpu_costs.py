"""C4. Not the GPU: CPU-side costs at production concurrency."""

from __future__ import annotations

from kvlab.sim.engine import preset

from .. import course
from .model import Choice, Lesson, LiveView, Prediction, Step, TryThis, holds, keyed
from .runs import lab, pct

PRESET = "seed000-lanes"
PER_BLOCK_S = 2e-6  # exaggerated per-entry cost (the engine default is 1e-7) so the effect is visible in one run
REQUESTS = 640


def closed_state(n: int, table: str) -> dict:
    """The closed loop the text describes, as lab settings: n clients each with one request in flight, n running
    at most, the same 640 requests. The live views and try-this links open exactly this state, so they show the
    experiment the figures come from (an open queue at the preset's rate would be overloaded at 8)."""
    return {"preset": PRESET, "arrival": "closed", "clients": n, "max_num_seqs": n, "num_requests": REQUESTS,
            "block_table": table, "block_table_s_per_block": PER_BLOCK_S}


def closed(n: int, table: str, **changes):
    state = {**closed_state(n, table), **changes}
    return lab(state.pop("preset"), **state)


def build() -> Lesson:
    full8, full64 = closed(8, "full_recompute"), closed(64, "full_recompute")
    inc8, inc64 = closed(8, "incremental"), closed(64, "incremental")
    sched8, sched64 = full8.scheduler_s, full64.scheduler_s  # the lab's "Scheduler CPU time" tile
    inc_sched8, inc_sched64 = inc8.scheduler_s, inc64.scheduler_s
    per_admission = sched64 / sched8
    slow8 = full8.duration_s / inc8.duration_s - 1
    slow64 = full64.duration_s / inc64.duration_s - 1

    q1 = Prediction(
        key="c4-table",
        question=("The long-prompt deployment's scheduler rewrites the block table of every running sequence each time it "
                  "admits one. Serve the same 640 requests with 8 concurrent sequences, then with 64. The scheduler's total "
                  "block-table time grows..."),
        choices=(
            Choice("not at all", "That is the incremental design, which writes only the new sequence's table."),
            Choice("several times", "Each admission now rewrites about eight times as many tables; the number of "
                                    "admissions (one per request) is the same."),
            Choice("about 64 times as much", "That would need admissions per request to grow as well; here every request is admitted "
                                "once. Per second it can approach 64x when throughput also grows eightfold."),
        ),
        **keyed(per_admission, [(1.5, "not at all"), (20, "several times")], "about 64 times as much"),
        reveal=(f"**{sched8:.1f} s to {sched64:.1f} s, x{per_admission:.1f}.** With incremental tables: {inc_sched8:.2f} s "
                f"and {inc_sched64:.2f} s."),
        gives_away=(f"x{per_admission:.1f}.**",),
    )
    s1 = f"""
Some costs of serving are on the CPU: tokenizing prompts, scheduling, rewriting block tables, the HTTP front
end. A cost that grows with the running batch on every admission grows with the square of the concurrency per
unit of time when throughput grows with the batch. Here the prompts are long and prefill-bound, so throughput
rises only from {full8.throughput_per_s:.2f} to {full64.throughput_per_s:.2f} requests/s, and the total grows about
x{per_admission:.0f} rather than x64. The per-entry cost here is exaggerated ({PER_BLOCK_S * 1e6:g} us) so one run shows it.
"""
    step1 = Step(q1, s1, (
        holds("full rewrites cost several times more at 64 than at 8", 3 <= per_admission <= 12, f"x{per_admission:.2f}"),
        holds("incremental tables cost the same at 8 and 64", abs(inc_sched64 / inc_sched8 - 1) < 0.2,
              f"{inc_sched8:.3f} vs {inc_sched64:.3f}"),
    ), LiveView("lab", ("summary",), closed_state(64, "full_recompute"), ("block_table", "clients", "max_num_seqs"),
                "A closed loop of 64 clients with full block-table rewrites at an exaggerated per-entry cost (the "
                "Scheduler CPU time tile adds up the rewrites); switch to incremental tables, or lower clients and "
                "max_num_seqs to 8."),
        (TryThis("The serving lab opens on the closed loop of 8 clients with full rewrites (2e-06 s per entry): note the "
                 "throughput, then set clients and max_num_seqs to 64 and compare.", closed_state(8, "full_recompute"),
                 panel="serving_lab"),))

    q2 = Prediction(
        key="c4-benchmark",
        question=("A benchmark runs 8 concurrent requests and compares full rewrites with incremental ones. The full "
                  "rewrites slow the run down by..."),
        choices=(
            Choice("about 1%", "At 8 running, each rewrite is short: the benchmark sees almost nothing."),
            Choice("about 10%", "That is what 64 concurrent sequences see, not 8."),
            Choice("about half", "The GPU work still dominates at this concurrency."),
        ),
        **keyed(slow8, [(0.04, "about 1%"), (0.25, "about 10%")], "about half"),
        reveal=f"**{pct(slow8)} at 8 concurrent, {pct(slow64)} at 64.**",
        gives_away=(f"**{pct(slow8)} at 8 concurrent",),
    )
    # Tokenization on the request thread at the seed-000 preset's cost per token, against a worker pool.
    per_token_s = preset("seed000-shared-queue").scheduling.tokenize_s_per_token
    serial, pooled = (closed(64, "incremental", tokenizer=t, tokenize_s_per_token=per_token_s)
                      for t in ("request_thread", "worker_pool"))
    longest = max(serial.requests["prompt_tokens"])
    s2 = f"""
A benchmark at low concurrency cannot see a cost that grows with concurrency. Test at the concurrency you
serve. The fixes are design changes: tokenize in a worker pool instead of the request thread, and write only the
new sequence's block table. kvlab models both switches but not the rest of a real front end.

Tokenizing is the other CPU cost, and it comes before admission. At {per_token_s * 1e6:g} us per token, this
workload's longest prompt ({longest:,} tokens) holds the request thread for {longest * per_token_s * 1e3:.0f} ms, and
every request that arrives meanwhile waits behind it; the 640 prompts take {serial.tokenizer_s:.1f} s of CPU in all.
In this closed loop of 64 the GPU's queue is far longer, so median TTFT moves only from
{pooled.ttft_s.p50:.2f} s with a worker pool to {serial.ttft_s.p50:.2f} s on the request thread. The thread costs
the same milliseconds at any load; it stands out once the GPU's queue is short.
"""
    step2 = Step(q2, s2, (
        holds("full rewrites cost under 4% at 8 concurrent", slow8 < 0.04, f"{slow8:.4f}"),
        holds("the longest prompt holds the request thread for over 30 ms", longest * per_token_s > 0.03,
              f"{longest} tokens, {longest * per_token_s:.4f} s"),
        holds("in the closed loop of 64, the request thread raises median TTFT by under 10%",
              1 < serial.ttft_s.p50 / pooled.ttft_s.p50 < 1.1, f"{pooled.ttft_s.p50:.3f} -> {serial.ttft_s.p50:.3f}"),
        holds("full rewrites cost at least 3x as much at 64", slow64 > 3 * slow8, f"{slow8:.4f} vs {slow64:.4f}"),
    ), LiveView("lab", ("summary",), closed_state(8, "full_recompute"), ("block_table", "clients", "max_num_seqs"),
                "The benchmark's closed loop of 8 clients with full rewrites; switch to incremental tables and compare "
                "throughput."),
        (TryThis("The serving lab opens on the benchmark (8 clients, full rewrites): switch the block table to "
                 "incremental and compare throughput; then do the same with clients and max_num_seqs at 64.",
                 closed_state(8, "full_recompute"), panel="serving_lab"),
         TryThis("On the same closed loop of 64 clients, switch the tokenizer between request_thread and worker_pool and "
                 "compare median TTFT.",
                 {**closed_state(64, "incremental"), "tokenizer": "request_thread", "tokenize_s_per_token": 1.5e-6},
                 panel="serving_lab")))
    return Lesson(
        **course.header("C4"),
        objective="Find the CPU-side costs of serving, and measure them at a benchmark's concurrency and at production's.",
        prerequisites=("C3",),
        setup="The GPU is not the only thing a request waits for.",
        steps=(step1, step2),
        recap=("Per-admission work that scales with the batch grows fast with concurrency.",
               "Benchmark at production concurrency; fix by design (worker-pool tokenization, incremental tables)."),
        not_captured=("kvlab's CPU costs are two switches with a per-token and a per-entry cost; Python overheads, "
                      "garbage collection and the HTTP server are not modelled.",),
        ideas=("tokenizer-thread", "block-table-quadratic", "benchmark-concurrency"),
    )
