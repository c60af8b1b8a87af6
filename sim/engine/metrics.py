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

Memory is bounded by the work, never by the simulated span: a snapshot is kept only if it makes a
log line (vLLM demotes repeated idle lines, so an idle stretch of 10^8 s costs nothing), the log
buckets are sparse, and every list of lines keeps its first and last LOG_KEEP entries plus a count
(the logs show the first and last half of MAX_LINES anyway, see logs.py). A snapshot's token rates
are read once no step can add to its interval any more (`_settle`), which is what lets it be
judged idle or not when it is taken instead of at the end.

Sums of floats use math.fsum, never the built-in sum(): CPython 3.12 made sum() of floats
compensated, so it would give Pyodide (3.12+) and CPython 3.11 different last digits.
"""

from __future__ import annotations

import math
from collections import deque
from heapq import heappop, heappush

from .histogram import LogHistogram

PREFIX_WINDOW_REQUESTS = 1000  # vLLM reports the prefix hit rate over the most recent 1000 queries
PREEMPTION_WARN_EVERY = 50  # vLLM warns on the first preemption and then every 50th
JUMP_POINTS = 8  # a gap of more than this many series lengths coarsens the series before sampling it
QUIET_STEPS = 1000  # a longer idle stretch moves the log clock in one multiplication, not step by step
LOG_KEEP = 20_000  # first and last entries kept of each log stream (logs.MAX_LINES shows half of each)


class HeadTail:
    """The first `keep` and the last `keep` items appended, in the order of (t_s, index, order
    appended), and how many there were. Entries may arrive a little out of time order (each
    instance settles its own), so the first and last are kept by that key, not by arrival."""

    __slots__ = ("head", "tail", "count", "keep")

    def __init__(self, keep: int | None = None):
        self.keep = keep or LOG_KEEP
        self.head: list = []  # max-heap (negated keys) of the smallest entries
        self.tail: list = []  # min-heap of the largest of the rest
        self.count = 0

    def append(self, item, t_s: float = 0.0, index: int = 0) -> None:
        self.count += 1
        heappush(self.head, (-t_s, -index, -self.count, item))
        if len(self.head) > self.keep:
            nt, ni, nc, out = heappop(self.head)
            heappush(self.tail, (-nt, -ni, -nc, out))
            if len(self.tail) > self.keep:
                heappop(self.tail)

    def items(self) -> list:
        first = sorted((-nt, -ni, -nc, item) for nt, ni, nc, item in self.head)
        return [e[3] for e in first] + [e[3] for e in sorted(self.tail)]

    @property
    def dropped(self) -> int:
        return self.count - len(self.head) - len(self.tail)


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


def _spread_sparse(buckets: dict[int, float], width_s: float, t0: float, t1: float, amount: float) -> None:
    """`_spread` into a dict of the buckets that received anything (the same additions in the same
    order, so the same sums)."""
    i1 = int(t1 / width_s)
    i0 = int(t0 / width_s)
    get = buckets.get
    if i0 == i1 or t1 <= t0:
        buckets[i1] = get(i1, 0.0) + amount
        return
    rate = amount / (t1 - t0)
    buckets[i0] = get(i0, 0.0) + rate * ((i0 + 1) * width_s - t0)
    for i in range(i0 + 1, i1):
        buckets[i] = get(i, 0.0) + rate * width_s
    buckets[i1] = get(i1, 0.0) + rate * (t1 - i1 * width_s)


class InstanceStats:
    """Counters and buckets of one instance."""

    __slots__ = ("itl", "prompt_tokens", "generation_tokens", "finished", "log_prompt", "log_generation",
                 "prefix_window", "prefix_window_queries", "prefix_window_hits", "prefill_key", "pending", "quiet")

    def __init__(self):
        self.itl = LogHistogram()
        self.prompt_tokens = 0
        self.generation_tokens = 0
        self.finished = 0
        self.log_prompt: dict[int, float] = {}  # log interval -> prompt tokens (sparse)
        self.log_generation: dict[int, float] = {}
        self.prefix_window: deque = deque()
        self.prefix_window_queries = 0
        self.prefix_window_hits = 0
        self.prefill_key = -1  # log interval of the last SGLang prefill line kept
        self.pending: deque = deque()  # snapshots whose interval a step may still add tokens to
        self.quiet = False  # the last vLLM line of this instance was an idle one

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
        # Settled snapshots that make a vLLM line: (t_s, instance, running, waiting, usage, used_tokens,
        # preemptions, hit rate, role, prompt tokens/s, generation tokens/s); the subset that makes
        # an SGLang "Decode batch" line; SGLang "Prefill batch" lines; preemption warnings.
        self.vllm_snapshots = HeadTail()
        self.sglang_decode = HeadTail()
        self.prefill_lines = HeadTail()  # (t_s, instance, new seqs, new tokens, cached tokens, usage, running, waiting)
        self.warnings = HeadTail()
        self.in_system = 0
        self.preemption_total = 0
        self.prefix_queries = 0
        self.prefix_hits = 0
        self.next_sample_s = 0.0
        self.next_log_s = log_interval_s
        # Every step as (start_s, end_s, prompt tokens, decode sequences), when a caller asks for
        # them (steps.step_timeline): None, and nothing kept, in every other run.
        self.step_log: list | None = None

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
            _spread_sparse(st.log_prompt, self.log_interval_s, t0, t1, prompt_tokens)
        if generated_tokens:
            st.generation_tokens += generated_tokens
            _spread(self.generation_buckets, self.interval_s, t0, t1, generated_tokens)
            _spread_sparse(st.log_generation, self.log_interval_s, t0, t1, generated_tokens)
        if st.pending:
            # Every later step of this instance starts at t1 or after.
            self._settle(st, inst.index, int(t1 / self.log_interval_s))

    def step(self, t0: float, t1: float, prompt_tokens: int, decode_seqs: int) -> None:
        """One step (or run of decode steps) from t0 to t1, kept when the step log is on."""
        if self.step_log is not None:
            self.step_log.append((t0, t1, prompt_tokens, decode_seqs))

    def prefill_batch(self, inst, now: float, new_seqs: int, new_tokens: int, cached_tokens: int) -> None:
        """SGLang prints a line per prefill batch; keep the first of each log interval."""
        st = self.inst[inst.index]
        key = int(now / self.log_interval_s)
        if key != st.prefill_key:  # time never goes back, so a new key is a new interval
            st.prefill_key = key
            usage = inst.blocks.used() / inst.blocks.total if inst.blocks.total else 0.0
            self.prefill_lines.append((now, inst.index, new_seqs, new_tokens, cached_tokens, usage, len(inst.running),
                                       len(inst.waiting)), now, inst.index)

    # ----- sampling ------------------------------------------------------------------------------
    def sample_until(self, t: float, instances) -> None:
        """Record the state at every sample and log time up to t (the state has not changed since
        the last event, so it is the state at those times)."""
        # A gap of many series intervals (a fine fixed interval, a long idle stretch) would be
        # sampled point by point and then merged away: coarsen first, so the work stays bounded.
        # Checked before every sample, not only once: a series of fewer than two points cannot be
        # coarsened, and a tiny interval (sample_interval_s=1e-300, which the fuzz found) then took
        # 10^8 samples to reach the first event.
        while self.next_sample_s <= t or self.next_log_s <= t:
            if self.next_sample_s <= self.next_log_s:
                if (t - self.next_sample_s) > JUMP_POINTS * self.max_points * self.interval_s and len(self.series["t_s"]) > 1:
                    self._coarsen()
                    continue
                self._sample(self.next_sample_s, instances)
                self.next_sample_s += self.interval_s
                if len(self.series["t_s"]) > self.max_points:
                    self._coarsen()
            elif self._all_quiet(instances):
                self._skip_quiet_logs(t)
            else:
                self._log_snapshot(self.next_log_s, instances)
                self.next_log_s += self.log_interval_s

    def _all_quiet(self, instances) -> bool:
        """Every instance idle, its last line an idle one and nothing left to settle: the log
        snapshots until the next event would all be dropped, so they need not be taken."""
        for inst in instances:
            st = self.inst[inst.index]
            if (inst.busy or inst.running or inst.waiting or inst.swapped or not st.quiet or st.pending
                    or st.log_prompt or st.log_generation):
                return False
        return True

    def _skip_quiet_logs(self, t: float) -> None:
        """Move the next log time past t without a snapshot per interval (an idle stretch of 10^8 s
        is 10^7 intervals). Short stretches step as the loop would, so the times are the same."""
        w = self.log_interval_s
        n = int((t - self.next_log_s) / w)
        if n > QUIET_STEPS:
            self.next_log_s += n * w
        while self.next_log_s <= t:
            self.next_log_s += w

    def _sample(self, ts: float, instances) -> None:
        s = self.series
        if len(instances) == 1:  # the common case, without the sums (same values: fsum of one is exact)
            i = instances[0]
            total_blocks = i.blocks.total
            running, waiting, swapped = len(i.running), len(i.waiting), len(i.swapped)
            used = i.used_blocks_at(ts) if total_blocks else 0.0
        else:
            total_blocks = sum(i.blocks.total for i in instances)
            running = sum(len(i.running) for i in instances)
            waiting = sum(len(i.waiting) for i in instances)
            swapped = sum(len(i.swapped) for i in instances)
            used = math.fsum(i.used_blocks_at(ts) for i in instances) if total_blocks else 0.0
        s["t_s"].append(ts)
        s["running"].append(running)
        s["waiting"].append(waiting)
        s["swapped"].append(swapped)
        s["kv_usage"].append(used / total_blocks if total_blocks else 0.0)
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
        width = self.log_interval_s
        interval = int(round(ts / width)) - 1  # the interval that ends at ts
        limit = int(ts / width)
        for inst in instances:
            blocks = inst.blocks.total
            used = inst.used_blocks_at(ts)
            st = self.inst[inst.index]
            st.pending.append((ts, inst.index, len(inst.running), len(inst.waiting), used / blocks if blocks else 0.0,
                               int(used * self.block_size), inst.preemptions, st.prefix_hit_rate(), inst.role, interval))
            # Steps not yet started begin at ts or later; the one in progress adds from its start.
            busy_from = int(inst.plan.t0 / width) if inst.busy else limit
            self._settle(st, inst.index, min(limit, busy_from))

    def _settle(self, st: InstanceStats, index: int, limit: int) -> None:
        """Turn the pending snapshots of intervals before `limit` (no step can add to them any
        more) into log entries, dropping an idle one that follows another (as vLLM does)."""
        width = self.log_interval_s
        pending = st.pending
        while pending and pending[0][-1] < limit:
            self._settled(st, pending.popleft(), width)

    def settle_all(self) -> None:
        """At the end of a run (or a cancel): what the buckets hold now is final."""
        width = self.log_interval_s
        for st in self.inst:
            while st.pending:
                self._settled(st, st.pending.popleft(), width)

    def _settled(self, st: InstanceStats, snap: tuple, width: float) -> None:
        ts, index, running, waiting, usage, tokens, preemptions, hit, role, i = snap
        prompt = st.log_prompt.pop(i, 0.0) / width
        gen = st.log_generation.pop(i, 0.0) / width
        for d in (st.log_prompt, st.log_generation):  # intervals no snapshot will read
            while d and next(iter(d)) < i:
                del d[next(iter(d))]
        idle = prompt == 0 and gen == 0 and running == 0 and waiting == 0
        if not (idle and st.quiet):
            st.quiet = idle
            self.vllm_snapshots.append((ts, index, running, waiting, usage, tokens, preemptions, hit, role, prompt, gen), ts, index)
        if running and role != "prefill":
            self.sglang_decode.append((ts, index, running, waiting, usage, tokens, gen), ts, index)
