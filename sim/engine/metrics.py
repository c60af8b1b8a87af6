"""What a run measured. The observer is told about events and never changes the simulation.

- per request: arrival, tokenized ("ready"), first scheduled, first token, finish, preemptions,
  prefix-cache hit tokens, and which instance produced the first and the last token;
- inter-token gaps per instance in a LogHistogram (a decode run reports its gaps as a line);
- time series sampled every `interval_s` (running, waiting, swapped, KV usage, requests in the
  system, cumulative preemptions, prefix hits) and token counts in the same buckets. When a run
  outgrows `max_points`, pairs of samples merge and the interval doubles, so a long run keeps a
  bounded series without knowing its length in advance;
- one snapshot per instance every `log_interval_s`, from which the engine log lines are written
  (log.py), and SGLang's "Prefill batch" line for the first prefill of each log interval.

Sums of floats use math.fsum, never the built-in sum(): CPython 3.12 made sum() of floats
compensated, so it would give Pyodide (3.12+) and CPython 3.11 different last digits.
"""

from __future__ import annotations

import math
from collections import deque

from .histogram import LogHistogram

PREFIX_WINDOW_REQUESTS = 1000  # vLLM reports the prefix hit rate over the most recent 1000 queries
PREEMPTION_WARN_EVERY = 50  # vLLM warns on the first preemption and then every 50th


def _spread(buckets: list[float], width_s: float, t0: float, t1: float, amount: float) -> None:
    """Add `amount` spread evenly over [t0, t1] into buckets of `width_s`."""
    i1 = int(t1 / width_s)
    if i1 >= len(buckets):
        buckets.extend([0.0] * (i1 + 1 - len(buckets)))
    i0 = int(t0 / width_s)
    if i0 == i1 or t1 <= t0:
        buckets[i1] += amount
        return
    rate = amount / (t1 - t0)
    buckets[i0] += rate * ((i0 + 1) * width_s - t0)
    for i in range(i0 + 1, i1):
        buckets[i] += rate * width_s
    buckets[i1] += rate * (t1 - i1 * width_s)


class InstanceStats:
    """Counters and buckets of one instance."""

    __slots__ = ("itl", "prompt_tokens", "generation_tokens", "finished", "log_prompt", "log_generation",
                 "prefix_window", "prefix_window_queries", "prefix_window_hits", "prefill_lines")

    def __init__(self):
        self.itl = LogHistogram()
        self.prompt_tokens = 0
        self.generation_tokens = 0
        self.finished = 0
        self.log_prompt: list[float] = []
        self.log_generation: list[float] = []
        self.prefix_window: deque = deque()
        self.prefix_window_queries = 0
        self.prefix_window_hits = 0
        self.prefill_lines: dict[int, tuple] = {}

    def prefix_hit_rate(self) -> float:
        q = self.prefix_window_queries
        return self.prefix_window_hits / q if q else 0.0


