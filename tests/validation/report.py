"""How close is kvlab to public measurements? Evaluates every record in tests/validation with sim.

    python -m tests.validation.report [--profile textbook|published|NAME] [--quiet] [--json]
    python -m tests.validation.report --profile published --write   # sim/data/fidelity.json's "served" figures

For each record the report builds the Scenario the record describes (model, GPU, tp, engine and
version, dtypes, lengths, batch or concurrency, memory settings), evaluates it, and compares:

- memory records: the KV pool (tokens when the log gives tokens, else GiB) with the engine's own
  accounting (vllm / sglang, at the record's version);
- perf records, by how the benchmark ran:
  * static batch (TensorRT-LLM's gptSessionBenchmark, vLLM's benchmark_latency): B prompts
    prefilled together, then output - 1 decode steps: latency = batch_prefill_s + (output - 1) x
    itl_s, throughput = B x output / latency; batch-1 first-token tables: ttft_s;
  * served at a fixed concurrency (AIPerf against an HTTP endpoint): served_itl_s, served_ttft_s,
    served_tokens_per_s;
  * offline max throughput (every request issued at once): served_tokens_per_s at a concurrency
    of the request count.

`--profile published` uses `<gpu>-published` where one exists (textbook elsewhere). Records kvlab
cannot represent are listed with the reason (model not in the catalog and no config, GPU not in
the catalog, pipeline parallelism, a dtype kvlab has no path for). Engines kvlab does not model
(NIM; TensorRT-LLM where the record does not state its memory settings) are evaluated with vLLM's
accounting and CPU costs as the nearest proxy, and say so in the row. A TensorRT-LLM record that
states its kv_cache_free_gpu_mem_fraction (and, where given, max_num_tokens, max_batch_size and
tokens per block) is evaluated with kvlab's tensorrt-llm accounting at those settings. Errors are
(predicted - measured) / measured; the summary gives the median and p90 of their absolute values
per metric, and the median signed error (negative: kvlab too low).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from dataclasses import dataclass, replace
from pathlib import Path

from kvlab.sim import Scenario, evaluate, gpu_ids, model_ids, profile_names
from kvlab.sim.engine_rules import versions as engine_versions
from kvlab.sim.fidelity import section, write_section
from kvlab.sim.profiles import published_profile
from kvlab.sim.resolve import model_family

HERE = Path(__file__).parent
MODELED_ENGINES = ("vllm", "sglang")
TRTLLM = "tensorrt-llm"  # modelled where the record states its memory settings (_trtllm_fields)
DTYPES = {"bf16": "bf16", "fp16": "fp16", "fp8": "fp8", "int8-w8a8": "int8", "int8": "int8", "int4": "int4"}
METRICS = ("itl", "tok_per_s", "ttft", "kv_pool")
FAMILIES = ("dense", "moe", "mla")  # MLA models here are MoE too; they are their own family


@dataclass(frozen=True)
class Row:
    id: str
    metric: str
    measured: float
    predicted: float
    note: str = ""
    family: str = "dense"
    source: str = ""  # the record's source URL: the unit left out by a leave-one-source-out check

    @property
    def error(self) -> float:
        return (self.predicted - self.measured) / self.measured


def load(name: str) -> list[dict]:
    return json.loads((HERE / name).read_text())["records"]


def _profile(choice: str, gpu: str) -> str:
    """The profile a record runs on: `choice`; for "published" the GPU's (sim.profiles.
    published_profile); for the fit script's "fit-{gpu}" family the GPU's own, else its chip's,
    else textbook."""
    if choice == "published":
        return published_profile(gpu)
    if "{gpu}" not in choice:
        return choice
    for key in (gpu, gpu.split("-")[0]):
        if choice.format(gpu=key) in profile_names():
            return choice.format(gpu=key)
    return "textbook"


def _model(rec: dict) -> tuple[dict | None, str]:
    """Scenario model fields for a record, or (None, reason)."""
    if rec.get("model") in model_ids():
        return {"model": rec["model"]}, ""
    cfg = rec.get("hf_config")
    if cfg:
        keys = ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
                "intermediate_size", "vocab_size", "max_position_embeddings", "tie_word_embeddings",
                "num_local_experts", "num_experts", "num_experts_per_tok", "moe_intermediate_size",
                "shared_expert_intermediate_size")
        config = {k: cfg[k] for k in keys if cfg.get(k) is not None}
        config["model_type"] = "mixtral" if "num_local_experts" in config else "llama"
        config["_name_or_path"] = rec.get("hf_id") or rec["model"]
        return {"config": config}, ""
    return None, f"model {rec.get('model')!r} is not in kvlab's catalog and the record has no config"


def _engine(rec: dict) -> tuple[str, str | None, str]:
    engine = str(rec.get("engine") or "")
    if engine in MODELED_ENGINES:
        version = rec.get("engine_version")
        text = str(version or "").removeprefix("v")
        if version is None or not text[:1].isdigit():
            version = "0.6" if rec.get("engine_mode") == "V0" else None
        else:
            version = ".".join(text.split(".")[:2])
        return engine, version, ""
    if engine == TRTLLM and rec.get("kv_cache_free_gpu_mem_fraction") is not None:
        text = str(rec.get("engine_version") or "")
        short = ".".join(text.split(".")[:2])
        version = short if short in engine_versions(TRTLLM) else None
        return TRTLLM, version, "" if version else f"TensorRT-LLM {text[:12] or '(version not stated)'} read with {TRTLLM}'s current rules"
    return "vllm", None, f"{engine.split(' ')[0]} evaluated with vLLM's rules (proxy)"


def _trtllm_fields(rec: dict) -> dict:
    """TensorRT-LLM's memory settings a record states, as Scenario fields."""
    out = {"kv_cache_free_gpu_mem_fraction": rec["kv_cache_free_gpu_mem_fraction"]}
    for field, key in (("max_num_batched_tokens", "max_num_tokens"), ("max_num_seqs", "max_batch_size"),
                       ("block_size_tokens", "block_size")):
        if rec.get(key):
            out[field] = rec[key]
    return out


