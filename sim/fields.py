"""Every input field's bounds and type rules, in one place, for the simulator and the engine.

`Scenario` (sim.scenario) and the engine's config groups (sim.engine.config) validate through the
same functions and read their bounds from the tables here, so a rule fixed once is fixed for
both: a 400-digit integer, nan, inf, a bool, a list where a number belongs, all come back as an
`Issue` naming the field and its allowed range, never as an exception.

Rules every numeric field shares:
- bool is not a number (True is an int in Python; a checkbox value in a rate field is a bug);
- Python ints are compared exactly, never converted to float first (float(10**400) overflows);
- nan and +-inf are rejected;
- integer fields accept integral floats (100.0) and `coerce` turns them into ints before use, in
  sim and in the engine alike; 100.5 is rejected;
- values are shown in messages safely: a 5,000-digit int is described by its size, since
  `str()` refuses ints of more than 4,300 digits.

Names (catalog ids, profile names) are short identifiers, never paths.

To add a field: one `Bound` line in the table of the dataclass that holds it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, fields, replace

from .errors import Issue


@dataclass(frozen=True)
class Bound:
    """Allowed range and help text of one numeric field."""

    low: float
    high: float
    integer: bool
    help: str
    optional: bool = False


# ------------------------------------------------------------------------------------------
# The steady-state Scenario (sim.scenario)
# ------------------------------------------------------------------------------------------
SCENARIO_FIELDS: dict[str, Bound] = {
    "gpu_memory_gib": Bound(1, 4096, False, "override the GPU's memory capacity, GiB", optional=True),
    "prompt_tokens": Bound(1, 2**21, True, "tokens in each request's prompt"),
    "output_tokens": Bound(1, 2**20, True, "tokens each request generates"),
    "concurrency": Bound(1, 1_000_000, True, "requests in flight at once"),
    "gpu_memory_utilization": Bound(0.05, 1.0, False, "fraction of capacity the engine may use"),
    "block_size_tokens": Bound(1, 1024, True, "tokens per KV block (paged allocation, pool rounding)"),
    "max_model_len": Bound(1, 2**22, True, "longest request the engine accepts, tokens", optional=True),
    "max_num_batched_tokens": Bound(1, 2**20, True, "token budget of one forward step (unset: the engine's default)",
                                    optional=True),
    "max_num_seqs": Bound(1, 1_000_000, True, "most sequences the scheduler runs at once (unset: the engine's default)",
                          optional=True),
    "mem_fraction_static": Bound(0.05, 1.0, False, "SGLang: fraction of memory for weights + KV pool (unset: SGLang's default)",
                                 optional=True),
    # TensorRT-LLM checks freeGpuMemoryFraction < 1 (kvCacheManager.cpp), so 1 is not allowed.
    "kv_cache_free_gpu_mem_fraction": Bound(0.05, 0.99, False, "TensorRT-LLM: fraction of the memory free after the "
                                            "weights and the warm-up that the KV cache takes (unset: 0.9)", optional=True),
    "kv_cache_max_tokens": Bound(1, 2**31 - 1, True, "TensorRT-LLM: most tokens the KV cache holds (unset: no cap)",
                                 optional=True),
    "dollars_per_gpu_hour": Bound(0, 1000, False, "price of one GPU-hour, dollars", optional=True),
    "spec_tokens": Bound(1, 16, True, "speculative decoding: tokens the draft model proposes per step (num_speculative_tokens)"),
    "spec_acceptance": Bound(0, 1, False, "speculative decoding: chance the target keeps each proposed token"),
}

# ------------------------------------------------------------------------------------------
# The time-domain engine (sim.engine.config): workload, scheduler, memory, cluster, outputs
# ------------------------------------------------------------------------------------------
ENGINE_FIELDS: dict[str, Bound] = {
    # workload
    "rate_per_s": Bound(0.001, 100_000, False, "mean arrival rate, requests per second"),
    "burst_cv": Bound(0.1, 20, False, "gamma arrivals: coefficient of variation of the gaps (1 = Poisson)"),
    "clients": Bound(1, 100_000, True, "closed loop: concurrent clients, each sends its next request when the last one ends"),
    "think_time_s": Bound(0, 3600, False, "closed loop: pause between a response and the client's next request, s"),
    "max_concurrency": Bound(1, 100_000, True, "open arrivals: most requests the clients keep in flight; a request due "
                             "while that many are running waits at the client (vllm bench serve --max-concurrency)",
                             optional=True),
    "num_requests": Bound(1, 2_000_000, True, "requests to simulate"),
    "prompt_tokens": Bound(1, 2**21, True, "prompt length: the fixed value, or the median of the log-normal"),
    "prompt_min_tokens": Bound(1, 2**21, True, "shortest prompt (uniform low end, log-normal clip)"),
    "prompt_max_tokens": Bound(1, 2**21, True, "longest prompt (uniform high end, log-normal clip)"),
    "prompt_sigma": Bound(0, 4, False, "log-normal prompt: sigma of ln(tokens); larger means a longer tail"),
    "output_tokens": Bound(1, 2**20, True, "output length: the fixed value, or the median of the log-normal"),
    "output_min_tokens": Bound(1, 2**20, True, "shortest output (uniform low end, log-normal clip)"),
    "output_max_tokens": Bound(1, 2**20, True, "longest output (uniform high end, log-normal clip)"),
    "output_sigma": Bound(0, 4, False, "log-normal output: sigma of ln(tokens)"),
    "prefix_tokens": Bound(0, 2**20, True, "shared system prompt length, tokens (part of the prompt)"),
    "prefix_fraction": Bound(0, 1, False, "fraction of requests that start with a shared system prompt"),
    "prefix_groups": Bound(1, 100_000, True, "distinct shared system prompts, chosen uniformly"),
    # Up to 2**53 - 1, the largest integer a browser's number holds exactly (Number.MAX_SAFE_INTEGER):
    # the static site's seed box and every link carry the seed through JavaScript.
    "seed": Bound(0, 2**53 - 1, True, "random seed: the same seed gives the same workload and result"),
    # scheduler
    "watermark_fraction": Bound(0, 0.5, False, "admission keeps this fraction of KV blocks free (vLLM's watermark)"),
    "new_token_ratio": Bound(0, 1, False, "reserve admission: fraction of each running request's remaining output held back"),
    "tokenize_s_per_token": Bound(0, 0.001, False, "tokenizer time per prompt token, s (0: not modelled)"),
    "block_table_s_per_block": Bound(0, 0.001, False, "scheduler CPU time to write one block-table entry, s"),
    # memory
    "swap_space_gib": Bound(0, 4096, False, "host memory for swapped-out sequences, GiB per instance"),
    "host_cache_gib": Bound(0, 4096, False, "host-memory tier for evicted prefix blocks, GiB per instance (0: off)"),
    "host_link_gb_per_s": Bound(0.1, 10_000, False, "GPU-host link per direction, GB/s (default: the GPU's PCIe)", optional=True),
    # cluster
    "replicas": Bound(1, 1024, True, "colocated engine instances (data parallel), each on tp GPUs"),
    "prefill_instances": Bound(1, 1024, True, "disaggregated: prefill-only instances"),
    "decode_instances": Bound(1, 1024, True, "disaggregated: decode-only instances"),
    "kv_transfer_gb_per_s": Bound(0.1, 10_000, False, "disaggregated: KV transfer link per GPU, GB/s (default: the GPU's interconnect)",
                                  optional=True),
    # targets and outputs
    "ttft_target_s": Bound(0.001, 3600, False, "goodput target: time to first token, s"),
    "itl_target_s": Bound(0.0001, 60, False, "goodput target: mean inter-token latency of the request, s"),
    "sample_interval_s": Bound(0, 3600, False, "time-series resolution, s (0: about 400 points)"),
    "log_interval_s": Bound(0.1, 3600, False, "seconds between engine log lines (vLLM logs every 10 s)"),
}

# ------------------------------------------------------------------------------------------
# A benchmark client's run (sim.engine.bench), under vllm bench serve's option names
# ------------------------------------------------------------------------------------------
BENCH_FIELDS: dict[str, Bound] = {
    "num_prompts": Bound(1, 400_000, True, "requests the client sends (the engine's memory budget allows 400,000)"),
    "random_input_len": Bound(1, 2**21, True, "random dataset: prompt length the client draws around, tokens"),
    "random_output_len": Bound(1, 2**20, True, "random dataset: output length the client draws around, tokens"),
    "random_range_ratio": Bound(0, 1, False, "random dataset: spread of the drawn lengths (vllm: [L(1-r), L(1+r)]; "
                                "sglang: [L r, L])"),
    "random_prefix_len": Bound(0, 2**20, True, "random dataset: tokens of one prefix every prompt starts with"),
    "sharegpt_output_len": Bound(1, 2044, True, "sharegpt dataset: every reply this long instead of its reference length",
                                 optional=True),
    "sonnet_input_len": Bound(1, 2**21, True, "sonnet dataset: prompt length, tokens (vLLM keeps prompts at or under it)"),
    "sonnet_output_len": Bound(1, 2**20, True, "sonnet dataset: output length, tokens"),
    "sonnet_prefix_len": Bound(0, 2**20, True, "sonnet dataset: tokens of the opening every prompt shares"),
    "custom_output_len": Bound(1, 2**20, True, "custom dataset: output length of a row that gives none, tokens"),
    "request_rate": Bound(0.001, 100_000, False, "requests per second the client sends (unset: inf, all at once)",
                          optional=True),
    "burstiness": Bound(0.01, 1000, False, "gamma shape of the gaps between requests (1: Poisson; below 1: burstier)"),
    "max_concurrency": ENGINE_FIELDS["max_concurrency"],
    "seed": ENGINE_FIELDS["seed"],
}

# A catalog id or profile name: letters, digits, '.', '_' and '-', starting with a letter or digit.
# No separators and no leading dot, so a name can never step out of the folder it is looked up in.
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
MAX_SHOWN_CHARS = 40


# ------------------------------------------------------------------------------------------
# Formatting that never raises
# ------------------------------------------------------------------------------------------
def fmt(x: float) -> str:
    """A bound as people write it: 4,194,304 or 0.05."""
    return f"{int(x):,}" if x == int(x) else f"{x:g}"


def describe(bound: Bound) -> str:
    kind = "an integer" if bound.integer else "a number"
    return f"{kind} between {fmt(bound.low)} and {fmt(bound.high)}"


def shown(value) -> str:
    """`value` quoted for a message, short, whatever it is (huge ints, long strings, objects)."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value.bit_length() > 64:
            digits = int(value.bit_length() * 0.30103) + 1  # an upper bound: one too many near a power of 10
            digits -= abs(value) < 10 ** (digits - 1)
            return f"a {digits:,}-digit integer" if value > 0 else f"a negative {digits:,}-digit integer"
        return fmt(value)
    if isinstance(value, float):
        return fmt(value) if math.isfinite(value) and abs(value) < 1e15 else f"{value:g}"
    if isinstance(value, str):
        return repr(value[:MAX_SHOWN_CHARS] + ("..." if len(value) > MAX_SHOWN_CHARS else ""))
    if value is None or isinstance(value, bool):
        return repr(value)
    return f"a {type(value).__name__}"


