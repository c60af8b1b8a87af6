"""The engine's clock: sim.roofline.step_cost for the exact batch of each step, and its closed form
over a run of decode steps.

For a fixed number of tokens n pushed through the weights, step_cost's wall time (the GPU's time
plus the engine's host time per step, exactly what evaluate() calls a step) is

    t(n, X, P) = max(m0(n) + m1 X,  c0(n) + c1(n) P) + e(n)

with X the KV tokens read and P the (query, key) pairs: memory time is affine in X (weights plus
KV bytes over bandwidth), compute time is affine in P (2 x params x n plus attention FLOPs over the
achievable peak), e(n) is the all-reduce and launch overhead plus the host time (and, in the
per-kernel model, the GEMMs). `StepClock` reads m0, m1, c0, c1, e off step_cost once per step shape
(two calls) and then evaluates a step in a few float operations; a test checks it against
step_cost to 1e-9. A step's shape is n, the rows it samples (the decode sequences plus the prompts
whose last chunk it computes; the per-kernel lm_head costs by rows) and, for profiles whose
attention efficiency depends on the context length, that context (snapped to 1/8 octave).

A run of k decode steps with a stable batch of n sequences reads X0, X0 + g, X0 + 2g, ... KV
tokens (every sequence grows by one token per step; g = n, less the sequences already capped by a
sliding window), and P = X for decode. Step i therefore lasts

    d(i) = max(a1 + b1 i,  a2 + b2 i) + e,   a1 = m0 + m1 X0, b1 = m1 g, a2 = c0 + c1 X0, b2 = c1 g

and the run lasts the sum of an arithmetic series on each side of the one point where the
memory and compute lines cross. That is what lets the simulator jump from event to event instead
of stepping through every token: `DecodeRun.total_s(k)` is O(1).

Speculative decoding (`SpecDecode`): a decode step of the batch is one speculative cycle, the
draft's k steps plus the target's verify step: the verify step's coefficients are read off
sim.speculative's `verify_cost` as above, and the draft's steps are the draft machine's own decode
steps read off step_cost the same way (a run's step is the sum of the two max-of-lines). A cycle yields E = 1 + a + ... + a^k tokens a
sequence on average. The engine keeps one token a step: a decode run's step is one token of every
sequence and lasts cycle / E, so a run of j steps is j / E cycles. Drawing each sequence's accepted
count from the seeded RNG would give every sequence its own length after each cycle: the decode
set's aggregates (one phase a sequence, one growth for all) and the closed-form run would be lost,
for a spread the engine's latency percentiles do not need at this level of detail. The expected
count keeps both, and the run stays deterministic without drawing anything. A step that also
carries prompt chunks is one whole cycle: its decodes gain the integer part of a running sum of E
(`SpecDecode.advance`), so over many steps they gain E a step, still without a random draw.
"""

from __future__ import annotations

from math import log2

from .. import speculative
from ..roofline import Machine, step_cost

_PROBE = float(2**20)  # KV tokens / pairs used to read the slopes off step_cost


class SpecDecode:
    """Speculative decoding as the engine runs it: the draft's machine, `k` proposals a cycle, the
    acceptance, and what follows from them: E tokens a cycle and the KV slots a cycle writes."""

    __slots__ = ("draft", "k", "acceptance", "tokens_per_step", "lookahead_tokens")

    def __init__(self, draft: Machine, k: int, acceptance: float):
        self.draft = draft
        self.k = k
        self.acceptance = acceptance
        self.tokens_per_step = speculative.expected_tokens_per_step(k, acceptance)
        # The verify step writes the KV of all k + 1 positions before it knows which are kept, so
        # a decoding sequence holds slots for k tokens beyond its own. vLLM's V1 scheduler
        # (vllm/v1/core/sched/scheduler.py, Scheduler.__init__): "if speculative_config.use_eagle():
        # ... self.num_lookahead_tokens = self.num_spec_tokens" (and the same under
        # uses_draft_model()), passed to every running request's allocate_slots(...,
        # num_lookahead_tokens=self.num_lookahead_tokens). kvlab reserves them from admission on
        # (vLLM from the first step after the prompt's first chunk): a difference of one step.
        self.lookahead_tokens = k

    def advance(self, carry: float) -> tuple[int, float]:
        """(tokens a whole cycle gives each decoding sequence, the carry left): the integer part of
        the running sum of E, so that consecutive cycles give E a cycle on average."""
        total = carry + self.tokens_per_step
        tokens = int(total)
        return tokens, total - tokens


