"""Time-domain engine runs that CPython and Pyodide must reproduce identically (sim/engine).

Each case is a named preset plus changes (`EngineConfig.with_` accepts nested field names). Runs
are shortened to a few hundred requests so the whole set takes seconds in Pyodide; together they
cover every preset, scheduling policy, arrival process, both preemption modes, the prefix cache
with a host tier, replicas, disaggregation, and an input error. The engine draws from
random.Random(seed), so identical output also shows the random streams agree across Pythons.
"""

from __future__ import annotations

from kvlab.sim.engine import PRESETS

SHORT = {"num_requests": 400}


def cases() -> list[dict]:
    out = [{"preset": name, "changes": dict(SHORT)} for name in PRESETS]
    out += [
        {"preset": "default", "changes": {**SHORT, "policy": "fcfs"}},
        {"preset": "default", "changes": {**SHORT, "policy": "lanes"}},
        {"preset": "default", "changes": {**SHORT, "arrival": "gamma", "burst_cv": 2.5, "rate_per_s": 12.0}},
        {"preset": "default", "changes": {**SHORT, "arrival": "closed", "clients": 48, "think_time_s": 0.5}},
        {"preset": "seed001-saturation", "changes": {**SHORT, "preemption": "swap", "swap_space_gib": 2.0}},
        {"preset": "default", "changes": {**SHORT, "prefix_tokens": 1024, "prefix_fraction": 0.7, "prefix_groups": 3,
                                          "prompt_min_tokens": 1536, "host_cache_gib": 8.0}},
        {"preset": "default", "changes": {**SHORT, "replicas": 2, "router": "round_robin", "rate_per_s": 12.0}},
        {"preset": "default", "changes": {**SHORT, "disaggregated": True, "prefill_instances": 1, "decode_instances": 2}},
        {"preset": "default", "changes": {**SHORT, "rate_per_s": -1.0}},  # an input error: the message must match too
    ]
    return out
