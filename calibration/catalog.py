"""Reads what the suite needs from sim's data files: datasheet peaks and model shapes.

The JSON is read directly (not through `sim`) so the two packages stay independent; the files
are the contract. Datasheet peaks are the denominators of every efficiency in a profile.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from pathlib import Path

from kvlab.sim.hf_config import from_config
from kvlab.sim.profile_schema import KNOWN_GPU_IDS  # noqa: F401  (GPU ids a profile may name; one list, in sim)

SIM_DATA_DIR = Path(__file__).resolve().parent.parent / "sim" / "data"
PROFILE_DIR = SIM_DATA_DIR / "profiles"


class CatalogError(ValueError):
    """A GPU or model the suite needs is missing from sim/data."""


@dataclass(frozen=True)
class Datasheet:
    """Nameplate figures of one GPU (bytes/s, FLOP/s), from sim/data/gpus.json."""

    id: str
    name: str
    hbm_bandwidth_bytes_per_s: float
    bf16_dense_flops: float
    fp8_dense_flops: float | None
    interconnect_bytes_per_s: float  # each direction


@dataclass(frozen=True)
class GemmShape:
    """A weight GEMM y[M, N] = x[M, K] @ W[K, N]; M (tokens in the step) is swept."""

    name: str
    k: int
    n: int


@dataclass(frozen=True)
class ModelShapes:
    id: str
    hidden_size: int
    intermediate_size: int
    vocab_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    moe: bool = False  # routed experts: the MLP GEMMs are per expert, at a fraction of the tokens
    mla: bool = False  # multi-head latent attention (DeepSeek): other attention projections
    # recurrent-state layers (Gated DeltaNet, Mamba): their projections are not the plan's
    # attention and MLP shapes, so the full plan does not measure such a model yet
    recurrent: bool = False
    # MoE (config.json: num_experts / num_local_experts / n_routed_experts, num_experts_per_tok,
    # moe_intermediate_size, n_shared_experts); 0 for a dense model
    num_experts: int = 0
    experts_per_token: int = 0
    moe_intermediate_size: int = 0
    shared_experts: int = 0
    # MLA (config.json: kv_lora_rank, qk_rope_head_dim, qk_nope_head_dim, v_head_dim, q_lora_rank)
    kv_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    qk_nope_head_dim: int = 0
    v_head_dim: int = 0
    q_lora_rank: int = 0

    def projection_shapes(self) -> list[GemmShape]:
        """The weight GEMMs an engine runs per layer, fused as vLLM and SGLang fuse them, plus the
        LM head once per step (no tensor parallelism):
            qkv      hidden -> (q_heads + 2 kv_heads) x head_dim   (QKVParallelLinear)
            o        q_heads x head_dim -> hidden
            gate_up  hidden -> 2 x intermediate                    (MergedColumnParallelLinear)
            down     intermediate -> hidden
            lm_head  hidden -> vocab
        Qwen3-8B: qkv 4096x6144, o 4096x4096, gate_up 4096x24576, down 12288x4096, lm_head 4096x151936.
        Dense models only: an MoE model's expert GEMMs run at their own token counts and a MLA
        model's projections differ; callers skip those models and say so."""
        h, q_dim, kv_dim = self.hidden_size, self.num_attention_heads * self.head_dim, self.num_key_value_heads * self.head_dim
        return [
            GemmShape("qkv", h, q_dim + 2 * kv_dim),
            GemmShape("o", q_dim, h),
            GemmShape("gate_up", h, 2 * self.intermediate_size),
            GemmShape("down", self.intermediate_size, h),
            GemmShape("lm_head", h, self.vocab_size),
        ]

    def attention_shapes(self) -> list[GemmShape]:
        """The attention projections of one layer (what the MoE benchmark times beside the experts).
        GQA: qkv and o as in projection_shapes. MLA (DeepSeek-V3, as vLLM runs it): the fused
        down-projection hidden -> q_lora_rank + kv_lora_rank + qk_rope_head_dim ("qkv_a"), the
        query up-projection q_lora_rank -> heads x (nope + rope) ("q_b"), and o: heads x v_head_dim
        -> hidden. The absorbed per-head W_UK / W_UV products are batched GEMMs, not timed here."""
        h = self.hidden_size
        if self.mla:
            qk = self.qk_nope_head_dim + self.qk_rope_head_dim
            shapes = [GemmShape("qkv_a", h, (self.q_lora_rank or 0) + self.kv_lora_rank + self.qk_rope_head_dim)]
            if self.q_lora_rank:
                shapes.append(GemmShape("q_b", self.q_lora_rank, self.num_attention_heads * qk))
            return shapes + [GemmShape("o", self.num_attention_heads * self.v_head_dim, h)]
        return self.projection_shapes()[:2]

    def tp_shapes(self, tp: int) -> list[GemmShape]:
        """The four projection GEMMs of one rank under tensor parallelism `tp` (Megatron / vLLM):
        qkv and gate_up split by columns (QKVParallelLinear keeps at least one KV head per rank,
        replicating KV heads when tp > kv_heads), o and down split by rows (RowParallelLinear, whose
        partial sums the all-reduce adds). Qwen3-8B, tp 4: qkv 4096x1536, o 1024x4096,
        gate_up 4096x6144, down 3072x4096."""
        h = self.hidden_size
        q_dim = self.num_attention_heads // tp * self.head_dim
        kv_dim = max(1, self.num_key_value_heads // tp) * self.head_dim
        return [
            GemmShape("qkv", h, q_dim + 2 * kv_dim),
            GemmShape("o", q_dim, h),
            GemmShape("gate_up", h, 2 * self.intermediate_size // tp),
            GemmShape("down", self.intermediate_size // tp, h),
        ]

    def gemm_shapes(self) -> list[GemmShape]:
        """The three weight shapes a decoder step runs: attention projections (hidden x hidden),
        MLP (hidden x intermediate) and the LM head (hidden x vocab)."""
        h = self.hidden_size
        return [
            GemmShape("hidden x hidden", h, h),
            GemmShape("hidden x intermediate", h, self.intermediate_size),
            GemmShape("hidden x vocab", h, self.vocab_size),
        ]

    def scaled_down(self, divisor: int) -> ModelShapes:
        """The same model with every width divided by `divisor` (the CPU pipeline check's sizes);
        head counts, expert counts and layer count are kept so the per-layer weights of the fit do
        not change."""
        def div(x: int, floor: int = 8) -> int:
            return max(floor, x // divisor) if x else 0

        return replace(
            self,
            id=f"{self.id}/{divisor}",
            hidden_size=div(self.hidden_size),
            intermediate_size=div(self.intermediate_size),
            vocab_size=div(self.vocab_size),
            head_dim=div(self.head_dim),
            moe_intermediate_size=div(self.moe_intermediate_size),
            kv_lora_rank=div(self.kv_lora_rank),
            qk_rope_head_dim=div(self.qk_rope_head_dim, 2),
            qk_nope_head_dim=div(self.qk_nope_head_dim),
            v_head_dim=div(self.v_head_dim),
            q_lora_rank=div(self.q_lora_rank),
        )

    def same_shapes(self, other: ModelShapes) -> bool:
        """Every measured width equal (DeepSeek-R1 has DeepSeek-V3's shapes): one curve serves both."""
        return replace(other, id=self.id) == self


def load_datasheets() -> dict[str, Datasheet]:
    raw = json.loads((SIM_DATA_DIR / "gpus.json").read_text())
    out = {}
    for g in raw["gpus"]:
        out[g["id"]] = Datasheet(
            id=g["id"],
            name=g["name"],
            hbm_bandwidth_bytes_per_s=float(g["hbm_bandwidth_bytes_per_s"]),
            bf16_dense_flops=float(g["bf16_dense_flops"]),
            fp8_dense_flops=None if g.get("fp8_dense_flops") is None else float(g["fp8_dense_flops"]),
            interconnect_bytes_per_s=float(g["interconnect_bytes_per_s"]),
        )
    return out


def datasheet(gpu_id: str) -> Datasheet:
    table = load_datasheets()
    if gpu_id not in table:
        raise CatalogError(
            f"GPU {gpu_id!r} is not in sim/data/gpus.json, whose datasheet peaks are the denominators "
            f"of every efficiency; add it there first (listed: {', '.join(table)})"
        )
    return table[gpu_id]


def identify_gpu(device_name: str) -> str | None:
    """The catalog id for a CUDA device name, or None when the name is not one kvlab knows.

    Examples: "NVIDIA H200" -> h200; "NVIDIA H100 80GB HBM3" -> h100-sxm; "NVIDIA H100 PCIe" ->
    h100-pcie; "NVIDIA A100-SXM4-80GB" -> a100-80; "NVIDIA L40S" -> l40s; "NVIDIA B300 SXM6 AC" -> b300;
    "NVIDIA GB200" -> gb200 (not b200: the Grace-Blackwell bin has its own peaks);
    "NVIDIA RTX PRO 6000 Blackwell Server Edition" -> rtx-pro-6000.
    """
    name = device_name.upper()
    tokens = set(re.split(r"[^A-Z0-9]+", name))
    if "MIG" in tokens:
        return None  # a MIG slice ("NVIDIA H200 MIG 3g.71gb") is a fraction of the GPU, not the catalog's GPU
    if "GH200" in name:
        return None  # Grace Hopper superchip: different HBM and NVLink-C2C, not in the catalog
    # Grace-Blackwell before the bare Blackwell names: "GB200" contains "B200", "GB300" contains "B300"
    if "GB300" in tokens:
        return "gb300"  # also what a DGX Station's GB300 calls itself (252 GB there); pass --gpu to tell them apart
    if "GB200" in tokens:
        return "gb200"
    if "B300" in tokens:
        return "b300"
    if "H200" in name:
        return None if "NVL" in tokens else "h200"
    if "H20" in tokens:
        return "h20"  # the 96 GB and the 141 GB H20 share the peaks the suite divides by
    if "H100" in name:
        if "NVL" in tokens:
            return None  # H100 NVL: 94 GB, 3.9 TB/s, not in the catalog
        return "h100-pcie" if "PCIE" in tokens else "h100-sxm"
    if "A100" in name:
        if "80GB" in name:
            return "a100-pcie" if "PCIE" in name else "a100-80"
        if "40GB" in name:
            return "a100-40"
        return None
    if "B200" in name:
        return "b200"
    if "L40S" in tokens:
        return "l40s"
    if "L4" in tokens:
        return "l4"
    if "A10" in tokens:
        return "a10"
    if "4090" in tokens:
        return "rtx-4090"
    if {"RTX", "PRO", "6000"} <= tokens:
        # Only the Server Edition: the Workstation Editions have other clocks and 1,792 GB/s
        return "rtx-pro-6000" if "SERVER" in tokens else None
    if "MI300X" in name:
        return "mi300x"
    if "MI325X" in name:
        return "mi325x"
    if "MI355X" in name:
        return "mi355x"
    return None


def load_models() -> dict[str, ModelShapes]:
    models = {}
    for path in sorted((SIM_DATA_DIR / "models").glob("*.json")):
        entry = json.loads(path.read_text())
        cfg = entry["config"]
        model_id = entry.get("kvlab", {}).get("id", path.stem)
        head_dim = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
        experts = int(next((cfg[k] for k in ("num_experts", "num_local_experts", "n_routed_experts") if cfg.get(k)), 0))
        models[model_id] = ModelShapes(
            id=model_id,
            hidden_size=int(cfg["hidden_size"]),
            intermediate_size=int(cfg["intermediate_size"]),
            vocab_size=int(cfg["vocab_size"]),
            num_hidden_layers=int(cfg["num_hidden_layers"]),
            num_attention_heads=int(cfg["num_attention_heads"]),
            num_key_value_heads=int(cfg.get("num_key_value_heads") or cfg["num_attention_heads"]),
            head_dim=int(head_dim),
            moe=bool(experts),
            mla=bool(cfg.get("kv_lora_rank")),
            recurrent=from_config(cfg, model_id).state_bytes_per_sequence() > 0,  # sim's reading of the layers
            num_experts=experts,
            experts_per_token=int(cfg.get("num_experts_per_tok") or 0) if experts else 0,
            # Mixtral's experts are full-width MLPs (no moe_intermediate_size)
            moe_intermediate_size=int(cfg.get("moe_intermediate_size") or cfg["intermediate_size"]) if experts else 0,
            shared_experts=int(cfg.get("n_shared_experts") or 0),
            kv_lora_rank=int(cfg.get("kv_lora_rank") or 0),
            qk_rope_head_dim=int(cfg.get("qk_rope_head_dim") or 0),
            qk_nope_head_dim=int(cfg.get("qk_nope_head_dim") or 0),
            v_head_dim=int(cfg.get("v_head_dim") or 0),
            q_lora_rank=int(cfg.get("q_lora_rank") or 0),
        )
    return models


def model(model_id: str) -> ModelShapes:
    table = load_models()
    if model_id not in table:
        raise CatalogError(f"unknown model {model_id!r}; sim/data/models has {', '.join(table)}")
    return table[model_id]
