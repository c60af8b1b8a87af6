"""A2. Architecture sets the bill: MHA, GQA, MQA, MLA."""

from __future__ import annotations

from kvlab.app.viewlayer.cache_grid import cache_grid_html, grid_model, slice_label
from kvlab.app.viewlayer.format import per_token_bytes
from kvlab.sim import Scenario, evaluate
from kvlab.sim.catalog import model_entry
from kvlab.sim.resolve import resolve_architecture

from .. import course
from .model import Choice, Lesson, LiveView, Prediction, Step, TryThis, equal, keyed, near
from .runs import BASE, kib, run

MQA_NAME = "Qwen3-8B with one KV head"


def one_kv_head() -> Scenario:
    """Qwen3-8B's own config.json with a single KV head, as a user would paste it: the catalog holds
    no multi-query model, and sim reads this one like any other."""
    config = {**model_entry("qwen3-8b")["config"], "num_key_value_heads": 1, "_name_or_path": MQA_NAME}
    return BASE.with_(config=config)


def cache_grid(scenarios: list[Scenario]) -> str:
    """The four attention kinds side by side, each panel from sim's architecture and bytes per token."""
    models = [grid_model(resolve_architecture(s), evaluate(s).kv_bytes_per_token) for s in scenarios]
    mha, gqa, mqa, mla = models
    caption = (f"Drawn: {slice_label(gqa)} of Qwen3-8B, and as much of DeepSeek-V3. Per layer, multi-head attention "
               f"caches {mha.kv_heads} KV heads, grouped-query {gqa.kv_heads}, multi-query {mqa.kv_heads}: "
               f"{per_token_bytes(mha.bytes_per_token)}, {per_token_bytes(gqa.bytes_per_token)} and "
               f"{per_token_bytes(mqa.bytes_per_token)} per token. MLA caches one latent per layer for all {mla.q_heads} "
               f"heads: {per_token_bytes(mla.bytes_per_token)} over "
               f"{mla.layers} layers.")
    return cache_grid_html(models, caption)


