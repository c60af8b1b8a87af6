"""kvlab's time-domain serving engine: a discrete-event simulation of continuous batching.

Standard library only (it runs in Pyodide), deterministic for a given seed. The step time of every
batch comes from sim.roofline.step_cost, the KV pool from sim's HBM budget.

    >>> from kvlab.sim.engine import EngineConfig, simulate
    >>> r = simulate(EngineConfig().with_(rate_per_s=2.0, num_requests=200, seed=1))
    >>> r.completed
    200
"""

from .config import (
    ADMISSIONS,
    ARRIVALS,
    BLOCK_TABLES,
    ENGINE_FIELDS,
    LENGTH_DISTS,
    POLICIES,
    POLICY_LABELS,
    PREEMPTIONS,
    ROUTERS,
    TOKENIZERS,
    Cluster,
    EngineConfig,
    KVManagement,
    Scheduling,
    TraceRequest,
    Workload,
    validate_config,
)
from .presets import PRESETS, preset
from .result import EngineResult, Percentiles
from .run import collect, prepare, simulate
from .simulation import Simulation
from .trace import format_trace, parse_trace
from .workload import Request, generate, seed000_workload

__all__ = [
    "ADMISSIONS", "ARRIVALS", "BLOCK_TABLES", "ENGINE_FIELDS", "LENGTH_DISTS", "POLICIES", "POLICY_LABELS", "PREEMPTIONS",
    "PRESETS", "ROUTERS", "TOKENIZERS", "Cluster", "EngineConfig", "EngineResult", "KVManagement", "Percentiles",
    "Request", "Scheduling", "Simulation", "TraceRequest", "Workload", "collect", "format_trace", "generate",
    "parse_trace", "prepare", "preset", "seed000_workload", "simulate", "validate_config",
]
