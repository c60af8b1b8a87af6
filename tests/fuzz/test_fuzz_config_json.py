"""Fuzz pasted config.json: any text is a model sim reads, or issues naming fields; never a crash."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st
from kvlab.app.viewlayer.config_paste import parse_config_text
from kvlab.sim import Scenario, evaluate

from .support import batches, check_each, finite_numbers, fuzz, hostile

BASE = {"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
        "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256, "max_position_embeddings": 8192,
        "torch_dtype": "bfloat16", "head_dim": 128}
KEYS = [*BASE, "sliding_window", "layer_types", "num_experts", "num_experts_per_tok", "moe_intermediate_size",
        "kv_lora_rank", "qk_rope_head_dim", "text_config", "quantization_config", "tie_word_embeddings"]
field_value = st.one_of(hostile, st.integers(0, 70_000), st.lists(st.sampled_from(["full_attention", "sliding_attention"]),
                                                                  max_size=40))
mutated = st.dictionaries(st.sampled_from(KEYS), field_value, max_size=6).map(lambda d: {**BASE, **d})


def _text(obj) -> str:
    try:
        return json.dumps(obj)
    except (ValueError, TypeError, OverflowError):
        return "{"


texts = st.one_of(mutated.map(_text), st.text(max_size=200), st.just("[" * 5000), st.just('{"a": ' + "9" * 5000 + "}"))


@fuzz("config_json")
@given(batches(texts))
def test_pasted_config(batch):
    check_each(batch, _check_text)


def _check_text(text):
    config, issues = parse_config_text(text)
    assert all(isinstance(i["message"], str) for i in issues)
    if config is None:
        assert issues
        return
    r = evaluate(Scenario(config=config))
    if r.ok:
        assert not finite_numbers(r.to_dict())
        assert r.kv_bytes_per_token > 0
