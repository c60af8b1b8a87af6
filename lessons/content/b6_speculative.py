"""B6. Speculative decoding: when guessing pays."""

from __future__ import annotations

from kvlab.sim import catalog

from .. import course
from .model import Choice, Lesson, LiveView, Prediction, Step, TryThis, equal, holds, keyed, near
from .runs import gib, mib, ms, pct, run, times, tok

PROMPT = dict(prompt_tokens=512)
# Qwen3-0.6B (same tokenizer as Qwen3-8B) drafts 3 tokens a step, each kept with probability 0.7.
DRAFT = dict(PROMPT, spec_draft_model="qwen3-0.6b", spec_tokens=3, spec_acceptance=0.7)
# Seed 001: vLLM's EAGLE-3 drafter on an MLA model accepted about 15% of the tokens it proposed.
LOW_ACCEPTANCE = 0.15
MANY_USERS = 256
LONG_PROMPT = dict(prompt_tokens=4096)  # long enough that the pool, not the users, caps the batch


def _tokens_per_step_terms(k: int, a: float) -> str:
    """1 + a + a^2 + ... + a^k written out with its terms' values, as the prose fills it in."""
    return " + ".join(f"{a ** i:.3g}" for i in range(k + 1))


def _kv_shape(model: str) -> tuple[int, int, int]:
    """Layers, KV heads and head_dim from the model's config.json in the catalog."""
    c = catalog.model_entry(model)["config"]
    return c["num_hidden_layers"], c["num_key_value_heads"], c["head_dim"]


