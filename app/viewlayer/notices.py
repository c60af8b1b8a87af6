"""Everything the student should read before the numbers: ignored link values, input errors,
and capacity problems (weights that do not fit, a request longer than the pool)."""

from __future__ import annotations

from . import html, readouts

EMPTY_CONFIG = "is empty"


def view_notices(result, issues=(), url_notices=(), link_note: str = "") -> dict:
    parts = []
    if url_notices:
        parts.append(html.notice("warn", "Some settings in the link were ignored; the rest were kept.",
                                 list(url_notices), "url_notices"))
    issues = list(issues)
    if len(issues) == 1 and issues[0]["field"] == "config" and issues[0]["message"].startswith(EMPTY_CONFIG):
        parts.append(html.notice("info", "Paste a Hugging Face config.json in the sidebar.",
                                 ["Its num_hidden_layers, num_key_value_heads, head_dim and the MLP sizes "
                                  "decide everything shown here."], "config_prompt"))
    elif issues:
        parts.append(html.notice("error", "This input cannot be evaluated; the other settings are unchanged.",
                                 [f"{i['field']}: {i['message']}" for i in issues], "errors"))
    if result is not None and result.warnings:
        parts.append(html.notice("warn", "What stops this configuration", list(result.warnings), "warnings"))
    stop = readouts.refusal(result)
    if stop is not None and stop[1] not in result.warnings:  # said once: sim's warnings may carry the sentence
        parts.append(html.notice("error", "Nothing runs in this configuration", [stop[1]], "blocked"))
    if link_note:
        parts.append(html.notice("info", "About the link", [link_note], "link_note"))
    # The pane stays visible, empty (no height) when there is nothing to say: showing or hiding a
    # model makes BokehJS lay the whole page out again and repaint every chart at once (about 20 ms
    # in Chromium, docs/benchmarks/2026-12-01-site.md, session 5), which a prompt slider crossing the context length did on every
    # crossing; new text only reflows the page below the pane.
    return {"pane": {"html": "".join(parts)}}