def _common(rec: dict, profile_choice: str) -> tuple[dict | None, str]:
    model, why = _model(rec)
    if model is None:
        return None, why
    gpu = rec.get("gpu")
    if gpu not in gpu_ids():
        return None, f"GPU {gpu!r} is not in kvlab's catalog"
    if (rec.get("pp") or 1) not in (1, 2, 4, 8):
        return None, f"pp {rec.get('pp')} is not modelled"
    ep = rec.get("ep") or 1
    if ep > 1 and ep != rec.get("tp"):
        return None, f"expert parallelism over {ep} of the {rec.get('tp')} GPUs is not modelled (kvlab: ep = tp)"
    if rec.get("spec"):
        return None, f"the run used speculative decoding ({rec['spec']}); kvlab models a separate draft model only"
    if rec.get("tp") not in (1, 2, 4, 8):
        return None, f"tp {rec.get('tp')} is not modelled"
    weight = DTYPES.get(str(rec.get("weight_dtype") or "bf16"))
    kv = DTYPES.get(str(rec.get("kv_dtype") or "bf16"))
    if weight is None or kv is None or kv == "int4":
        return None, f"dtypes {rec.get('weight_dtype')}/{rec.get('kv_dtype')} have no path in kvlab"
    engine, version, note = _engine(rec)
    fields = dict(model, gpu=gpu, tp=rec["tp"], weight_dtype=weight, kv_dtype=kv, engine=engine,
                  profile=_profile(profile_choice, gpu), allocation="paged")
    # Attention data parallelism in these runs gives every GPU its own requests (SGLang --dp = --tp,
    # TensorRT-LLM enable_attention_dp).
    if rec.get("dp_attention"):
        fields["attention_dp"] = rec["tp"]
    if (rec.get("pp") or 1) > 1:
        fields["pp"] = rec["pp"]
    if ep > 1:
        fields["expert_parallel"] = True
    if "engine_version" in Scenario.__dataclass_fields__:  # absent before issue 11: the report also measures older kvlabs
        fields["engine_version"] = version
    if engine == TRTLLM:
        fields.update(_trtllm_fields(rec))
    return fields, note


