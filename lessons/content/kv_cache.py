"""Lesson 1, "What stops the batch": the KV cache, the HBM budget and the two phases.

Every number in the prose is computed here by `sim` when the lesson is built; nothing is typed
in. Each claim the prose makes is also a `Claim` whose `holds` is checked by
tests/lessons/test_kv_cache_lesson.py, so a change to the simulator that breaks the story fails
the build instead of silently making the lesson wrong.
"""

from __future__ import annotations

from functools import cache

from kvlab.sim import Result, Scenario, evaluate
from kvlab.sim.units import GIB, KIB

from .model import Claim, Lesson, Prediction, Section, TryThis

BASE = Scenario(model="qwen3-8b", gpu="h100-sxm", prompt_tokens=4096, output_tokens=256, concurrency=32)


@cache
def run(**changes) -> Result:
    return evaluate(BASE.with_(**changes))


def _gib(x: float) -> str:
    return f"{x / GIB:.1f} GiB"


def _ms(x: float) -> str:
    return f"{x * 1e3:.1f} ms"


def _tok(x: float) -> str:
    return f"{x:,.0f}"


def bytes_per_token() -> Section:
    gqa = run()
    mha = run(force_mha=True)
    big = run(model="qwen3-32b")
    big_mha = run(model="qwen3-32b", force_mha=True)
    ratio = mha.kv_bytes_per_token / gqa.kv_bytes_per_token
    per_8k = gqa.kv_bytes_per_token * 8192
    text = f"""
A transformer that generates text keeps, for every token it has seen and at every layer, one key
vector and one value vector per **KV head**. That store is the KV cache. Its size per token depends
only on the architecture:

`bytes per token = 2 x layers x kv_heads x head_dim x bytes per element`

For {gqa.model_name} in BF16 that is `{gqa.kv_formula}`, or **{gqa.kv_bytes_per_token / KIB:.0f} KiB per
token**. A single 8k-token conversation therefore holds {per_8k / GIB:.2f} GiB of cache.

The formula counts KV heads, not query heads. {gqa.model_name} has 32 query heads that share 8 KV heads
(grouped-query attention). Give every query head its own K and V and the cache grows to
{mha.kv_bytes_per_token / KIB:.0f} KiB per token, {ratio:.0f} times more, while the parameter count only goes
from {gqa.params_total / 1e9:.2f}B to {mha.params_total / 1e9:.2f}B.
"""
    claims = [
        Claim("Qwen3-8B caches 144 KiB per token in BF16", gqa.kv_bytes_per_token == 144 * KIB),
        Claim("forcing MHA multiplies Qwen3-8B's cache by q_heads / kv_heads = 4", ratio == 4),
        Claim("forcing MHA adds about 11% of parameters", 0.10 < mha.params_total / gqa.params_total - 1 < 0.12),
        Claim("Qwen3-32B forced MHA costs 2 MiB per token", big_mha.kv_bytes_per_token == 8 * big.kv_bytes_per_token == 2 * 2**20),
    ]
    predict = Prediction(
        question=f"{gqa.model_name} forced to multi-head attention: how many 4k-token requests fit on the H100, "
                 f"compared with {gqa.max_sequences} under GQA?",
        choices=["about the same", "about half", "about a quarter", "none"],
        answer="about a quarter",
        reveal=f"{mha.max_sequences} sequences instead of {gqa.max_sequences}: the cache per token grew {ratio:.0f}x, "
               f"so the pool holds roughly a quarter as many.",
    )
    claims.append(Claim("forced MHA fits roughly a quarter as many 4k sequences",
                        0.2 < mha.max_sequences / gqa.max_sequences < 0.3))
    return Section(
        "Bytes per token", text, claims, [TryThis("Tick 'force multi-head attention' and watch bytes per token.",
                                                  {"force_mha": True})], [predict])