# ------------------------------------------------------------------------------------------
# Checks: each returns None or one Issue naming the field and what is allowed
# ------------------------------------------------------------------------------------------
def check_number(name: str, value, bound: Bound) -> Issue | None:
    # The valid path does no string work: validation runs on every slider move.
    if value is None:
        return None if bound.optional else Issue(name, f"is required: {describe(bound)}")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return Issue(name, f"must be {describe(bound)}, got {shown(value)}")
    if isinstance(value, float):
        if not math.isfinite(value) or (bound.integer and not value.is_integer()):
            return Issue(name, f"must be {describe(bound)}, got {shown(value)}")
    # Exact comparison: an int of any size against the bounds, with no conversion to float.
    if not bound.low <= value <= bound.high:
        return Issue(name, f"must be between {fmt(bound.low)} and {fmt(bound.high)}, got {shown(value)}")
    return None


def check_choice(name: str, value, choices) -> Issue | None:
    """One of `choices`. Numeric choices (tp) follow the integer-field rule: 2.0 is 2, True is not."""
    try:
        ok = value in choices
    except TypeError:  # an unhashable value tested against a set or dict
        ok = False
    if ok and isinstance(value, bool) and not all(isinstance(c, bool) for c in choices):
        ok = False  # True == 1
    if not ok:
        return Issue(name, f"must be one of {', '.join(map(str, choices))}, got {shown(value)}")
    return None