def memory_rows(profile_choice: str) -> tuple[list[Row], list[tuple[str, str]]]:
    rows, skipped = [], []
    for rec in load("memory_records.json"):
        fields, note = _common(rec, profile_choice)
        if fields is None:
            skipped.append((rec["id"], note))
            continue
        if rec.get("engine") != fields["engine"]:  # a proxy's pool says nothing about this engine's accounting
            skipped.append((rec["id"], f"memory accounting of {rec.get('engine')} is not modelled"))
            continue
        max_len = rec.get("max_model_len")
        fields.update(max_model_len=max_len, prompt_tokens=min(1024, max(max_len - 128, 1)) if max_len else 1024,
                      output_tokens=min(128, max_len - 1) if max_len else 128, concurrency=1)
        if rec.get("gpu_memory_utilization") is not None:
            fields["gpu_memory_utilization"] = rec["gpu_memory_utilization"]
        if rec.get("mem_fraction_static") is not None:
            fields["mem_fraction_static"] = rec["mem_fraction_static"]
        r = evaluate(Scenario(**fields))
        if not r.ok:
            skipped.append((rec["id"], f"sim refused: {r.errors[0]['field']} {r.errors[0]['message'][:80]}"))
            continue
        tags = {"family": _family(fields), "source": rec["source_url"]}
        if rec.get("kv_pool_tokens"):
            rows.append(Row(rec["id"], "kv_pool", rec["kv_pool_tokens"], r.kv_pool_tokens, note or "tokens", **tags))
        elif rec.get("kv_pool_gib"):
            rows.append(Row(rec["id"], "kv_pool", rec["kv_pool_gib"], r.kv_pool_bytes / 2**30, note or "GiB", **tags))
        else:
            skipped.append((rec["id"], "no KV pool figure"))
    return rows, skipped


def _served(r, name: str, fallback: str):
    value = getattr(r, name, None)
    return value if value is not None else getattr(r, fallback)


def perf_rows(profile_choice: str) -> tuple[list[Row], list[tuple[str, str]]]:
    rows, skipped = [], []
    for rec in load("perf_records.json"):
        fields, note = _common(rec, profile_choice)
        if fields is None:
            skipped.append((rec["id"], note))
            continue
        prompt, out = rec["input_tokens"], rec["output_tokens"]
        if not prompt or not out:
            skipped.append((rec["id"], "no fixed input/output lengths (a length distribution such as ShareGPT)"))
            continue
        gpus = rec.get("gpu_count") or rec["tp"]
        measured_tps = rec.get("output_tok_per_s") or (rec["output_tok_per_s_per_gpu"] * gpus
                                                       if rec.get("output_tok_per_s_per_gpu") else None)
        if gpus > 1 and "per GPU or total is not stated" in str(rec.get("notes")):
            skipped.append((rec["id"], "the record says its throughput may be per GPU or total (not stated); tp > 1"))
            continue
        fields.update(prompt_tokens=prompt, output_tokens=out)
        mode = _mode(rec)
        if mode is None:
            skipped.append((rec["id"], "no batch size, concurrency, request rate or request count"))
            continue
        predicted, why = _predict(mode, rec, fields)
        if predicted is None:
            skipped.append((rec["id"], "sim refused: " + why))
            continue
        if why:
            note = (note + "; " if note else "") + why
        note = (note + "; " if note else "") + mode
        before = len(rows)
        measured_itl = rec.get("itl_ms") or rec.get("tpot_ms")
        if measured_itl:
            rows.append(Row(rec["id"], "itl", measured_itl / 1e3, predicted["itl"], note))
        elif mode == "static" and rec.get("e2e_latency_ms"):
            # The mean step of a static batch: latency / output is what the record measures.
            rows.append(Row(rec["id"], "itl", rec["e2e_latency_ms"] / 1e3 / out, predicted["latency"] / out, note + "; latency / output"))
        if rec.get("ttft_ms"):
            rows.append(Row(rec["id"], "ttft", rec["ttft_ms"] / 1e3, predicted["ttft"], note))
        if measured_tps:
            rows.append(Row(rec["id"], "tok_per_s", measured_tps, predicted["tok_per_s"], note))
        if len(rows) == before:
            skipped.append((rec["id"], "no ITL, TTFT or output tok/s figure to compare"))
        family = _family(fields)
        rows[before:] = [replace(row, family=family, source=rec["source_url"]) for row in rows[before:]]
    return rows, skipped


