"""kvlab's simulator: the KV cache, the HBM budget and the roofline of one serving engine.

Standard library only, so the same code runs in CPython and in Pyodide.

    >>> from kvlab.sim import Scenario, evaluate
    >>> r = evaluate(Scenario(model="qwen3-8b", gpu="h100-sxm", prompt_tokens=4096))
    >>> r.max_sequences, r.batch
    (93, 32)
"""

from .architecture import Architecture
from .catalog import GPU, gpu_ids, model_ids
from .errors import InputError, Issue
from .evaluate import evaluate, sweep
from .hf_config import from_config
from .profiles import EfficiencyProfile, load_profile, profile_names
from .resolve import Resolved, clear_caches, resolve
from .result import Result
from .scenario import FIELDS, Scenario

__all__ = [
    "FIELDS",
    "GPU",
    "Architecture",
    "EfficiencyProfile",
    "InputError",
    "Issue",
    "Resolved",
    "Result",
    "Scenario",
    "clear_caches",
    "evaluate",
    "from_config",
    "gpu_ids",
    "load_profile",
    "model_ids",
    "profile_names",
    "resolve",
    "sweep",
]

__version__ = "0.1.0"