def fill_order() -> Section:
    r = run()
    big = run(model="qwen3-32b", prompt_tokens=32768)
    tight = run(model="qwen3-32b", gpu_memory_utilization=0.72)
    text = f"""
A serving engine decides how many sequences it can hold before the first request arrives, by
filling the GPU's memory in a fixed order:

1. It may use `gpu_memory_utilization x capacity`: 0.90 x 80 GiB = **{_gib(r.usable_bytes)}** on an H100.
2. The weights go in first: **{_gib(r.weight_bytes)}** for {r.model_name} in BF16.
3. It keeps room for the activations of the largest forward pass it will launch: **{_gib(r.activation_reserve_bytes)}**.
4. Everything left is the KV pool: **{_gib(r.kv_pool_bytes)}**, which is {_tok(r.kv_pool_tokens)} tokens.

The number of sequences that fit is the pool divided by what one sequence needs. At a 4k prompt
plus 256 output tokens each sequence needs {_gib(r.kv_bytes_per_sequence)}, so **{r.max_sequences}** fit.

Now take {big.model_name}. Its weights alone are {_gib(big.weight_bytes)}, which leaves a pool of
{_gib(big.kv_pool_bytes)}; one 32k-token request needs {_gib(big.kv_bytes_per_sequence)} of it, so the engine
can serve **{big.max_sequences}** such request at a time. Lower gpu_memory_utilization to 0.72 and the weights
stop fitting at all: the engine refuses to start.
"""
    claims = [
        Claim("the Qwen3-8B pool on an H100 is about 55.7 GiB", abs(r.kv_pool_bytes / GIB - 55.7) < 0.3),
        Claim("93 Qwen3-8B sequences of 4k+256 fit", r.max_sequences == 93),
        Claim("Qwen3-32B serves one 32k request", big.max_sequences == 1),
        Claim("Qwen3-32B does not fit at utilization 0.72", tight.max_sequences == 0 and bool(tight.warnings)),
    ]
    predict = Prediction(
        question="Qwen3-32B on the same H100: how many 32k-token requests can it hold at once?",
        choices=["none", "one", "about four", "about twelve"],
        answer="one",
        reveal=f"{big.max_sequences}: the weights leave {_gib(big.kv_pool_bytes)} and one request needs "
               f"{_gib(big.kv_bytes_per_sequence)}.",
    )
    return Section("Where the pool comes from", text, claims,
                   [TryThis("Switch the model to Qwen3-32B and the prompt to 32k.", {"model": "qwen3-32b", "prompt_tokens": 32768}),
                    TryThis("Then drag gpu_memory_utilization down to 0.72.", {"model": "qwen3-32b", "gpu_memory_utilization": 0.72})],
                   [predict])


def prompt_length() -> Section:
    short = run()
    long = run(prompt_tokens=32768)
    fp8 = run(prompt_tokens=32768, kv_dtype="fp8")
    text = f"""
Nothing about the model or the GPU changes when prompts get longer, yet the batch collapses. At a
4k prompt the pool holds {short.max_sequences} sequences and the 32 concurrent requests all run, producing
{_tok(short.decode_tokens_per_s)} tokens per second. At 32k only **{long.max_sequences}** fit, and
throughput falls to **{_tok(long.decode_tokens_per_s)} tokens per second**.

Store the cache in FP8 instead of BF16 and each token costs half as many bytes. The pool now holds
**{fp8.max_sequences}** long sequences, but the bytes a decode step reads hardly change, because the engine
fills the same pool either way: the step still takes {_ms(fp8.decode_step_s)}. The same traffic now
serves twice as many sequences, so throughput doubles to {_tok(fp8.decode_tokens_per_s)} tokens per second.
"""
    claims = [
        Claim("a 32k prompt drops Qwen3-8B from 93 to 12 sequences", (short.max_sequences, long.max_sequences) == (93, 12)),
        Claim("throughput falls from about 2,300 to about 430 tok/s",
              abs(short.decode_tokens_per_s / 2300 - 1) < 0.03 and abs(long.decode_tokens_per_s / 430 - 1) < 0.03),
        Claim("FP8 KV doubles sequences at 32k", fp8.max_sequences == 2 * long.max_sequences),
        Claim("FP8 KV leaves the 32k step time unchanged", abs(fp8.decode_step_s / long.decode_step_s - 1) < 1e-6),
        Claim("FP8 KV doubles 32k throughput", abs(fp8.decode_tokens_per_s / long.decode_tokens_per_s - 2) < 0.01),
    ]
    predict = Prediction(
        question="At a 32k prompt, switching the KV cache from BF16 to FP8 makes each decode step...",
        choices=["twice as fast", "slightly faster", "no faster"],
        answer="no faster",
        reveal=f"{_ms(long.decode_step_s)} before and {_ms(fp8.decode_step_s)} after: the pool is full either way, so "
               f"the step reads the same bytes; the gain is {fp8.max_sequences} sequences instead of {long.max_sequences}.",
    )
    return Section("Longer prompts, fewer users", text, claims,
                   [TryThis("Drag prompt tokens from 4k to 32k.", {"prompt_tokens": 32768}),
                    TryThis("Now set KV cache precision to FP8.", {"prompt_tokens": 32768, "kv_dtype": "fp8"})],
                   [predict])