def _family(fields: dict) -> str:
    return model_family(Scenario(**fields))


def _mode(rec: dict) -> str | None:
    """How the benchmark drove the engine: a static batch, a fixed concurrency (closed loop), a
    Poisson request rate (open loop), or every request at once (a burst)."""
    rate, conc, n = rec.get("request_rate_per_s"), rec.get("concurrency"), rec.get("num_requests")
    if rec.get("batch_size"):
        return "static"
    if rate is not None and math.isfinite(rate):
        return "rate"
    if conc and (not n or n > conc):
        return "closed"
    if n or conc:
        return "burst"
    return None


def _eval(fields: dict, **changes):
    r = evaluate(Scenario(**{**fields, **changes}))
    if not r.ok or not r.batch:
        return None, (f"{r.errors[0]['field']} {r.errors[0]['message'][:80]}" if r.errors else "nothing fits")
    return r, ""


def _static(r, out: int) -> tuple[float, float]:
    """(latency, batch prefill) of one static batch of r.batch prompts: prefill together (one
    engine step, its CPU work included), then out - 1 decode steps."""
    prefill = (getattr(r, "batch_prefill_s", None) or r.ttft_s * r.batch) + (getattr(r, "cpu_step_s", 0.0) or 0.0)
    return prefill + (out - 1) * r.itl_s, prefill


def _predict(mode: str, rec: dict, fields: dict) -> tuple[dict | None, str]:
    """kvlab's figures for the benchmark: itl, ttft, tok_per_s (and latency for static batches).

    The benchmark's protocol is mapped onto sim's steady-state result here; every time comes from
    sim (itl_s, ttft_s, batch_prefill_s, served_*); the report only adds up passes and waits.
    """
    out = fields["output_tokens"]
    frontend = getattr_or(rec, fields)
    if mode == "static":
        bs = rec["batch_size"]
        # Every sequence is admitted together; the scheduler cap must not cut the batch.
        r, why = _eval(fields, concurrency=bs, max_num_seqs=max(bs, 256), max_num_batched_tokens=max(bs * fields["prompt_tokens"], 8192))
        if r is None:
            return None, why
        latency, _ = _static(r, out)
        note = f"pool holds {r.batch} of {bs}" if bs > r.batch else ""
        # An offline first token still passes through one engine step: the prefill plus the step's CPU work.
        ttft = r.ttft_s + (getattr(r, "cpu_step_s", 0.0) or 0.0)
        return {"itl": r.itl_s, "ttft": ttft, "tok_per_s": r.batch * out / latency, "latency": latency}, note
    if mode == "closed":
        r, why = _eval(fields, concurrency=rec["concurrency"])
        if r is None:
            return None, why
        return {"itl": _served(r, "served_itl_s", "itl_s"), "ttft": _served(r, "served_ttft_s", "ttft_s"),
                "tok_per_s": getattr(r, "served_tokens_per_s", 0.0) or r.decode_tokens_per_s}, ""
    if mode == "rate":
        rate = rec["request_rate_per_s"]
        conc, r = 1.0, None
        for _ in range(12):  # Little's law: in flight = rate x request latency, at that concurrency
            r, why = _eval(fields, concurrency=max(1, round(conc)))
            if r is None:
                return None, why
            latency = _served(r, "served_ttft_s", "ttft_s") + (out - 1) * _served(r, "served_itl_s", "itl_s")
            conc = min(rate * latency, 1e5)
        capacity = getattr(r, "served_tokens_per_s", 0.0) or r.decode_tokens_per_s
        return {"itl": _served(r, "served_itl_s", "itl_s"), "ttft": _served(r, "served_ttft_s", "ttft_s"),
                "tok_per_s": min(rate * out, capacity)}, f"in flight {conc:.1f}"
    # burst: n requests at once; waves of at most the batch the pool and scheduler allow.
    n = rec.get("num_requests") or rec["concurrency"]
    extra = {"max_num_seqs": 2048, "max_num_batched_tokens": 8192} if "trtllm-bench" in str(rec.get("benchmark_tool")) else {}
    r, why = _eval(fields, concurrency=min(n, 1_000_000), **extra)
    if r is None:
        return None, why
    wave, prefill = _static(r, out)
    waves = n / r.batch
    total = waves * wave
    ttft = frontend + prefill / 2 + max(total - wave, 0.0) / 2  # the mean request waits half the earlier waves
    itl = r.itl_s if waves <= 1 else _served(r, "served_itl_s", "itl_s")
    return {"itl": itl, "ttft": ttft, "tok_per_s": n * out / total}, f"{waves:.1f} waves of {r.batch}"


