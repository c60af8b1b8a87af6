"""The shipped data: model configs, GPU datasheets and efficiency profiles.

Data lives in `sim/data/` as JSON with a source for every figure; this module only reads it.
Files are read once and cached, so a panel re-evaluating on every slider move pays nothing here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from .errors import InputError, Issue

DATA_DIR = Path(__file__).parent / "data"


@dataclass(frozen=True)
class GPU:
    """One accelerator's datasheet figures (bytes, bytes/s, FLOP/s)."""

    id: str
    name: str
    memory_bytes: float  # nominal capacity: what the textbook accounting uses
    memory_reported_bytes: float  # total the driver reports: what vLLM and SGLang see
    hbm_bandwidth_bytes_per_s: float
    bf16_dense_flops: float
    fp8_dense_flops: float | None
    interconnect_bytes_per_s: float  # GPU to GPU, each direction
    host_link_bytes_per_s: float  # PCIe to host memory, each direction
    fp4_dense_flops: float | None = None  # FP4 tensor cores (Blackwell, MI355X); absent from gpus.json: none
    # GPUs the interconnect joins (an NVLink bridge: 2); a tensor-parallel group larger than this
    # all-reduces over PCIe (host_link_bytes_per_s). None: every GPU of a node (HGX, NVL72, PCIe-only cards).
    interconnect_gpus: int | None = None

    def link_bytes_per_s(self, ranks: int) -> float:
        """Per-direction bandwidth of the slowest link a ring over `ranks` GPUs crosses."""
        if self.interconnect_gpus is not None and ranks > self.interconnect_gpus:
            return min(self.interconnect_bytes_per_s, self.host_link_bytes_per_s)
        return self.interconnect_bytes_per_s

    def with_memory_bytes(self, memory_bytes: float) -> GPU:
        """The same GPU with a different capacity (the `--gpu-memory-gib` override). The driver
        is assumed to report the same fraction of the nominal figure as on the stock card (a
        ratio, not a difference: for H200 and MI300X the vendors' "GB" is nearer GiB, so the
        reported total exceeds 141e9 or 192e9 bytes)."""
        ratio = self.memory_reported_bytes / self.memory_bytes
        return GPU(**{**self.__dict__, "memory_bytes": memory_bytes, "memory_reported_bytes": memory_bytes * ratio})


@cache
def _gpu_table() -> dict[str, GPU]:
    raw = json.loads((DATA_DIR / "gpus.json").read_text())
    fields = GPU.__dataclass_fields__
    return {g["id"]: GPU(**{k: g[k] for k in fields if k in g}) for g in raw["gpus"]}


@cache
def _model_table() -> dict[str, dict]:
    table = {}
    for path in sorted((DATA_DIR / "models").glob("*.json")):
        entry = json.loads(path.read_text())
        table[entry["kvlab"]["id"]] = entry
    return table


def gpu_ids() -> list[str]:
    return list(_gpu_table())


def model_ids() -> list[str]:
    return list(_model_table())


def gpu(gpu_id: str) -> GPU:
    table = _gpu_table()
    if gpu_id not in table:
        raise InputError(Issue("gpu", f"unknown GPU {str(gpu_id)[:40]!r}; choose one of {', '.join(table)}"))
    return table[gpu_id]


def model_entry(model_id: str) -> dict:
    """{"kvlab": metadata, "config": config.json} for a catalog model."""
    table = _model_table()
    if model_id not in table:
        raise InputError(Issue("model", f"unknown model {str(model_id)[:40]!r}; choose one of {', '.join(table)}"))
    return table[model_id]


def model_name(model_id: str) -> str:
    return model_entry(model_id)["kvlab"]["name"]


# Name parts that mark a variant of the same architecture (an instruction-tuned or repackaged
# release), left out when a benchmark's model id is matched to the catalog.
_VARIANT_PARTS = frozenset(("instruct", "chat", "it", "hf", "base"))


def _repo_key(name: str) -> str:
    parts = str(name).rstrip("/").rsplit("/", 1)[-1].lower().removeprefix("meta-").split("-")
    return "-".join(p for p in parts if p not in _VARIANT_PARTS)


def model_for_repo(repo: str) -> str | None:
    """The catalog model whose Hugging Face repository is `repo` (a benchmark's model id, or a
    local path ending in the repository's name), matched on the name after the last '/' without
    case, a leading "Meta-", or an Instruct / Chat / it / hf / Base part; None if none matches."""
    wanted = _repo_key(repo)
    for model_id, entry in _model_table().items():
        if _repo_key(entry["kvlab"].get("hf_repo", "")) == wanted or model_id == wanted:
            return model_id
    return None