def two_phases() -> Section:
    a100 = run(model="qwen3-14b", concurrency=64, gpu="a100-80")
    h100 = run(model="qwen3-14b", concurrency=64, gpu="h100-sxm")
    h200 = run(model="qwen3-14b", concurrency=64, gpu="h200")
    tiny = run(prompt_tokens=128)
    text = f"""
Serving a request has two phases with opposite bottlenecks. **Prefill** pushes the whole prompt
through the model in one pass: the weights are read once and used for thousands of tokens, so the
tensor cores are the limit. **Decode** makes one token per sequence per step: all the weights and
every sequence's cache are read again for a handful of multiplications, so memory bandwidth is the
limit.

Compare GPUs on {h100.model_name} with 4k prompts and 64 requests. The H100 has 3.17 times the A100's
BF16 compute and 1.64 times its bandwidth. Time to first token drops from {_ms(a100.ttft_s)} to
{_ms(h100.ttft_s)} ({a100.ttft_s / h100.ttft_s:.2f}x), following compute; inter-token latency drops from
{_ms(a100.itl_s)} to {_ms(h100.itl_s)} ({a100.itl_s / h100.itl_s:.2f}x), following bandwidth. The H200 has the
H100's compute and more, faster memory: TTFT stays at {_ms(h200.ttft_s)} while ITL falls to {_ms(h200.itl_s)}.

The labels are ratios, not laws. A 128-token prompt is too little work to pay for reading
{_gib(tiny.weight_bytes)} of weights, so that prefill is **{tiny.prefill_bound}-bound**.
"""
    claims = [
        Claim("A100 -> H100 cuts TTFT about 3.17x", abs(a100.ttft_s / h100.ttft_s / 3.17 - 1) < 0.03),
        Claim("A100 -> H100 cuts ITL about 1.64x", abs(a100.itl_s / h100.itl_s / 1.64 - 1) < 0.03),
        Claim("H200 TTFT equals H100 TTFT", abs(h200.ttft_s / h100.ttft_s - 1) < 1e-9),
        Claim("H200 ITL is lower than H100's", h200.itl_s < h100.itl_s),
        Claim("a 128-token prefill is memory-bound", tiny.prefill_bound == "memory"),
        Claim("a 4k prefill is compute-bound", h100.prefill_bound == "compute"),
        Claim("decode at 4k x 64 is memory-bound", h100.decode_bound == "memory"),
    ]
    predict = Prediction(
        question="Moving Qwen3-14B from an H100 to an H200 (same compute, faster memory) changes time to first token by...",
        choices=["nothing", "about 1.4x faster", "about 3x faster"],
        answer="nothing",
        reveal=f"TTFT is {_ms(h100.ttft_s)} on both: prefill is compute-bound. ITL goes from {_ms(h100.itl_s)} "
               f"to {_ms(h200.itl_s)}.",
    )
    return Section("Two phases, opposite bottlenecks", text, claims,
                   [TryThis("Open the phases panel and switch the GPU between A100, H100 and H200.",
                            {"model": "qwen3-14b", "concurrency": 64, "gpu": "a100-80"}, panel="phases")],
                   [predict])


def batching_ceiling() -> Section:
    kw = dict(prompt_tokens=32768, weight_dtype="fp8", kv_dtype="fp8")
    few = run(concurrency=8, **kw)
    many = run(concurrency=256, **kw)
    text = f"""
Batching works because every sequence in a step shares one read of the weights. With FP8 weights
and cache and 32k prompts, 8 concurrent requests give a batch of {few.batch}: weights are
{few.weight_share:.0%} of the bytes each step reads. Offer 256 requests and the pool caps the batch at
**{many.batch}**; weights are now only {many.weight_share:.0%} of the step. The batch grew
{many.batch / few.batch:.1f}x but aggregate throughput only {many.decode_tokens_per_s / few.decode_tokens_per_s:.2f}x,
while each stream became {many.itl_s / few.itl_s:.1f}x slower: once the cache dominates the step, another
sequence adds its own full read to every token and there is nothing left to amortise.
"""
    claims = [
        Claim("the FP8 32k batch is capped at 27", (few.batch, many.batch) == (8, 27)),
        Claim("aggregate throughput rises only about 1.26x", abs(many.decode_tokens_per_s / few.decode_tokens_per_s / 1.26 - 1) < 0.03),
        Claim("each stream is about 2.7x slower", abs(many.itl_s / few.itl_s / 2.7 - 1) < 0.03),
        Claim("weight share falls from about 30% to about 11%",
              round(few.weight_share * 100) == 30 and round(many.weight_share * 100) == 11),
    ]
    predict = Prediction(
        question="Going from 8 to 27 sequences in the batch (3.4x) raises aggregate tokens per second by about...",
        choices=["3.4x", "2x", "1.3x"],
        answer="1.3x",
        reveal=f"{many.decode_tokens_per_s / few.decode_tokens_per_s:.2f}x: weights were already a minority of the bytes.",
    )
    return Section("The ceiling of batching", text, claims,
                   [TryThis("Set FP8 everywhere, a 32k prompt, and move concurrency from 8 to 256.",
                            {"concurrency": 256, **kw})], [predict])


def build() -> Lesson:
    return Lesson(
        slug="kv_cache",
        title="What stops the batch: the KV cache",
        summary="Bytes per token, the HBM budget, and why decode is a memory problem.",
        sections=[bytes_per_token(), fill_order(), prompt_length(), two_phases(), batching_ceiling()],
    )