def build() -> Lesson:
    k, a = DRAFT["spec_tokens"], DRAFT["spec_acceptance"]
    plain1, spec1 = run(concurrency=1, **PROMPT), run(concurrency=1, **DRAFT)
    cycle1_s = spec1.spec_draft_s + spec1.spec_verify_s
    draft_share = spec1.spec_draft_weight_bytes / plain1.weight_bytes

    q1 = Prediction(
        key="b6-speedup",
        question=(f"One user on {plain1.model_name} ({plain1.gpu_name}), {DRAFT['prompt_tokens']}-token prompts. A much "
                  f"smaller model with the same vocabulary, {spec1.spec_draft_name}, guesses the next {k} tokens; the big "
                  f"model then checks all {k} in one step and keeps each guess with probability {a:g}, up to the first "
                  "wrong one. That user's tokens per second..."),
        choices=(
            Choice("roughly double", f"A step now costs the draft's {k} small steps plus one check of {k + 1} positions, "
                                     f"and the check reads {plain1.model_name}'s weights once for all of them."),
            Choice("rise by about a fifth", f"That would hold if checking {k + 1} positions cost nearly {k + 1} times as "
                                            "much as one: alone on the GPU, the step is a weight read that every position "
                                            "shares."),
            Choice("fall: the small model's extra steps cost more than they save",
                   f"The small model's weights are {pct(draft_share)} of the big model's, so its {k} steps together "
                   "cost less than one big step."),
        ),
        **keyed(spec1.spec_speedup, [(1.0, "fall: the small model's extra steps cost more than they save"),
                                     (1.5, "rise by about a fifth")], "roughly double"),
        reveal=(f"**{times(spec1.spec_speedup)}**: one token every {ms(spec1.itl_s, 2)} instead of {ms(plain1.itl_s, 2)}. "
                f"The check of {k + 1} positions takes {ms(spec1.spec_verify_s, 2)}, as long as one token's step, and the "
                f"draft's {k} steps add {ms(spec1.spec_draft_s, 2)}; each step yields {spec1.spec_tokens_per_step:.2f} "
                "tokens on average."),
        gives_away=(f"**{times(spec1.spec_speedup)}**",),
    )
    s1 = f"""
A decode step for one user is a weight read: the big model's {gib(plain1.weight_bytes)} of weights are
{pct(plain1.weight_share)} of the bytes it reads, and its arithmetic intensity is
{plain1.decode_arithmetic_intensity:.0f} FLOP/B against the GPU's ridge at {plain1.ridge_intensity:.0f}. The tensor
cores wait for memory almost all the time. Checking {k + 1} positions instead of one multiplies the arithmetic by
{k + 1} and leaves the bytes as they were, so the step takes the same time. Every guess the big model keeps is a
token that did not need a step of its own. The draft's steps are weight reads too, of a model
{pct(draft_share)} the size, so they add little.
"""
    # The live views leave out the spec_tokens control: its label is wider than a 390 px phone in a
    # lesson's view. The try-this links reach it on the phases panel.
    step1 = Step(q1, s1, (
        near("one user runs about 2.05x as fast with the draft", spec1.spec_speedup, 2.05, 0.03),
        near("a step yields 2.53 tokens on average", spec1.spec_tokens_per_step, 2.53, 0.01),
        near("checking 4 positions takes as long as one token's step", spec1.spec_verify_s / plain1.itl_s, 1.0, 0.01),
        holds("the draft's 3 steps take under a quarter of one big step", spec1.spec_draft_s < 0.25 * plain1.itl_s,
              f"{spec1.spec_draft_s / plain1.itl_s:.2f}x"),
        equal("one user's step is memory-bound, weights 99% of its bytes",
              (plain1.decode_bound, round(plain1.weight_share * 100)), ("memory", 99)),
        holds("the step's intensity is far below the ridge", plain1.decode_arithmetic_intensity * 50 < plain1.ridge_intensity,
              f"{plain1.decode_arithmetic_intensity:.1f} vs {plain1.ridge_intensity:.0f} FLOP/B"),
    ), LiveView("steady", ("phase_numbers", "step_breakdown"), {**DRAFT, "concurrency": 1},
                ("spec_draft_model", "spec_acceptance"),
                "One user with a draft model: set the draft to none to see the step without it."),
        (TryThis(f"On the phases panel, set Draft model to none and back to {spec1.spec_draft_name}, and compare the "
                 "inter-token latency.", {**DRAFT, "concurrency": 1}, panel="phases"),))

    low = run(concurrency=1, **{**DRAFT, "spec_acceptance": LOW_ACCEPTANCE})
    low_one = run(concurrency=1, **{**DRAFT, "spec_acceptance": LOW_ACCEPTANCE, "spec_tokens": 1})
    cycle_low_s = low.spec_draft_s + low.spec_verify_s
    q2 = Prediction(
        key="b6-acceptance",
        question=(f"The same pair, but on this traffic the big model keeps only {LOW_ACCEPTANCE:.0%} of the guesses (one "
                  "team measured about that for a drafter serving a model with compressed-latent (MLA) attention). Against no "
                  "draft at all, that user's tokens per second are..."),
        choices=(
            Choice("still about 1.5x", "This scales the gain down with the acceptance rate, but the step's cost does not "
                                       "scale down: the draft runs all its steps whatever the big model keeps."),
            Choice("about the same, a little lower in fact", "A step still costs the draft's steps plus the check, and "
                                                            "rarely yields more than the one token a plain step gives."),
            Choice("about half", "A rejected guess wastes only the draft's small step; the big model's own token at "
                                 "the first mismatch is always kept."),
        ),
        **keyed(low.spec_speedup, [(0.75, "about half"), (1.25, "about the same, a little lower in fact")],
                "still about 1.5x"),
        reveal=(f"**{times(low.spec_speedup)}**: {low.spec_tokens_per_step:.2f} tokens a step for a step that costs "
                f"{ms(cycle_low_s, 2)}, against one token in {ms(plain1.itl_s, 2)} without the draft. With a single guess "
                f"a step instead of {k}, the same acceptance gives {times(low_one.spec_speedup)}."),
        gives_away=(f"**{times(low.spec_speedup)}**",),
    )
    s2 = f"""
A guess counts only if every guess before it was kept, and the big model's own token at the first mismatch (or
after the last guess) always counts. With k guesses each kept with probability a, a step yields on average
1 + a + a^2 + ... + a^k tokens. At a = {a:g}: {_tokens_per_step_terms(k, a)} = {spec1.spec_tokens_per_step:.2f}. At
a = {LOW_ACCEPTANCE:g}: {_tokens_per_step_terms(k, LOW_ACCEPTANCE)} = {low.spec_tokens_per_step:.2f}.

The step's cost does not depend on a: the draft runs its {k} steps and the check reads the weights once either
way, {ms(cycle_low_s, 2)} against {ms(plain1.itl_s, 2)} for a plain step, {times(cycle_low_s / plain1.itl_s)}. The
speed-up is the tokens a step yields over that: {times(spec1.spec_speedup)} at {a:g} and {times(low.spec_speedup)} at
{LOW_ACCEPTANCE:g}. Acceptance depends on how well the draft predicts the big model on the traffic actually served,
so it has to be measured; when it is low, fewer guesses a step lose less.
"""
    step2 = Step(q2, s2, (
        holds(f"at {LOW_ACCEPTANCE:.0%} acceptance one user is slower with the draft", low.spec_speedup < 1.0,
              f"{low.spec_speedup:.3f}x"),
        near("a step then yields 1.18 tokens", low.spec_tokens_per_step, 1.18, 0.01),
        near("1 + a + a^2 + a^3 is what sim uses at a = 0.7", spec1.spec_tokens_per_step, sum(a ** i for i in range(k + 1)),
             0.001),
        near("a speculative step costs about 1.23 plain steps", cycle_low_s / plain1.itl_s, 1.23, 0.02),
        holds("the step costs the same at either acceptance", abs(cycle_low_s - cycle1_s) < 1e-9,
              f"{ms(cycle_low_s, 3)} vs {ms(cycle1_s, 3)}"),
        holds("one guess a step at 15% is faster than none", low_one.spec_speedup > 1.0, f"{low_one.spec_speedup:.3f}x"),
        near("the speed-up is tokens a step over the step's cost in plain steps", low.spec_speedup,
             low.spec_tokens_per_step / (cycle_low_s / plain1.itl_s), 0.001),
    ), LiveView("steady", ("phase_numbers",), {**DRAFT, "spec_acceptance": LOW_ACCEPTANCE,
                                                                "concurrency": 1},
                ("spec_acceptance", "concurrency"),
                "One user at a low acceptance rate: raise it and watch the speed-up."),
        (TryThis("On the phases panel, slide the acceptance rate from 0.7 down to 0.15, then try 1 and 5 tokens a step.",
                 {**DRAFT, "concurrency": 1}, panel="phases"),))

    plain_many, spec_many = run(concurrency=MANY_USERS, **PROMPT), run(concurrency=MANY_USERS, **DRAFT)
    draft_alone = run(model=DRAFT["spec_draft_model"], **PROMPT)
    context_tokens = DRAFT["prompt_tokens"] + plain1.scenario["output_tokens"]
    fit_ratio = spec1.max_sequences / plain1.max_sequences
    draft_kv_share = draft_alone.kv_bytes_per_token / plain1.kv_bytes_per_token
    (big_layers, *big_heads), (draft_layers, *draft_heads) = _kv_shape(plain1.scenario["model"]), _kv_shape(DRAFT["spec_draft_model"])
    plain_long = run(concurrency=MANY_USERS, **LONG_PROMPT)
    spec_long = run(concurrency=MANY_USERS, **{**DRAFT, **LONG_PROMPT})
    q3 = Prediction(
        key="b6-fit",
        question=(f"Back to acceptance {a:g}. Without a draft, {plain1.max_sequences} sequences of {context_tokens} tokens "
                  f"fit in the pool. The draft's weights are {gib(spec1.spec_draft_weight_bytes, 2)}, "
                  f"{pct(draft_share)} of the big model's. With the draft loaded, the sequences that fit are..."),
        choices=(
            Choice("nearly as many", f"Its weights are small, but the draft also keeps its own cache for every token of "
                                     f"every sequence, and {spec1.spec_draft_name} does not have a small cache."),
            Choice("about three quarters as many", "That needs the draft's cache to be about a third of the big "
                                                   "model's a token: it has fewer layers, but heads of the same size."),
            Choice("about half as many", f"{spec1.spec_draft_name} caches {tok(draft_alone.kv_bytes_per_token)} bytes a "
                                         f"token, {pct(draft_kv_share)} of {plain1.model_name}'s "
                                         f"{tok(plain1.kv_bytes_per_token)}, and each sequence holds both caches."),
        ),
        **keyed(fit_ratio, [(0.65, "about half as many"), (0.88, "about three quarters as many")], "nearly as many"),
        reveal=(f"**{spec1.max_sequences}** instead of {plain1.max_sequences}: each sequence holds "
                f"{mib(spec1.kv_bytes_per_sequence)} instead of {mib(plain1.kv_bytes_per_sequence)}, and the pool shrinks "
                f"from {gib(plain1.kv_pool_bytes)} to {gib(spec1.kv_pool_bytes)}. With {MANY_USERS} users, which still "
                f"fit, the draft makes each stream run at {times(spec_many.spec_speedup)} the speed of no draft."),
        gives_away=(f"**{spec1.max_sequences}** instead of",),
    )
    s3 = f"""
The draft is a second model on the same GPU. Its weights come off the pool once; its cache is paid for every
token of every sequence. {spec1.spec_draft_name}'s cache per token is `{draft_alone.kv_formula}`, beside
{plain1.model_name}'s `{plain1.kv_formula}`: fewer layers, the same heads. Where the pool limits the batch, the
draft trades users for each user's speed: {MANY_USERS} users with {LONG_PROMPT['prompt_tokens']:,}-token prompts run
{plain_long.batch} at a time without it and {spec_long.batch} with it.

It also needs idle arithmetic, and a large batch has little. With {MANY_USERS} users and
{DRAFT['prompt_tokens']}-token prompts a plain step takes
{ms(plain_many.itl_s)}; the check of {MANY_USERS * (k + 1):,} positions is {spec_many.decode_bound}-bound and takes
{ms(spec_many.spec_verify_s)}, and the draft's {k} steps, each reading its cache for every sequence, add
{ms(spec_many.spec_draft_s)}. Decode-only throughput falls from {tok(plain_many.decode_tokens_per_s)} to
{tok(spec_many.decode_tokens_per_s)} tokens per second: speculative decoding is a lever for light load.
"""
    step3 = Step(q3, s3, (
        equal("528 sequences fit without the draft, 291 with it", (plain1.max_sequences, spec1.max_sequences), (528, 291)),
        near("the draft's cache per token is 78% of the big model's", draft_kv_share, 0.78, 0.01),
        holds("the draft has fewer layers and the same KV heads and head_dim",
              draft_layers < big_layers and draft_heads == big_heads,
              f"{draft_layers} vs {big_layers} layers; heads, head_dim {draft_heads} vs {big_heads}"),
        equal("at 4k prompts the pool runs 93 of 256 users without the draft, 51 with it",
              (plain_long.batch, spec_long.batch, plain_long.batch_limited_by, spec_long.batch_limited_by),
              (93, 51, "kv_pool", "kv_pool")),
        equal("each sequence holds the draft's cache for its tokens", spec1.spec_draft_kv_bytes_per_sequence,
              draft_alone.kv_bytes_per_token * context_tokens),
        near("the draft's weights are 1.11 GiB", spec1.spec_draft_weight_bytes / 2 ** 30, 1.11, 0.01),
        equal("the draft's weights are 7% of the big model's", round(draft_share * 100), 7),
        near("the pool shrinks by the draft's weights", plain1.kv_pool_bytes - spec1.kv_pool_bytes,
             spec1.spec_draft_weight_bytes, 0.01),
        equal(f"{MANY_USERS} users still fit with the draft", (plain_many.batch, spec_many.batch), (MANY_USERS, MANY_USERS)),
        equal("the check of 1,024 positions is compute-bound, the plain step memory-bound",
              (spec_many.decode_bound, plain_many.decode_bound), ("compute", "memory")),
        near("with 256 users each stream runs at about 0.74x", spec_many.spec_speedup, 0.74, 0.03),
        holds("decode-only throughput falls with the draft at 256 users",
              spec_many.decode_tokens_per_s < plain_many.decode_tokens_per_s,
              f"{tok(plain_many.decode_tokens_per_s)} -> {tok(spec_many.decode_tokens_per_s)}"),
        holds("the draft's 3 steps cost more than a plain step at 256 users", spec_many.spec_draft_s > plain_many.itl_s,
              f"{ms(spec_many.spec_draft_s)} vs {ms(plain_many.itl_s)}"),
    ), LiveView("steady", ("admission_numbers", "hbm_bar", "phase_numbers"), {**DRAFT, "concurrency": MANY_USERS},
                ("spec_draft_model", "concurrency"),
                "The pool and the speed-up with the draft loaded: set the draft to none, or lower the users."),
        (TryThis(f"On the admission panel, set Draft model to none and back to {spec1.spec_draft_name}, and watch "
                 "Sequences that fit.", {**DRAFT, "concurrency": MANY_USERS}),
         TryThis(f"On the phases panel, raise Concurrent requests from 1 to {MANY_USERS} with the draft set.",
                 {**DRAFT, "concurrency": 1}, panel="phases")))
    return Lesson(
        **course.header("B6"),
        objective="Work out when a draft model speeds decoding up, what its acceptance rate decides, and what the "
                  "draft costs in memory and at a large batch.",
        prerequisites=("B1", "B3"),
        setup=("Each token of an answer costs the big model a decode step. A much smaller model from the same family "
               "can guess a few tokens ahead, and the big model can check the guesses instead of writing every token "
               "itself. Whether that is worth doing depends on the step, the guesses and the memory."),
        steps=(step1, step2, step3),
        recap=("A memory-bound decode step reads the weights once however many positions it checks, so kept guesses "
               "are nearly free tokens.",
               "A step yields 1 + a + ... + a^k tokens; at a low acceptance rate the draft's steps cost more than its "
               "guesses save.",
               "The draft's weights and its cache for every sequence come out of the pool, and at a large batch the "
               "check is compute-bound: speculative decoding is a lever for light load."),
        not_captured=("kvlab gives every position and request one acceptance rate. Its EAGLE head (spec_method eagle) is "
                      "shaped from the big model's dimensions, not read from a trained head's config.",
                      "The serving lab's time-domain engine runs a draft too (its Speculative decoding card); this "
                      "lesson's figures are the steady-state model's."),
        ideas=("speculative-decoding", "speculative-acceptance"),
    )
