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
"""

from __future__ import annotations

from math import log2

from ..roofline import Machine, step_cost

_PROBE = float(2**20)  # KV tokens / pairs used to read the slopes off step_cost


class StepClock:
    """Step time of any batch composition on one instance (one tp group)."""

    __slots__ = ("machine", "_coef", "_window_fraction", "_window_tokens", "kv_bytes_per_token", "causal_pairs",
                 "kv_read", "_by_context", "state_bytes_per_sequence")

    def __init__(self, machine: Machine):
        self.machine = machine
        self._coef: dict = {}
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
        # Bytes of cache one token costs on one rank: what a swap or a KV transfer moves per token.
        self.kv_bytes_per_token = machine.kv_bytes_per_token
        self.causal_pairs = arch.causal_pairs
        # A hybrid model's recurrent state per sequence on one rank (0 otherwise): blocks it takes,
        # bytes a hand-off moves, and a read and write in every step the sequence is in.
        self.state_bytes_per_sequence = arch.state_bytes_per_sequence(machine.tp, machine.attention_dp)

    def coefficients(self, new_tokens: int, sampled_tokens: int | None = None,
                     context_tokens: float | None = None) -> tuple[float, float, float, float, float]:
        """(m0, m1, c0, c1, e) of the affine form above, for steps of `new_tokens` tokens sampling
        `sampled_tokens` rows (None: one per token, a decode step) at `context_tokens` per sequence."""
        if self._by_context and context_tokens is not None:
            context_tokens = 2.0 ** (round(log2(max(context_tokens, 1.0)) * 8) / 8)
        else:
            context_tokens = None
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
                   context_tokens: float | None = None) -> DecodeRun:
        """The closed form of n sequences decoding together from KV read `kv_read0`
        (`context_tokens`: the run's mean context per sequence, for a context-dependent attention
        efficiency; held for the whole run)."""
        m0, m1, c0, c1, e = self.coefficients(n, None, context_tokens)
        return DecodeRun(m0 + m1 * kv_read0, m1 * growth, c0 + c1 * kv_read0, c1 * growth, e, extra_s)


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
