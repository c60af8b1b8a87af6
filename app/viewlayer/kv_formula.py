"""Bytes per token, with the formula written out in this model's own numbers."""

from __future__ import annotations

from . import format as fmt
from . import html

GENERIC = "bytes per token = 2 (K and V) \u00d7 layers \u00d7 kv_heads \u00d7 head_dim \u00d7 bytes per element"
GENERIC_MLA = "bytes per token = layers \u00d7 (latent + rope key) \u00d7 bytes per element"


def view_kv_formula(result) -> dict:
    r = result
    if r is None or not r.ok:
        return {"pane": {"html": f'<div class="kv-formula"><div class="generic">{html.esc(GENERIC)}</div></div>'}}
    s = r.scenario
    filled = r.kv_formula.replace(" x ", " \u00d7 ")
    generic = GENERIC_MLA if r.attention_kind == "MLA" else GENERIC
    context = s["prompt_tokens"] + s["output_tokens"]
    if s["allocation"] == "contiguous":
        per_seq = (f"one sequence reserves its final {context:,} tokens (prompt + output) at admission: "
                   f"{fmt.gib(r.kv_bytes_per_sequence, 2)}")
    elif s["allocation"] == "reserve_max":
        # What sim reserves (admission.held_bytes_per_sequence): max_model_len, else the model's
        # context. Dividing the bytes by bytes per token gave a layer mean for windowed models and
        # counted a draft model's cache as tokens.
        reserved = s.get("max_model_len") or r.context_tokens
        per_seq = (f"one sequence reserves max_model_len ({reserved:,} tokens) at admission, whatever it will use: "
                   f"{fmt.gib(r.kv_bytes_per_sequence, 2)}")
    else:
        per_seq = (f"a paged sequence holds blocks of {s['block_size_tokens']} tokens as it grows: "
                   f"{fmt.gib(r.kv_bytes_per_sequence, 2)} on average over its {context:,} tokens")
    if r.state_bytes_per_sequence:
        per_seq += (f", of which {fmt.mib(r.state_bytes_per_sequence)} is the recurrent state of its linear-attention "
                    "or Mamba layers, the same at every length")
    return {"pane": {"html": (
        '<div class="kv-formula">'
        f'<div class="model" data-kv="model_name">{html.esc(r.model_name)} \u00b7 {html.esc(r.attention_kind)}</div>'
        f'<div class="generic">{html.esc(generic)}</div>'
        f'<div class="filled" data-kv="kv_formula">{html.esc(filled)} = {html.esc(fmt.per_token_bytes(r.kv_bytes_per_token))}</div>'
        f'<div class="per-seq" data-kv="kv_per_sequence">{html.esc(per_seq)}</div>'
        '</div>')}}
