"""The glossary: each term once, in kvlab's words, with the lesson that teaches it."""

from __future__ import annotations

TERMS = (
    ("KV cache", "The keys and values of every token a request has seen, kept in GPU memory so each new token costs "
                 "one decode step instead of reprocessing the context.", "A1"),
    ("KV head", "A key/value projection of attention. Query heads are grouped onto KV heads (GQA); only KV heads "
                "are cached, so they set bytes per token.", "A1"),
    ("Bytes per token", "2 x layers x KV heads x head_dim x bytes per number: the cache one token of context holds.", "A1"),
    ("KV pool", "What is left of GPU memory for the cache after the usable fraction, the weights and the activation "
                "reserve.", "A3"),
    ("gpu_memory_utilization", "vLLM's share of the card the engine may use, weights included.", "A3"),
    ("mem_fraction_static", "SGLang's share of the card for weights plus the KV pool: pool = f x total - weights.", "D2"),
    ("kv_cache_free_gpu_mem_fraction", "TensorRT-LLM's share of the memory still free after the weights and a warm-up "
                                       "pass: pool = f x free.", "D2"),
    ("Block", "A fixed number of tokens' worth of cache (16 by default). Paged engines allocate blocks as tokens "
              "arrive, so a sequence holds only what it has filled.", "A5"),
    ("Prefill", "The step that processes a whole prompt at once; usually compute-bound.", "B1"),
    ("Decode", "The steps that produce one token per running sequence; usually memory-bound.", "B1"),
    ("Arithmetic intensity", "FLOPs a step does per byte it moves to or from HBM.", "B1"),
    ("Roofline", "Attainable FLOP/s against arithmetic intensity: a slope (bandwidth) up to the ridge, then a flat "
                 "roof (compute).", "B1"),
    ("Ridge point", "Peak FLOP/s divided by bandwidth: the intensity where a step stops waiting on memory.", "B1"),
    ("TTFT", "Time to first token: from arrival to the first generated token. On an idle GPU it is one prefill; under "
             "load it adds queueing.", "B2"),
    ("ITL", "Inter-token latency: the gap between two tokens of the same answer.", "B2"),
    ("TPOT", "Time per output token: a request's decode time divided by its output tokens after the first.", "C1"),
    ("p50, p99", "The median and the 99th percentile of a latency: half of requests are faster than p50, one in a "
                 "hundred slower than p99.", "C1"),
    ("Goodput", "Requests per second that meet both latency targets (TTFT and ITL), as opposed to all completed "
                "requests.", "C1"),
    ("Knee", "The load where latency leaves its floor and climbs steeply: arrivals reach capacity.", "C2"),
    ("Chunked prefill", "Splitting a prompt into pieces of at most max_num_batched_tokens, each sharing a step with "
                        "the running decodes.", "C3"),
    ("Head-of-line blocking", "Work behind a long item waits for it: decodes stalled by a long prefill.", "C3"),
    ("Preemption", "Taking a running sequence's cache away when the pool runs out: recomputed later, or swapped to "
                   "host memory and back.", "D1"),
    ("Prefix caching", "Reusing the cached blocks of a prompt prefix that an earlier request already computed.", "E1"),
    ("Disaggregation", "Running prefill and decode on separate instances and moving the cache between them.", "E2"),
    ("Tensor parallelism", "Splitting each layer's weights and heads across GPUs that exchange partial results "
                           "(all-reduce) every layer.", "B4"),
)