def build() -> Lesson:
    gqa, mha = run(), run(force_mha=True)
    mqa = evaluate(one_kv_head())
    big_mha = run(model="qwen3-32b", force_mha=True)
    mla, llama = run(model="deepseek-v3"), run(model="llama-3.1-70b")

    q1 = Prediction(
        key="a2-mha",
        question=(f"{gqa.model_name} has 32 query heads sharing 8 KV heads (grouped-query attention); {gqa.max_sequences} "
                  "requests of 4k fit on an H100. Give every query head its own keys and values (multi-head attention), "
                  "same everything else. How many fit?"),
        choices=(
            Choice("about 90", "The weights grow a little, so one might expect a little less. The cache per token grows "
                               "fourfold."),
            Choice("about 45", "Half would mean twice the cache; 32 heads instead of 8 is four times."),
            Choice("about 22", "Four times the KV heads, four times the bytes per token, a quarter of the requests."),
            Choice("none", "It still fits; only the 32B model runs out entirely."),
        ),
        **keyed(mha.max_sequences, [(1, "none"), (30, "about 22"), (65, "about 45")], "about 90"),
        reveal=(f"**{mha.max_sequences}**. Bytes per token go from {kib(gqa.kv_bytes_per_token)} to {kib(mha.kv_bytes_per_token)}; "
                f"parameters only from {gqa.params_total / 1e9:.2f}B to {mha.params_total / 1e9:.2f}B."),
        gives_away=(f"**{mha.max_sequences}**",),
    )
    s1 = f"""
Attention variants differ in how many key/value heads they keep. **MHA** keeps one per query head; **GQA**
shares each KV head among a group of query heads; **MQA** keeps a single KV head for all. The cache scales
with KV heads, while the projection weights that make K and V are a small part of the model, so the
architecture changes the cache bill far more than the model size: here {kib(mha.kv_bytes_per_token)} against
{kib(gqa.kv_bytes_per_token)} per token, for {mha.params_total / gqa.params_total - 1:.0%} more parameters. Forced to
MHA, Qwen3-32B cannot hold even one 4k request ({big_mha.max_sequences} fit).
"""
    step1 = Step(q1, s1, (
        equal("Qwen3-8B forced to MHA fits 22 at 4k", mha.max_sequences, 22),
        equal("forced MHA caches 576 KiB per token", mha.kv_bytes_per_token, 576 * 1024),
        near("forced MHA has 9.10B parameters", mha.params_total / 1e9, 9.10, 0.005),
        equal("Qwen3-32B forced to MHA fits no 4k request", big_mha.max_sequences, 0),
    ), LiveView("steady", ("kv_formula", "fit_curve"), {"force_mha": True}, ("force_mha", "model"),
                "The formula and the fit curve with multi-head attention forced."),
        (TryThis("Tick 'Force multi-head attention' and watch the fit curve drop.", {}),))

    q2 = Prediction(
        key="a2-mla",
        question=(f"DeepSeek-V3 is a far larger model than Llama-3.1-70B ({mla.params_total / 1e9:.0f}B against "
                  f"{llama.params_total / 1e9:.0f}B parameters) with 128 attention heads. Llama-3.1-70B caches "
                  f"{kib(llama.kv_bytes_per_token)} per token. DeepSeek-V3 caches..."),
        choices=(
            Choice("several MiB", "Its 128 heads would cost that under MHA. MLA does not cache per-head keys and values."),
            Choice("about the same", "Size and heads suggest more, not the same; the real figure is much smaller."),
            Choice("about a fifth as much", "Multi-head latent attention caches one compressed vector per layer, "
                                            "shared by all heads, and rebuilds keys and values from it."),
        ),
        **keyed(mla.kv_bytes_per_token / llama.kv_bytes_per_token, [(0.5, "about a fifth as much"),
                                                                          (2, "about the same")], "several MiB"),
        reveal=f"**{kib(mla.kv_bytes_per_token)}** per token: `{mla.kv_formula}`.",
        gives_away=(f"**{kib(mla.kv_bytes_per_token)}**",),
    )
    s2 = f"""
**MLA** (multi-head latent attention) stores, per layer, one latent vector plus a small positional key, and
projects keys and values for every head from it at attention time. The cache is then independent of the
head count: {kib(mla.kv_bytes_per_token)} per token for DeepSeek-V3 and its 128 heads. It is not split across
tensor-parallel ranks: each rank keeps the whole latent.
"""
    step2 = Step(q2, s2, (
        near("DeepSeek-V3 caches about 68.6 KiB per token", mla.kv_bytes_per_token / 1024, 68.6, 0.01),
        equal("DeepSeek-V3 uses MLA", mla.attention_kind, "MLA"),
        equal("one KV head for all 32 query heads is multi-query attention", mqa.attention_kind, "MQA"),
        equal("one KV head caches a quarter of MHA's bytes over 8 (an eighth of GQA's)",
              mqa.kv_bytes_per_token * 8, gqa.kv_bytes_per_token),
    ), LiveView("steady", ("kv_formula",), {"model": "deepseek-v3"}, ("model",), "DeepSeek-V3's cache formula."),
        (TryThis("Choose DeepSeek-V3, then Llama-3.1-70B, and compare bytes per token.", {"model": "llama-3.1-70b"}),),
        figure=cache_grid([BASE.with_(force_mha=True), BASE, one_kv_head(), BASE.with_(model="deepseek-v3")]))
    return Lesson(
        **course.header("A2"),
        objective="Rank attention variants by cache per token, and see that the weights barely change.",
        prerequisites=("A1",),
        setup="Two models of similar size can differ several times in what each token costs. The heads decide.",
        steps=(step1, step2),
        recap=("MHA > GQA > MQA in cache per token; the ratio is query heads per KV head.",
               "MLA caches one latent per layer, independent of heads.",
               "These choices move the cache far more than the parameter count."),
        not_captured=("Quality differences between attention variants are outside the simulator.",),
        ideas=("mha-gqa-mqa", "mla-latent", "weights-barely-change"),
    )
