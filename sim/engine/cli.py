"""`kvlab engine`: run the time-domain serving engine from the command line.

    kvlab engine --preset seed000-shared-queue --num-requests 2000
    kvlab engine --policy fcfs --rate-per-s 4 --log vllm
    kvlab engine --preset seed004-cliff --sweep 0.5,1,1.5,2,2.5
    kvlab engine --preset seed000-chunked --compare fcfs,chunked,lanes
    kvlab engine --trace requests.csv --prometheus

Every numeric option takes its bounds from ENGINE_FIELDS (or sim.FIELDS for the hardware side);
bad input exits with status 2 and one line naming the option and its allowed range.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, fields

from ..errors import InputError
from ..scenario import FIELDS as SCENARIO_FIELDS
from ..units import KV_DTYPES, WEIGHT_DTYPES
from .config import (
    ADMISSIONS,
    ARRIVALS,
    BLOCK_TABLES,
    ENGINE_FIELDS,
    LENGTH_DISTS,
    POLICIES,
    PREEMPTIONS,
    ROUTERS,
    TOKENIZERS,
    Cluster,
    EngineConfig,
    KVManagement,
    Scheduling,
    Workload,
)
from .presets import PRESETS, preset
from .run import simulate
from .sweep import compare_job, rate_sweep
from .trace import parse_trace

SCENARIO_OPTIONS = ("gpu_memory_gib", "gpu_memory_utilization", "block_size_tokens", "max_model_len", "max_num_batched_tokens",
                    "max_num_seqs", "mem_fraction_static")
CHOICES = {
    "arrival": ARRIVALS, "prompt_dist": LENGTH_DISTS, "output_dist": LENGTH_DISTS, "policy": POLICIES,
    "admission": ADMISSIONS, "tokenizer": TOKENIZERS, "block_table": BLOCK_TABLES, "preemption": PREEMPTIONS,
    "router": ROUTERS, "kv_dtype": KV_DTYPES, "weight_dtype": WEIGHT_DTYPES, "engine": ("textbook", "vllm", "sglang"),
}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2, no usage dump
        self.exit(2, f"kvlab engine: error: {message}\n")


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _number(name: str, bound):
    def parse(text: str):
        try:
            return int(text) if bound.integer else float(text)
        except ValueError:
            kind = "an integer" if bound.integer else "a number"
            raise argparse.ArgumentTypeError(f"must be {kind} between {bound.low:g} and {bound.high:g}, got {text[:40]!r}") from None
    return parse


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="kvlab engine", description="Simulate one LLM serving engine over time: queues, tails, cliffs.")
    p.add_argument("--preset", choices=list(PRESETS), help="start from a named configuration (default: 'default')")
    p.add_argument("--model", help="catalog model id")
    p.add_argument("--gpu", help="catalog GPU id")
    p.add_argument("--tp", type=int, choices=(1, 2, 4, 8), help="tensor-parallel size of each instance")
    p.add_argument("--accounting", dest="engine", choices=CHOICES["engine"], help="HBM accounting (textbook, vllm, sglang)")
    p.add_argument("--profile", help="efficiency profile")
    for name in ("kv_dtype", "weight_dtype"):
        p.add_argument(_flag(name), dest=name, choices=CHOICES[name])
    for name in SCENARIO_OPTIONS:
        b = SCENARIO_FIELDS[name]
        p.add_argument(_flag(name), dest=name, type=_number(name, b), help=f"{b.help} ({b.low:g} to {b.high:g})")
    for name, b in ENGINE_FIELDS.items():
        p.add_argument(_flag(name), dest=name, type=_number(name, b), help=f"{b.help} ({b.low:g} to {b.high:g})")
    for name, choices in CHOICES.items():
        if name in ("kv_dtype", "weight_dtype", "engine"):
            continue
        p.add_argument(_flag(name), dest=name, choices=choices)
    p.add_argument("--no-prefix-caching", dest="prefix_caching", action="store_false", default=None)
    p.add_argument("--disaggregated", action="store_true", default=None, help="separate prefill and decode instances")
    p.add_argument("--trace", metavar="PATH",
                   help="CSV or JSONL trace (arrival_s, prompt_tokens, output_tokens, optional prefix_id, prefix_tokens)")
    p.add_argument("--sweep", metavar="RATES", help="comma-separated request rates: print p50/p99 latency per rate and the knee")
    p.add_argument("--compare", metavar="POLICIES", help="comma-separated policies to run on the same seeded workload")
    p.add_argument("--log", choices=("vllm", "sglang", "none"), default="none", help="print the engine log lines")
    p.add_argument("--prometheus", action="store_true", help="print the Prometheus exposition at the end of the run")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object (without per-request arrays)")
    return p


def config_from_args(args: argparse.Namespace) -> EngineConfig:
    cfg = preset(args.preset or "default")
    scenario_changes = {k: getattr(args, k) for k in ("model", "gpu", "tp", "engine", "profile", "kv_dtype", "weight_dtype",
                                                      *SCENARIO_OPTIONS) if getattr(args, k) is not None}
    if scenario_changes:
        cfg = cfg.with_(scenario=cfg.scenario.with_(**scenario_changes))
    changes = {}
    for group in (Workload, Scheduling, KVManagement, Cluster, EngineConfig):
        for f in fields(group):
            if f.name in ("scenario", "workload", "scheduling", "kv", "cluster", "trace"):
                continue
            value = getattr(args, f.name, None)
            if value is not None:
                changes[f.name] = value
    if args.trace:
        try:
            with open(args.trace, encoding="utf-8") as fh:
                text = fh.read()
        except OSError as e:
            raise SystemExit(f"kvlab engine: error: --trace: cannot read {args.trace!r} ({e.strerror})") from None
        try:
            changes["trace"] = parse_trace(text)
        except InputError as e:
            raise SystemExit("kvlab engine: error: --trace: " + "; ".join(i.message for i in e.issues)) from None
        changes["arrival"] = "trace"
    return cfg.with_(**changes) if changes else cfg


def _option(field: str) -> str:
    renamed = {"engine": "--accounting"}
    return renamed.get(field, _flag(field))


def _fail(errors: list[dict]) -> int:
    e = errors[0]
    print(f"kvlab engine: error: {_option(e['field'])}: {e['message']}", file=sys.stderr)
    return 2


def _rates(text: str) -> list[float]:
    try:
        rates = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise SystemExit(f"kvlab engine: error: --sweep: expected comma-separated numbers, got {text[:60]!r}") from None
    if not rates:
        raise SystemExit("kvlab engine: error: --sweep: expected at least one rate")
    return sorted(rates)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    cfg = config_from_args(args)
    if args.sweep:
        sw = rate_sweep(cfg, _rates(args.sweep))
        if sw.errors:
            return _fail(sw.errors)
        if args.json:
            print(json.dumps(asdict(sw), sort_keys=True))
            return 0
        print(f"{'rate/s':>8} {'TTFT p50':>9} {'TTFT p99':>9} {'E2E p50':>9} {'E2E p99':>9} {'ITL p99':>8} {'req/s':>7} {'KV use':>7}")
        for pt in sw.points:
            print(f"{pt.rate_per_s:8.2f} {pt.ttft_p50_s:8.2f}s {pt.ttft_p99_s:8.2f}s {pt.e2e_p50_s:8.2f}s {pt.e2e_p99_s:8.2f}s "
                  f"{pt.itl_p99_s * 1e3:6.0f}ms {pt.throughput_per_s:7.2f} {pt.mean_kv_usage:7.0%}")
        knee = f"{sw.knee_rate_per_s:g} req/s" if sw.knee_rate_per_s is not None else "not reached in this sweep"
        print(f"knee (p99 TTFT above 3x its light-load value): {knee}")
        return 0
    if args.compare:
        names = [x.strip() for x in args.compare.split(",") if x.strip()]
        job = compare_job(cfg, {n: {"policy": n} for n in names})
        results = job.run()
        for r in results:
            if r.errors:
                return _fail(r.errors)
        if args.json:
            print(json.dumps({n: _compact(r) for n, r in zip(names, results, strict=True)}, sort_keys=True))
            return 0
        for n, r in zip(names, results, strict=True):
            print(f"== {n}")
            print("\n".join(r.summary_lines()))
        return 0
    r = simulate(cfg)
    if r.errors:
        return _fail(r.errors)
    if args.json:
        print(json.dumps(_compact(r), sort_keys=True))
        return 0
    if args.log == "vllm":
        print("\n".join(r.vllm_log))
    elif args.log == "sglang":
        print("\n".join(r.sglang_log))
    if args.prometheus:
        print(r.prometheus, end="")
    print("\n".join(r.summary_lines()))
    return 0


def _compact(r) -> dict:
    d = r.to_dict()
    for key in ("requests", "series", "itl_density", "vllm_log", "sglang_log", "prometheus"):
        d.pop(key, None)
    return d


if __name__ == "__main__":
    sys.exit(main())
