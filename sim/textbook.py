"""The reference ("textbook") model of design.md section 2, written out on one page.

This is the seed panel's model with nothing else in it: one dense decoder on one GPU, contiguous
allocation, the textbook profile's flat fractions (80% of the HBM bandwidth, 55% of the BF16
peak), no engine. It reads a Hugging Face config.json and a GPU's datasheet figures itself and
shares no formula with the rest of sim, so tests use it as a differential oracle: where both
apply, `evaluate(Scenario(engine="textbook", profile="textbook", ...))` must agree with it
(tests/sim/test_textbook_oracle.py). A student can read it in one sitting.

The one figure section 2 leaves to the implementation is the activation reserve ("derive it from
the forward pass the scheduler may launch"); it is an argument here.
"""

from __future__ import annotations

from dataclasses import dataclass

GIB = 2**30
BANDWIDTH_FRACTION = 0.80  # achieved share of the datasheet HBM bandwidth
COMPUTE_FRACTION = 0.55  # achieved share of the datasheet dense BF16 peak
QK_NORM_TYPES = ("qwen3",)  # model types with per-head RMSNorms on q and k (2 x head_dim per layer)


@dataclass(frozen=True)
class Textbook:
    kv_bytes_per_token: float
    params: float
    weight_bytes: float
    kv_pool_bytes: float
    bytes_per_sequence: float
    max_sequences: int
    batch: int
    decode_step_s: float | None  # ITL; None when not one sequence fits
    tokens_per_s: float
    ttft_s: float
    prefill_bound: str
    decode_bound: str | None


def params_of(cfg: dict) -> float:
    """Parameters counted from config.json: embeddings (twice unless tied), q/k/v/o, q/k norms,
    the gated MLP (3 x hidden x intermediate), two RMSNorms per layer, the final norm."""
    h, layers, v = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["vocab_size"]
    q_heads = cfg["num_attention_heads"]
    kv_heads = cfg.get("num_key_value_heads", q_heads)
    d = cfg.get("head_dim") or h // q_heads
    attention = h * q_heads * d + 2 * h * kv_heads * d + q_heads * d * h
    if cfg.get("model_type") in QK_NORM_TYPES:
        attention += 2 * d
    per_layer = attention + 3 * h * cfg["intermediate_size"] + 2 * h
    embeddings = v * h * (1 if cfg.get("tie_word_embeddings") else 2)
    return embeddings + layers * per_layer + h


def kv_bytes_per_token(cfg: dict, bytes_per_element: float) -> float:
    """2 (K and V) x layers x kv_heads x head_dim x bytes per element."""
    q_heads = cfg["num_attention_heads"]
    d = cfg.get("head_dim") or cfg["hidden_size"] // q_heads
    return 2 * cfg["num_hidden_layers"] * cfg.get("num_key_value_heads", q_heads) * d * bytes_per_element


def textbook(cfg: dict, *, capacity_bytes: float, bandwidth_bytes_per_s: float, peak_flops: float,
             activation_reserve_bytes: float, prompt_tokens: int = 4096, output_tokens: int = 256,
             concurrency: int = 32, kv_bytes_per_element: float = 2.0, weight_bytes_per_param: float = 2.0,
             gpu_memory_utilization: float = 0.90) -> Textbook:
    bandwidth = bandwidth_bytes_per_s * BANDWIDTH_FRACTION
    compute = peak_flops * COMPUTE_FRACTION
    params = params_of(cfg)
    weights = params * weight_bytes_per_param
    # HBM fill order: the usable share, minus the weights, minus the activation reserve: the rest is the pool.
    pool = max(gpu_memory_utilization * capacity_bytes - weights - activation_reserve_bytes, 0.0)
    per_token = kv_bytes_per_token(cfg, kv_bytes_per_element)
    per_sequence = (prompt_tokens + output_tokens) * per_token  # contiguous: the final length, from admission
    fit = int(pool // per_sequence)
    batch = min(concurrency, fit)
    # Prefill: 2 x params x n plus the causal attention term; weights read once.
    layers, q_heads = cfg["num_hidden_layers"], cfg["num_attention_heads"]
    d = cfg.get("head_dim") or cfg["hidden_size"] // q_heads
    n = prompt_tokens
    prefill_compute = (2 * params * n + 2 * layers * q_heads * d * n * n) / compute
    prefill_memory = weights / bandwidth
    step = decode_bound = None
    if batch > 0:
        decode_memory = (weights + batch * per_sequence) / bandwidth
        decode_compute = 2 * params * batch / compute
        step = max(decode_memory, decode_compute)
        decode_bound = "compute" if decode_compute > decode_memory else "memory"
    return Textbook(
        kv_bytes_per_token=per_token, params=params, weight_bytes=weights, kv_pool_bytes=pool,
        bytes_per_sequence=per_sequence, max_sequences=fit, batch=batch, decode_step_s=step,
        tokens_per_s=batch / step if step else 0.0, ttft_s=max(prefill_compute, prefill_memory),
        prefill_bound="compute" if prefill_compute > prefill_memory else "memory", decode_bound=decode_bound,
    )