class Metrics:
    def __init__(self, num_requests: int, num_instances: int, interval_s: float, log_interval_s: float,
                 max_points: int, block_size: int):
        n = num_requests
        self.arrival_s = [math.nan] * n
        self.ready_s = [math.nan] * n
        self.admitted_s = [math.nan] * n
        self.first_token_s = [math.nan] * n
        self.finish_s = [math.nan] * n
        self.preemptions = [0] * n
        self.hit_tokens = [0] * n
        self.first_instance = [-1] * n
        self.finish_instance = [-1] * n
        self.completions = [0] * n  # the "exactly once" invariant reads this
        self.generated_at_finish = [0] * n
        self.inst = [InstanceStats() for _ in range(num_instances)]
        self.block_size = block_size
        self.interval_s = interval_s
        self.max_points = max_points
        self.log_interval_s = log_interval_s
        self.series: dict[str, list] = {k: [] for k in (
            "t_s", "running", "waiting", "swapped", "kv_usage", "in_system", "preemptions", "prefix_hit_rate")}
        self.prompt_buckets: list[float] = []
        self.generation_buckets: list[float] = []
        self.snapshots: list[tuple] = []  # (t_s, instance, running, waiting, swapped, usage, used_tokens, preemptions, hit)
        self.warnings: list[str] = []
        self.in_system = 0
        self.preemption_total = 0
        self.prefix_queries = 0
        self.prefix_hits = 0
        self.next_sample_s = 0.0
        self.next_log_s = log_interval_s

    # ----- request events ------------------------------------------------------------------
    def arrived(self, seq, now: float) -> None:
        self.arrival_s[seq.id] = now
        self.in_system += 1

    def ready(self, seq, now: float) -> None:
        self.ready_s[seq.id] = now

    def admitted(self, seq, now: float) -> None:
        self.admitted_s[seq.id] = now

    def first_token(self, inst, seq, now: float) -> None:
        self.first_token_s[seq.id] = now
        self.first_instance[seq.id] = inst.index

    def finished(self, inst, seq, now: float) -> None:
        i = seq.id
        self.finish_s[i] = now
        self.finish_instance[i] = inst.index
        self.preemptions[i] = seq.preemptions
        self.hit_tokens[i] = seq.hit_tokens
        self.completions[i] += 1
        self.generated_at_finish[i] = seq.generated
        self.inst[inst.index].finished += 1
        self.in_system -= 1

    def preempted(self, inst, seq, now: float, mode: str) -> None:
        self.preemption_total += 1
        if self.preemption_total == 1 or self.preemption_total % PREEMPTION_WARN_EVERY == 0:
            self.warnings.append(
                f"WARNING [t={now:9.2f}s] Engine {inst.index:03d}: Sequence group {seq.id} is preempted by "
                f"PreemptionMode.{mode.upper()} mode because there is not enough KV cache space. This can affect the "
                f"end-to-end performance. Increase gpu_memory_utilization or tensor_parallel_size to provide more KV "
                f"cache memory. total_num_cumulative_preemption={self.preemption_total}")

    def prefix_query(self, inst, queried_tokens: int, hit_tokens: int) -> None:
        self.prefix_queries += queried_tokens
        self.prefix_hits += hit_tokens
        st = self.inst[inst.index]
        st.prefix_window.append((queried_tokens, hit_tokens))
        st.prefix_window_queries += queried_tokens
        st.prefix_window_hits += hit_tokens
        if len(st.prefix_window) > PREFIX_WINDOW_REQUESTS:
            q, h = st.prefix_window.popleft()
            st.prefix_window_queries -= q
            st.prefix_window_hits -= h

    # ----- step events -------------------------------------------------------------------------
    def itl(self, inst, gap_s: float, weight: int) -> None:
        self.inst[inst.index].itl.add(gap_s, weight)

    def itl_linear(self, inst, first_s: float, last_s: float, steps: int, weight: int) -> None:
        self.inst[inst.index].itl.add_linear(first_s, last_s, steps, weight)

    def step_tokens(self, inst, t0: float, t1: float, prompt_tokens: int, generated_tokens: int) -> None:
        """Tokens a step (or run of steps) from t0 to t1 computed and generated."""
        st = self.inst[inst.index]
        if prompt_tokens:
            st.prompt_tokens += prompt_tokens
            _spread(self.prompt_buckets, self.interval_s, t0, t1, prompt_tokens)
            _spread(st.log_prompt, self.log_interval_s, t0, t1, prompt_tokens)
        if generated_tokens:
            st.generation_tokens += generated_tokens
            _spread(self.generation_buckets, self.interval_s, t0, t1, generated_tokens)
            _spread(st.log_generation, self.log_interval_s, t0, t1, generated_tokens)

    def prefill_batch(self, inst, now: float, new_seqs: int, new_tokens: int, cached_tokens: int) -> None:
        """SGLang prints a line per prefill batch; keep the first of each log interval."""
        st = self.inst[inst.index]
        key = int(now / self.log_interval_s)
        if key not in st.prefill_lines:
            usage = inst.used_blocks() / inst.pool.num_blocks if inst.pool.num_blocks else 0.0
            st.prefill_lines[key] = (now, new_seqs, new_tokens, cached_tokens, usage, len(inst.running), len(inst.waiting))

    # ----- sampling ------------------------------------------------------------------------------
    def sample_until(self, t: float, instances) -> None:
        """Record the state at every sample and log time up to t (the state has not changed since
        the last event, so it is the state at those times)."""
        while self.next_sample_s <= t or self.next_log_s <= t:
            if self.next_sample_s <= self.next_log_s:
                self._sample(self.next_sample_s, instances)
                self.next_sample_s += self.interval_s
                if len(self.series["t_s"]) > self.max_points:
                    self._coarsen()
            else:
                self._log_snapshot(self.next_log_s, instances)
                self.next_log_s += self.log_interval_s

    def _sample(self, ts: float, instances) -> None:
        s = self.series
        total_blocks = sum(i.pool.num_blocks for i in instances)
        s["t_s"].append(ts)
        s["running"].append(sum(len(i.running) for i in instances))
        s["waiting"].append(sum(len(i.waiting) for i in instances))
        s["swapped"].append(sum(len(i.swapped) for i in instances))
        s["kv_usage"].append(math.fsum(i.used_blocks_at(ts) for i in instances) / total_blocks if total_blocks else 0.0)
        s["in_system"].append(self.in_system)
        s["preemptions"].append(self.preemption_total)
        s["prefix_hit_rate"].append(self.prefix_hits / self.prefix_queries if self.prefix_queries else 0.0)

    def _coarsen(self) -> None:
        """Halve the resolution: keep every other sample, merge token buckets pairwise."""
        for k, v in self.series.items():
            self.series[k] = v[::2]
        for name in ("prompt_buckets", "generation_buckets"):
            b = getattr(self, name)
            setattr(self, name, [math.fsum(b[i:i + 2]) for i in range(0, len(b), 2)])
        self.interval_s *= 2
        self.next_sample_s = self.series["t_s"][-1] + self.interval_s

    def _log_snapshot(self, ts: float, instances) -> None:
        for inst in instances:
            blocks = inst.pool.num_blocks
            used = inst.used_blocks_at(ts)
            self.snapshots.append((ts, inst.index, len(inst.running), len(inst.waiting), len(inst.swapped),
                                   used / blocks if blocks else 0.0, int(used * self.block_size), inst.preemptions,
                                   self.inst[inst.index].prefix_hit_rate(), inst.role))