class StepClock:
    """Step time of any batch composition on one instance (one tp group); `spec`, when set,
    makes every decode step a speculative cycle (see the module docstring)."""

    __slots__ = ("machine", "_coef", "_window_fraction", "_window_tokens", "kv_bytes_per_token", "causal_pairs",
                 "kv_read", "_by_context", "state_bytes_per_sequence", "spec", "_verify_coef", "_draft_clock")

    def __init__(self, machine: Machine, spec: SpecDecode | None = None, draft_kv_bytes_per_token: float = 0.0):
        self.machine = machine
        self.spec = spec
        self._coef: dict = {}
        self._verify_coef: dict = {}
        self._draft_clock = StepClock(spec.draft) if spec is not None else None
        # Only a profile with an attention efficiency curve makes the step depend on the context.
        self._by_context = machine.profile.per_kernel and bool(machine.profile.attention_kv_efficiency_points)
        arch = machine.arch
        self._window_tokens = arch.window_tokens
        self._window_fraction = arch.windowed_layer_fraction
        if arch.indexer is not None:
            # A DSA model's latent reads stop growing at index_topk tokens, as a window's would;
            # its indexer keys grow with the context (Machine.cache_read_tokens).
            self._window_tokens = arch.indexer.topk
            self._window_fraction = 1.0 - machine.indexer_key_share
        # KV tokens one sequence of `context_tokens` reads, in full-attention-layer units (the unit
        # step_cost takes): the layer kinds' own rule (LayerKind.attended, summed by the
        # architecture), bound here so a call costs no extra frame.
        self.kv_read = machine.cache_read_tokens
        # Bytes of cache one token costs on one rank: what a swap or a KV transfer moves per token
        # (a speculative draft's own cache included: it is held, swapped and moved with the target's).
        self.kv_bytes_per_token = machine.kv_bytes_per_token + draft_kv_bytes_per_token
        self.causal_pairs = arch.causal_pairs
        # A hybrid model's recurrent state per sequence on one rank (0 otherwise): blocks it takes,
        # bytes a hand-off moves, and a read and write in every step the sequence is in.
        self.state_bytes_per_sequence = arch.state_bytes_per_sequence(machine.tp, machine.attention_dp)

    def _snap(self, context_tokens: float | None) -> float | None:
        if self._by_context and context_tokens is not None:
            return 2.0 ** (round(log2(max(context_tokens, 1.0)) * 8) / 8)
        return None

    def coefficients(self, new_tokens: int, sampled_tokens: int | None = None,
                     context_tokens: float | None = None) -> tuple[float, float, float, float, float]:
        """(m0, m1, c0, c1, e) of the affine form above, for steps of `new_tokens` tokens sampling
        `sampled_tokens` rows (None: one per token, a decode step) at `context_tokens` per sequence."""
        context_tokens = self._snap(context_tokens)
        key = new_tokens if sampled_tokens is None and context_tokens is None else (new_tokens, sampled_tokens, context_tokens)
        c = self._coef.get(key)
        if c is None:
            shape = dict(new_tokens=new_tokens, sampled_tokens=sampled_tokens, context_tokens=context_tokens, detail=False)
            # The sequences of the step read and write their recurrent states (hybrid models): one
            # per sampled row (a decode step: one per token), a constant of the step's shape.
            states = self.machine.state_read_tokens * (new_tokens if sampled_tokens is None else sampled_tokens)
            base = step_cost(self.machine, kv_read_tokens=states, attention_pairs=0.0, **shape)
            probe = step_cost(self.machine, kv_read_tokens=states + _PROBE, attention_pairs=_PROBE, **shape)
            c = (base.memory_side_s, (probe.memory_side_s - base.memory_side_s) / _PROBE,
                 base.compute_side_s, (probe.compute_side_s - base.compute_side_s) / _PROBE,
                 base.serial_s)
            self._coef[key] = c
        return c

    def verify_coefficients(self, n: int, context_tokens: float | None = None) -> tuple[float, float, float, float, float]:
        """(m0, m1, c0, c1, e) of the target's verify step over n sequences (speculative.verify_cost),
        in the KV tokens the n sequences read: the attention pairs are k + 1 times those, folded
        into c1, so a speculative decode run has the same affine form as a plain one."""
        context_tokens = self._snap(context_tokens)
        key = (n, context_tokens)
        c = self._verify_coef.get(key)
        if c is None:
            k = self.spec.k
            base = speculative.verify_cost(self.machine, n, k, 0.0, context_tokens, detail=False)
            probe = speculative.verify_cost(self.machine, n, k, _PROBE, context_tokens, detail=False)
            c = (base.memory_side_s, (probe.memory_side_s - base.memory_side_s) / _PROBE,
                 base.compute_side_s, (probe.compute_side_s - base.compute_side_s) / _PROBE,
                 base.serial_s)
            self._verify_coef[key] = c
        return c

    def draft_s(self, n: int, context_tokens: float) -> float:
        """The draft's k steps over n sequences at `context_tokens` each (speculative.draft_s)."""
        return speculative.draft_s(self.spec.draft, n, self.spec.k, context_tokens)

    def decode_shape(self, n: int, kv_read_tokens: float, context_tokens: float) -> tuple[int, float, float, int, float]:
        """What the n decoding sequences add to a step that also carries prompt chunks: (tokens
        through the weights, KV read, attention pairs, rows sampled, time besides the shared step).
        Plain: one token each. Speculative: k + 1 positions each, which attend to the cache read
        once, and the draft's k steps on top."""
        spec = self.spec
        if spec is None:
            return n, kv_read_tokens, kv_read_tokens, n, 0.0
        positions = n * (spec.k + 1)
        return positions, kv_read_tokens, (spec.k + 1) * kv_read_tokens, positions, self.draft_s(n, context_tokens)

    def step_s(self, new_tokens: int, kv_read_tokens: float, attention_pairs: float, sampled_tokens: int | None = None,
               context_tokens: float | None = None) -> float:
        """Wall time of one step (roofline.step_cost's wall_s)."""
        m0, m1, c0, c1, e = self.coefficients(new_tokens, sampled_tokens, context_tokens)
        mem = m0 + m1 * kv_read_tokens
        comp = c0 + c1 * attention_pairs
        return (mem if mem > comp else comp) + e

    @property
    def window_tokens(self) -> int:
        return self._window_tokens

    @property
    def window_fraction(self) -> float:
        return self._window_fraction

    def prefill_chunk(self, tokens: int, cached_tokens: int) -> tuple[float, float]:
        """(KV read, attention pairs) of computing `tokens` new prompt tokens after
        `cached_tokens` already in the cache (a later chunk reads the earlier chunks' KV)."""
        return self.kv_read(cached_tokens), self.causal_pairs(tokens, cached_tokens)

    def decode_run(self, n: int, kv_read0: float, growth: float, extra_s: float = 0.0,
                   context_tokens: float | None = None, start_context_tokens: float | None = None) -> DecodeRun:
        """The closed form of n sequences decoding together from KV read `kv_read0`
        (`context_tokens`: the run's mean KV read per sequence, for a context-dependent attention
        efficiency; held for the whole run). Speculative: each step is one token of a cycle,
        cycle / E; `start_context_tokens` is the sequences' mean context at the run's first step,
        where the draft's steps start."""
        spec = self.spec
        if spec is None:
            m0, m1, c0, c1, e = self.coefficients(n, None, context_tokens)
            return DecodeRun(m0 + m1 * kv_read0, m1 * growth, c0 + c1 * kv_read0, c1 * growth, e, extra_s)
        m0, m1, c0, c1, e = self.verify_coefficients(n, context_tokens)
        verify = DecodeRun(m0 + m1 * kv_read0, m1 * growth, c0 + c1 * kv_read0, c1 * growth, e)
        # The draft's k decode steps (GPU time: its host time is the verify step's), reading the
        # draft's own layers' cache: exact for a draft of full-attention layers; a windowed draft's
        # read is taken on its tangent at the run's start.
        dc = self._draft_clock
        start = start_context_tokens if start_context_tokens is not None else kv_read0 / n
        read = dc.machine.cache_read_tokens
        x0, slope = n * read(start), n * (read(start + 1) - read(start))
        d0, d1, e0, e1, de = dc.coefficients(n, None, context_tokens)
        k = spec.k
        drafting = DecodeRun(k * (d0 + d1 * x0), k * d1 * slope, k * (e0 + e1 * x0), k * e1 * slope,
                             k * (de - dc.machine.cpu_s(n)))
        return SpecRun(verify, drafting, 1.0 / spec.tokens_per_step, extra_s)


