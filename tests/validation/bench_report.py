"""Whole benchmark runs replayed by the engine against what the tool printed (bench_runs.json).

    python -m tests.validation.bench_report            # every run, then the summary
    python -m tests.validation.bench_report --quiet    # the summary: median and p90 |error| per figure
    python -m tests.validation.bench_report --json
    python -m tests.validation.bench_report --write    # sim/data/fidelity.json, which kvlab compare quotes

Each record is a published `vllm bench serve` / `benchmark_serving.py` / `sglang.bench_serving`
run (its source and the printed lines are in the record). The engine replays it as `kvlab compare`
does: the tool's sampler and arrivals (sim.engine.bench), the engine's default scheduling for its
version, the GPU's measured or published profile. Nothing here is fitted: the report only reads.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import dataclass

from kvlab.sim import Scenario
from kvlab.sim.engine.bench import BenchSpec, engine_config
from kvlab.sim.engine.bench_summary import bench_metrics
from kvlab.sim.engine.run import simulate
from kvlab.sim.fidelity import section, write_section
from kvlab.sim.profiles import best_profile

from .report import _common, load, summarize

# The figures compared: the record's key, the engine's key (vLLM's result keys).
FIGURES = {"duration_s": "duration", "output_throughput": "output_throughput", "mean_ttft_ms": "mean_ttft_ms",
           "median_ttft_ms": "median_ttft_ms", "p99_ttft_ms": "p99_ttft_ms", "mean_tpot_ms": "mean_tpot_ms",
           "median_tpot_ms": "median_tpot_ms", "mean_itl_ms": "mean_itl_ms", "median_itl_ms": "median_itl_ms",
           "p99_itl_ms": "p99_itl_ms"}


@dataclass(frozen=True)
class Row:
    id: str
    source: str
    family: str
    metric: str  # a figure of FIGURES, under the name report.summarize reads
    measured: float
    predicted: float

    @property
    def error(self) -> float:
        return (self.predicted - self.measured) / self.measured


def spec_for(rec: dict) -> tuple[BenchSpec | None, str]:
    """The client's run a record states, or (None, why it cannot be replayed)."""
    m = rec["measured"]
    tool = "sglang" if str(rec.get("tool", "")).startswith("sglang") else "vllm"
    spec = BenchSpec(bench_tool=tool, num_prompts=int(m["completed"]), request_rate=rec.get("request_rate"),
                     burstiness=float(rec.get("burstiness") or 1.0), max_concurrency=rec.get("max_concurrency"),
                     total_input_tokens=int(m["total_input_tokens"]), total_output_tokens=int(m["total_output_tokens"]))
    dataset = rec.get("dataset")
    if dataset == "sharegpt":
        return spec.with_(dataset_name="sharegpt", sharegpt_output_len=rec.get("output_len")), ""
    if dataset in ("random", "sonnet") and rec.get("input_len") and rec.get("output_len"):
        ratio = float(rec.get("range_ratio") or 0.0)
        if tool == "vllm" and ratio >= 1:
            # vLLM before its 2025 sampler rewrite drew [int(L r), L]: r = 1 is fixed lengths
            ratio = 0.0
        # sonnet prompts are fixed-length slices of one poem: fixed lengths
        return spec.with_(random_input_len=int(rec["input_len"]), random_output_len=int(rec["output_len"]),
                          random_range_ratio=ratio if dataset == "random" else 0.0), ""
    return None, f"dataset {dataset!r} without lengths"


def rows_for(rec: dict) -> tuple[list[Row], str]:
    spec, why = spec_for(rec)
    if spec is None:
        return [], why
    # kv "auto" is the model's activation dtype, BF16 here (an FP8 checkpoint keeps a BF16 cache unless told)
    kv = "bf16" if rec.get("kv_dtype") in (None, "auto") else rec["kv_dtype"]
    fields, why = _common(dict(rec, model=rec.get("catalog_model"), kv_dtype=kv), "published")
    if fields is None:
        return [], why
    fields["profile"] = best_profile(fields["gpu"])
    cfg = engine_config(Scenario(**fields), spec, replicas=max(1, int(rec.get("dp") or 1)))
    r = simulate(cfg)
    if r.errors:
        return [], "; ".join(f"{e['field']}: {e['message']}" for e in r.errors)
    predicted = bench_metrics(r).flat()
    family = r.model_family
    source = rec["source_url"].split("/blob/")[0].split("/pull/")[0].split("/issues/")[0]
    return [Row(rec["id"], source, family, k, float(v), predicted[FIGURES[k]])
            for k, v in rec["measured"].items() if k in FIGURES and v], ""


def run() -> tuple[list[Row], list[tuple[str, str]]]:
    rows, skipped = [], []
    for rec in load("bench_runs.json"):
        got, why = rows_for(rec)
        rows += got
        if not got:
            skipped.append((rec["id"], why))
    return rows, skipped


def leave_one_source_out(rows: list[Row]) -> dict[str, dict[str, float]]:
    """Median |error| per figure over the other sources, with each source left out in turn: how far
    the summary moves on one source's runs (no constant is fitted here, so this is a spread check)."""
    out = {}
    for source in sorted({r.source for r in rows}):
        rest = [r for r in rows if r.source != source]
        out[source] = {f: statistics.median(abs(r.error) for r in rest if r.metric == f)
                       for f in FIGURES if any(r.metric == f for r in rest)}
    return out


FIDELITY_FIGURES = ("duration_s", "output_throughput", "mean_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "median_itl_ms")


def fidelity(rows: list[Row]) -> dict:
    """The "replays" section of sim/data/fidelity.json: per figure and family, runs and median |error|."""
    return section(summarize(rows, FIGURES), FIDELITY_FIGURES, len({r.id for r in rows}), "runs")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quiet", action="store_true", help="summary only")
    p.add_argument("--json", action="store_true", help="print the summaries as JSON")
    p.add_argument("--write", action="store_true", help="write the replays' section of sim/data/fidelity.json")
    args = p.parse_args(argv)
    rows, skipped = run()
    if args.write:
        write_section("replays", fidelity(rows))
    summary = summarize(rows, FIGURES)
    if args.json:
        print(json.dumps({"summary": summary, "loso": leave_one_source_out(rows), "runs": len({r.id for r in rows}),
                          "skipped": skipped}, sort_keys=True))
        return 0
    if not args.quiet:
        print(f"{'run':58} {'figure':15} {'measured':>11} {'kvlab':>11} {'error':>8}")
        for row in rows:
            print(f"{row.id:58} {row.metric:15} {row.measured:11.4g} {row.predicted:11.4g} {row.error:+8.1%}")
        print()
        for rid, why in skipped:
            print(f"skipped {rid}: {why}")
    print(f"{len({r.id for r in rows})} runs replayed, {len(skipped)} skipped")
    print(f"{'figure':28} {'n':>3} {'median |err|':>13} {'p90 |err|':>10} {'median err':>11}")
    for figure, s in summary.items():
        print(f"{figure:28} {s['n']:3d} {s['median_abs']:13.1%} {s['p90_abs']:10.1%} {s['median_signed']:+11.1%}")
    print("\nleave one source out (median |err| of the rest):")
    for source, figs in leave_one_source_out(rows).items():
        print(f"  without {source.removeprefix('https://'):58} " + " ".join(f"{k.removesuffix('_ms')}={v:.0%}"
                                                                           for k, v in figs.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