def getattr_or(rec: dict, fields: dict) -> float:
    """The engine's front-end overhead (0 before issue 11's engine rules)."""
    r = evaluate(Scenario(**{**fields, "concurrency": 1}))
    return getattr(r, "ttft_frontend_s", 0.0) or 0.0


def _percentile(values: list[float], q: float) -> float:
    s = sorted(values)
    if not s:
        return math.nan
    k = (len(s) - 1) * q
    lo, hi = int(math.floor(k)), int(math.ceil(k))
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def summarize(rows: list, metrics=METRICS) -> dict[str, dict]:
    """Per metric over every row, and per family as "metric/family" (itl/moe, tok_per_s/mla, ...).
    Rows have `metric`, `family` and `error` (this report's, and bench_report's replays)."""
    out = {}
    for metric in metrics:
        for family in (None, *FAMILIES):
            errs = [row.error for row in rows if row.metric == metric and family in (None, row.family)]
            if errs:
                out[metric if family is None else f"{metric}/{family}"] = {
                    "n": len(errs), "median_abs": statistics.median(abs(e) for e in errs),
                    "p90_abs": _percentile([abs(e) for e in errs], 0.9), "median_signed": statistics.median(errs)}
    return out


def run(profile_choice: str) -> tuple[list[Row], list[tuple[str, str]], dict]:
    mem, mem_skipped = memory_rows(profile_choice)
    perf, perf_skipped = perf_rows(profile_choice)
    rows = perf + mem
    return rows, mem_skipped + perf_skipped, summarize(rows)


SERVED_FIGURES = ("itl", "tok_per_s", "ttft")


def served_fidelity(rows: list[Row], summary: dict) -> dict:
    """The "served" section of sim/data/fidelity.json (profile "published"): per figure and family,
    records and median |error|, which the panels quote beside their latencies."""
    return section(summary, SERVED_FIGURES, len({r.id for r in rows if r.metric in SERVED_FIGURES}), "records")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--profile", default="textbook", help="textbook, published (<gpu>-published), or a profile name")
    p.add_argument("--quiet", action="store_true", help="summary only")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--write", action="store_true", help="write sim/data/fidelity.json's served section (profile published)")
    args = p.parse_args(argv)
    rows, skipped, summary = run(args.profile)
    if args.write:
        if args.profile != "published":
            p.error("--write takes the published profiles' figures: add --profile published")
        write_section("served", served_fidelity(rows, summary))
    if args.json:
        print(json.dumps(summary, sort_keys=True))
        return 0
    if not args.quiet:
        print(f"{'record':52} {'metric':9} {'family':6} {'measured':>12} {'kvlab':>12} {'error':>8}  note")
        for row in rows:
            print(f"{row.id:52} {row.metric:9} {row.family:6} {row.measured:12.4g} {row.predicted:12.4g} {row.error:+8.1%}  {row.note}")
        print()
        print(f"skipped {len(skipped)} records:")
        for rid, why in skipped:
            print(f"  {rid}: {why}")
        print()
    print(f"profile {args.profile}: {'metric':15} {'n':>3} {'median |err|':>13} {'p90 |err|':>10} {'median err':>11}")
    pad = " " * (len(args.profile) + 9)
    for metric, s in summary.items():
        print(f"{pad}{metric:15} {s['n']:3d} {s['median_abs']:13.1%} {s['p90_abs']:10.1%} {s['median_signed']:+11.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