def check_flag(name: str, value) -> Issue | None:
    return None if value is True or value is False else Issue(name, f"must be true or false, got {shown(value)}")


def check_name(name: str, value, what: str) -> Issue | None:
    """A catalog id or profile name (`what` says which): a short identifier, never a path."""
    if not isinstance(value, str) or not NAME_PATTERN.fullmatch(value):
        return Issue(name, f"must be {what}: letters, digits, '.', '_' or '-', at most 100 characters "
                           f"(names, not paths), got {shown(value)}")
    return None


def check_engine_version(engine: str, value) -> Issue | None:
    """An engine release, "major.minor" or "major.minor.patch" of one the engine rules know
    (sim/data/engine_rules.json); None means the engine's current release."""
    if value is None:
        return None
    from .engine_rules import ENGINES_WITH_RULES, version_issue  # the rule table lives with the rules
    if engine not in ENGINES_WITH_RULES:
        return None  # the engine field reports its own problem
    return version_issue(engine, value)


def check_numbers(obj, table: dict[str, Bound]) -> list[Issue]:
    """Every numeric field of dataclass `obj` that `table` bounds."""
    out = []
    for f in fields(obj):
        bound = table.get(f.name)
        if bound is not None:
            issue = check_number(f.name, getattr(obj, f.name), bound)
            if issue is not None:
                out.append(issue)
    return out


def coerce_number(value, integer: bool):
    """`value` as the code that uses it expects it: an integral float in an integer field becomes an
    int (100.5 stays, for validation to reject)."""
    return int(value) if integer and isinstance(value, float) and value.is_integer() else value


def coerce(obj, table: dict[str, Bound], integer_choices: tuple[str, ...] = ()):
    """`obj` with integral floats in its integer fields (those `table` marks integer, and the
    numeric choices named in `integer_choices`) turned into ints. Call it after validation: every
    value check_number accepts is then exactly the type the code that uses it expects."""
    changes = {}
    for f in fields(obj):
        bound = table.get(f.name)
        v = getattr(obj, f.name)
        c = coerce_number(v, (bound is not None and bound.integer) or f.name in integer_choices)
        if c is not v:
            changes[f.name] = c
    return replace(obj, **changes) if changes else obj
