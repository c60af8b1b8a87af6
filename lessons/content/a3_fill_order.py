"""A3. HBM in fill order: where the KV pool comes from."""

from __future__ import annotations

from kvlab.sim.units import GIB

from .. import course
from .model import Choice, Lesson, LiveView, Prediction, Step, TryThis, equal, equation, estimate, holds, keyed, near, number
from .runs import gib, run, tok

BIG = dict(model="qwen3-32b", prompt_tokens=32768)


def _gib(x: float) -> str:
    return f"{number(x / GIB)} GiB"


def build() -> Lesson:
    small = run()
    big = run(**BIG)
    tight = run(model="qwen3-32b", gpu_memory_utilization=0.72)
    tight_fewer = run(model="qwen3-32b", gpu_memory_utilization=0.72, max_num_seqs=64)
    full = run(concurrency=run().max_sequences)  # as many 4k users as Qwen3-8B's pool holds
    capped = run(concurrency=full.batch, max_num_seqs=32)
    f85 = run(**BIG, gpu_memory_utilization=0.85)
    f80 = run(**BIG, gpu_memory_utilization=0.80)
    vllm = run(**BIG, engine="vllm")
    vllm_64 = run(**BIG, engine="vllm", max_num_seqs=64)

    f = big.scenario["gpu_memory_utilization"]
    q1 = Prediction(
        key="a3-pool",
        question=(f"{big.model_name} (BF16 weights and cache) on one 80 GiB H100 at gpu_memory_utilization {f:.2f}. How "
                  "many GiB are left for the KV pool once the engine has loaded the model?"),
        **estimate(big.kv_pool_bytes / GIB, "KV pool", "GiB"),
        reveal=(f"**{_gib(big.kv_pool_bytes)}**, and one request of 32k prompt tokens plus 256 generated needs "
                f"{_gib(big.kv_bytes_per_sequence)}: the pool holds {big.max_sequences} such request at a time."),
        gives_away=(f"**{_gib(big.kv_pool_bytes)}**",),
        peek=(equation(f"usable = {f:.2f} x {_gib(big.capacity_bytes)} = {_gib(big.usable_bytes)}",
                       f * big.capacity_bytes, big.usable_bytes),
              equation(f"pool = usable - weights - activation reserve = {_gib(big.usable_bytes)} - "
                       f"{_gib(big.weight_bytes)} - {_gib(big.activation_reserve_bytes)} = {_gib(big.kv_pool_bytes)}",
                       big.usable_bytes - big.weight_bytes - big.activation_reserve_bytes, big.kv_pool_bytes)),
    )
    s1 = f"""
Before the first request arrives an engine fills the card in a fixed order:

1. it may use `gpu_memory_utilization x capacity` ({gib(big.usable_bytes)} here); the rest stays with the driver,
   the CUDA context and the allocator;
2. the weights go in first ({gib(big.weight_bytes)} for {big.model_name});
3. room for the activations of the largest forward pass it may launch ({gib(big.activation_reserve_bytes)});
4. everything left is the **KV pool**.

The pool is a remainder. The 8B model on the same card leaves {gib(small.kv_pool_bytes)}; the 32B one,
{gib(big.kv_pool_bytes)}. A remainder is sensitive: every GiB the weights grow comes straight out of it.
"""
    step1 = Step(q1, s1, (
        equal("Qwen3-32B holds one 32k request on an H100", big.max_sequences, 1),
        holds("the textbook accounting sets nothing else aside on this card", big.non_torch_bytes == 0,
              f"{big.non_torch_bytes:g} B"),
        near("Qwen3-32B's weights are about 61 GiB", big.weight_bytes / 2**30, 61.0, 0.01),
        near("the Qwen3-8B pool on an H100 is about 55.7 GiB", small.kv_pool_bytes / 2**30, 55.7, 0.006),
    ), LiveView("steady", ("hbm_bar", "admission_numbers"), BIG, ("model", "prompt_tokens", "gpu_memory_utilization"),
                "The card in fill order for Qwen3-32B with 32k prompts. Move gpu_memory_utilization and watch only "
                "the pool change."),
        (TryThis("Drag gpu_memory_utilization from 0.90 down and watch the weights approach the dashed capacity line.",
                 BIG),))

    q2 = Prediction(
        key="a3-util",
        question=("Same model and card. gpu_memory_utilization goes from 0.90 to 0.72. What does the engine do?"),
        choices=(
            Choice("it starts and holds one request, with less headroom",
                   "This treats the setting as a cap on the pool alone; it caps everything, weights included."),
            Choice("it starts but can hold no request", "Close: the pool would be empty, but the weights themselves no "
                                                         "longer fit, so loading fails first."),
            Choice("it refuses to start: the weights do not fit", "0.72 x 80 GiB is less than the weights."),
        ),
        # The key is read from the requests that fit (none: the engine refuses); a claim checks the refusal names the weights.
        **keyed(tight.max_sequences, [(0.5, "it refuses to start: the weights do not fit")],
                "it starts and holds one request, with less headroom"),
        reveal=(f"0.72 x 80 GiB = {gib(tight.usable_bytes)}, and the weights need {gib(tight.weight_bytes)}. The simulator's "
                f"message: \u201c{tight.warnings[0] if tight.warnings else ''}\u201d"),
        gives_away=(gib(tight.usable_bytes),),
    )
    s2 = f"""
This is the story behind "it worked at 0.90 and ran out of memory at 0.85". With 32k prompts the pool
shrinks from {gib(big.kv_pool_bytes)} at 0.90 to {gib(f85.kv_pool_bytes)} at 0.85 and {gib(f80.kv_pool_bytes)} at 0.80
({big.max_sequences}, {f85.max_sequences} and {f80.max_sequences} requests): a few points of utilization are the
whole pool, because the weights do not shrink with it.

Lowering `max_num_seqs` does not rescue a model whose weights do not fit: at 0.72 with max_num_seqs 64 the
engine still holds {tight_fewer.max_sequences} requests. Where the weights fit, the knob moves the pool only
through the activation reserve (the sampler's logits for up to that many sequences): under vLLM's
accounting, 1,024 down to 64 grows the pool from {gib(vllm.kv_pool_bytes)} to {gib(vllm_64.kv_pool_bytes)}.
The knob says how many sequences the scheduler *may* run; the pool says how many it *can*.

Set below what the pool holds, the knob costs throughput. With {full.batch} users at 4k, {full.model_name}'s pool
runs them all and decodes {tok(full.decode_tokens_per_s)} tokens a second; with max_num_seqs {capped.batch} it runs
{capped.batch}, decodes {tok(capped.decode_tokens_per_s)}, and the rest wait.
"""
    step2 = Step(q2, s2, (
        equal("at 0.72 Qwen3-32B holds no request", tight.max_sequences, 0),
        holds("at 0.72 the simulator says the weights do not fit", any("weights need" in w for w in tight.warnings),
              repr(tight.warnings)),
        equal("max_num_seqs 64 does not make the weights fit at 0.72", tight_fewer.max_sequences, 0),
        holds("max_num_seqs 32 under a pool that holds over 90 users cuts decode throughput by over a quarter",
              full.batch > 90 and capped.decode_tokens_per_s < 0.75 * full.decode_tokens_per_s,
              f"{full.batch} users: {full.decode_tokens_per_s:.0f} vs {capped.decode_tokens_per_s:.0f} tok/s"),
        equal("at 0.85 no 32k request fits", f85.max_sequences, 0),
        holds("under vLLM's accounting, lowering max_num_seqs grows the pool (the sampler reserve shrinks)",
              vllm_64.kv_pool_bytes > vllm.kv_pool_bytes, f"{vllm.kv_pool_bytes:.4g} -> {vllm_64.kv_pool_bytes:.4g} B"),
    ), LiveView("steady", ("hbm_bar", "notices"), {**BIG, "gpu_memory_utilization": 0.72},
                ("gpu_memory_utilization", "max_num_seqs"),
                "At 0.72 the weights cross the capacity line; the notice names the setting that would fit them."),
        (TryThis("Set Accounting to vllm and lower max_num_seqs from the default to 64; read the activation reserve.",
                 {**BIG, "engine": "vllm"}),))

    return Lesson(
        **course.header("A3"),
        objective="Compute the KV pool from the card, the weights and the reserve, and explain why a small change in "
                  "gpu_memory_utilization can mean an out-of-memory error.",
        prerequisites=("A1",),
        setup="Memory is spent before traffic arrives. Watch where an 80 GiB card goes when the model is large.",
        steps=(step1, step2),
        recap=("Fill order: usable fraction, weights, activation reserve, then the KV pool as what is left.",
               "A large model leaves a small pool; small changes to the fraction are large changes to the pool.",
               "max_num_seqs limits the scheduler, not the weights; it only moves the sampler's part of the reserve."),
        not_captured=("Real engines measure the reserve by running a profiling forward pass; the textbook accounting "
                      "computes it from shapes (switch Accounting to vllm or sglang for their rules).",
                      "Memory fragmentation inside PyTorch's allocator is not modelled."),
        ideas=("fill-order", "util-oom", "max-num-seqs-myth"),
    )