class DecodeRun:
    """Durations of consecutive decode steps d(i) = max(a1 + b1 i, a2 + b2 i) + e, i = 0, 1, ...
    `extra_s` is CPU or transfer time added to the first step only (swap-in, scheduler)."""

    __slots__ = ("a1", "b1", "a2", "b2", "e", "extra_s", "_switch", "_first_is_1")

    def __init__(self, a1: float, b1: float, a2: float, b2: float, e: float, extra_s: float = 0.0):
        self.a1, self.b1, self.a2, self.b2, self.e, self.extra_s = a1, b1, a2, b2, e, extra_s
        self._first_is_1 = a1 >= a2
        # First integer step at which the other line is on top (None: never).
        if self._first_is_1:
            crosses = b2 > b1
            i_star = (a1 - a2) / (b2 - b1) if crosses else None
        else:
            crosses = b1 > b2
            i_star = (a2 - a1) / (b1 - b2) if crosses else None
        if i_star is None:
            self._switch = None
        else:
            s = int(i_star)
            self._switch = s + 1 if s <= i_star else s

    def breaks(self) -> list[int]:
        """Steps at which the run's duration changes slope (where its two lines cross)."""
        return [] if self._switch is None else [self._switch]

    def step_s(self, i: int) -> float:
        x = self.a1 + self.b1 * i
        y = self.a2 + self.b2 * i
        return (x if x > y else y) + self.e + (self.extra_s if i == 0 else 0.0)

    @staticmethod
    def _series(a: float, b: float, lo: int, hi: int) -> float:
        """sum_{i=lo}^{hi-1} (a + b i)."""
        k = hi - lo
        if k <= 0:
            return 0.0
        return k * a + b * (lo + hi - 1) * k / 2.0

    def total_s(self, k: int) -> float:
        """Duration of the first k steps."""
        if k <= 0:
            return 0.0
        if self._first_is_1:
            a, b, a_o, b_o = self.a1, self.b1, self.a2, self.b2
        else:
            a, b, a_o, b_o = self.a2, self.b2, self.a1, self.b1
        s = self._switch
        if s is None or s >= k:
            body = self._series(a, b, 0, k)
        else:
            body = self._series(a, b, 0, s) + self._series(a_o, b_o, s, k)
        return body + k * self.e + self.extra_s

    def steps_within(self, dt: float, k_max: int) -> int:
        """Smallest j in [1, k_max] with total_s(j) >= dt (k_max if none): the step during which
        an event at `dt` after the run's start falls, so the run can stop at that step's end."""
        lo, hi = 1, k_max
        if self.total_s(lo) >= dt:
            return lo
        while lo < hi:
            mid = (lo + hi) // 2
            if self.total_s(mid) >= dt:
                hi = mid
            else:
                lo = mid + 1
        return lo


class SpecRun(DecodeRun):
    """A run of speculative decode steps of one token each: (verify step + the draft's k steps)
    x `scale` (1 / E), each of the two a DecodeRun of its own; `extra_s` on the first step only."""

    __slots__ = ("verify", "draft", "scale")

    def __init__(self, verify: DecodeRun, draft: DecodeRun, scale: float, extra_s: float = 0.0):
        self.verify, self.draft, self.scale, self.extra_s = verify, draft, scale, extra_s
        self._switch = None

    def breaks(self) -> list[int]:
        return sorted(set(self.verify.breaks() + self.draft.breaks()))

    def step_s(self, i: int) -> float:
        return (self.verify.step_s(i) + self.draft.step_s(i)) * self.scale + (self.extra_s if i == 0 else 0.0)

    def total_s(self, k: int) -> float:
        if k <= 0:
            return 0.0
        return (self.verify.total_s(k) + self.draft.total_s(k)) * self.scale + self.extra_s
