"""The speculative drafts that are not separate models: an EAGLE head and a model's own MTP layers.

`Scenario.spec_method` says where the proposals come from (vLLM's `speculative_config` "method"):

- ``draft``: a separate small model, `spec_draft_model` (unset: no speculative decoding);
- ``eagle``: an EAGLE head trained for the target (Li et al. 2024, arXiv:2401.15077): one decoder
  layer of the target's width fed the target's last hidden state and the next token's embedding
  through an fc layer of 2 x hidden -> hidden. kvlab builds the head from the target's own
  dimensions (no catalog entry describes one): the target's attention (MLA kept; a sliding window
  or linear attention becomes full attention, as a head's one layer attends to the whole context),
  a dense MLP of the target's `intermediate_size`. The embedding and the lm_head are the target's:
  vLLM's EAGLE proposer shares them, so only the layer and the fc join the budget. EAGLE-3 heads
  differ (an fc of 3 x hidden and a smaller lm_head of their own): not modelled apart;
- ``mtp``: the target's own multi-token-prediction layers, counted in its config.json as
  `num_nextn_predict_layers` (DeepSeek-V3/R1: 1) or `mtp_num_hidden_layers` (Qwen3-Next, Qwen3.5).
  Each is a full decoder layer of the target (DeepSeek-V3: MLA and the routed experts) behind an
  fc (eh_proj, 2 x hidden -> hidden); vLLM's docs: "MTP is a speculative decoding method where the
  target model includes native multi-token prediction capability" and "MTP only works for model
  families that support MTP". A model whose config has no MTP layers is refused by name.

A head's step is one pass through its layer(s) and the lm_head, costed by the same roofline as any
step (sim.speculative.draft_s); its cache is its own layer(s)' KV beside the target's.
"""

from __future__ import annotations

from dataclasses import replace

from .architecture import Architecture
from .errors import InputError, Issue

SPEC_METHODS = ("draft", "eagle", "mtp")
MTP_CONFIG_KEYS = ("num_nextn_predict_layers", "mtp_num_hidden_layers")


def mtp_layers(config: dict) -> int:
    """MTP layers a config.json declares (0: none). A value that is not a small whole number counts as none."""
    for key in MTP_CONFIG_KEYS:
        n = config.get(key)
        if isinstance(n, int) and not isinstance(n, bool) and 0 < n <= 16:
            return n
    return 0


def head_architecture(target: Architecture, method: str, config: dict) -> Architecture:
    """The architecture of the head `method` ("eagle" or "mtp") runs beside `target`, whose
    config.json is `config`. Raises InputError naming spec_method for a model with no MTP layers."""
    if method == "mtp":
        layers = mtp_layers(config)
        if not layers:
            raise InputError(Issue("spec_method", f"mtp needs a model whose config.json has MTP layers "
                                                  f"({' or '.join(MTP_CONFIG_KEYS)}); {target.name} has none: "
                                                  f"choose eagle or a draft model"))
        moe = bool(target.moe_layers) and target.moe_layers[-1]  # as the model's last layers (DeepSeek-V3: MoE)
        name = f"{target.name} MTP layer{'s' if layers > 1 else ''}"
    else:
        layers, moe, name = 1, False, f"EAGLE head for {target.name}"
    return replace(target, name=name, num_layers=layers, moe_layers=(moe,) * layers if target.moe else (),
                   moe=target.moe if moe else None, sliding_window_tokens=0, sliding_layers=(), linear=None,
                   linear_layers=())


def head_params(head: Architecture) -> float:
    """Parameters a head adds to the target's: its layers and its fc (2 x hidden -> hidden), not
    the embedding and lm_head it shares with the target."""
    return head.params_total - head.params_embedding + 2 * head.hidden_size * head.hidden_size
