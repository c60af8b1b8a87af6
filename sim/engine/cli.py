"""`kvlab engine`: run the time-domain serving engine from the command line.

    kvlab engine --preset seed000-shared-queue --num-requests 2000
    kvlab engine --policy fcfs --rate-per-s 4 --log vllm
    kvlab engine --preset seed004-cliff --sweep 0.5,1,1.5,2,2.5
    kvlab engine --preset seed000-chunked --compare fcfs,chunked,lanes
    kvlab engine --trace requests.csv --prometheus

Every option is its field's name with dashes, as in `kvlab` (sim/cliargs.py); every numeric option
takes its bounds from sim/fields.py. Bad input exits with status 2 and one line per problem, each
naming the option and its allowed range.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, fields

from ..cli import SPEC_FIELDS, add_spec_options
from ..cliargs import Check, Parser, flag, parse, report
from ..errors import InputError
from ..fields import describe, shown
from ..scenario import ENGINES, TP_SIZES
from ..scenario import FIELDS as SCENARIO_FIELDS
from ..units import KV_DTYPES, WEIGHT_DTYPES
from ..userfile import FileProblem, read_bytes, shown_path
from . import bench_cli
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
    coerce_config,
    validate_config,
)
from .presets import PRESETS, preset
from .run import simulate
from .setup import build
from .sweep import compare_job, rate_sweep
from .trace import MAX_TRACE_BYTES, parse_trace

SCENARIO_CHOICES = ("model", "gpu", "tp", "engine", "engine_version", "profile", "kv_dtype", "weight_dtype")
SCENARIO_OPTIONS = ("gpu_memory_gib", "gpu_memory_utilization", "block_size_tokens", "max_model_len", "max_num_batched_tokens",
                    "max_num_seqs", "mem_fraction_static", "kv_cache_free_gpu_mem_fraction", "kv_cache_max_tokens")
CHOICES = {
    "arrival": ARRIVALS, "prompt_dist": LENGTH_DISTS, "output_dist": LENGTH_DISTS, "policy": POLICIES,
    "admission": ADMISSIONS, "tokenizer": TOKENIZERS, "block_table": BLOCK_TABLES, "preemption": PREEMPTIONS,
    "router": ROUTERS, "kv_dtype": KV_DTYPES, "weight_dtype": WEIGHT_DTYPES,
}


PROG = "kvlab engine"
# Old option names, accepted for one release with a notice (sim.cliargs). Every other option is
# its field's name with dashes, as in `kvlab`.
RENAMED = {"engine": ("--accounting",)}


def build_parser() -> Parser:
    p = Parser(prog=PROG, description="Simulate one LLM serving engine over time: queues, tails, cliffs. Options left out "
               "keep the preset's values.")
    p.add_option("preset", choices=list(PRESETS), help="start from a named configuration (default: 'default')")
    p.add_argument("--model", help="catalog model id")
    p.add_argument("--gpu", help="catalog GPU id")
    p.add_option("tp", choices=TP_SIZES, integer_choices=True, help="tensor-parallel size of each instance")
    p.add_option("engine", aliases=RENAMED["engine"], choices=ENGINES, help="HBM accounting")
    p.add_option("engine_version", help="engine release whose rules apply, major.minor (as in kvlab --help)")
    p.add_argument("--profile", help="efficiency profile")
    for name in ("kv_dtype", "weight_dtype"):
        p.add_option(name, choices=CHOICES[name])
    for name in SCENARIO_OPTIONS:
        p.add_option(name, bound=SCENARIO_FIELDS[name])
    add_spec_options(p, None)
    for name, b in ENGINE_FIELDS.items():
        p.add_option(name, bound=b)
    for name, choices in CHOICES.items():
        if name not in ("kv_dtype", "weight_dtype"):
            p.add_option(name, choices=choices)
    p.add_argument("--no-prefix-caching", dest="prefix_caching", action="store_false", default=None)
    p.add_argument("--disaggregated", action="store_true", default=None, help="separate prefill and decode instances")
    p.add_argument("--trace", metavar="PATH",
                   help="CSV or JSONL trace (arrival_s, prompt_tokens, output_tokens, optional prefix_id, prefix_tokens)")
    p.add_argument("--sweep", metavar="RATES", help="comma-separated request rates: print p50/p99 latency per rate and the knee")
    p.add_argument("--compare", metavar="POLICIES", help=f"comma-separated policies ({', '.join(POLICIES)}) to run on the "
                   "same seeded workload")
    p.add_option("log", choices=("vllm", "sglang", "none"), default="none", help="print the engine log lines")
    p.add_argument("--prometheus", action="store_true", help="print the Prometheus exposition at the end of the run")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object (without per-request arrays)")
    bench_cli.add_options(p)
    return p


def read_trace(path: str) -> tuple[tuple | None, list[str]]:
    """(rows, []) or (None, problems) for a --trace file, each problem naming the file. The file is
    read by sim.userfile, which stops at MAX_TRACE_BYTES + 1 bytes (/dev/zero, a pipe, a huge file)."""
    try:
        data = read_bytes(path, MAX_TRACE_BYTES)
    except FileProblem as e:
        return None, [f"--trace: {line}" for line in e.lines()]
    try:
        return parse_trace(data), []
    except InputError as e:
        return None, [f"--trace: {shown_path(path)}: {i.message}" for i in e.issues]


def config_from_args(args: argparse.Namespace, trace=None) -> EngineConfig:
    cfg = preset(args.preset or "default")
    scenario_changes = {k: getattr(args, k) for k in SCENARIO_CHOICES + SCENARIO_OPTIONS + SPEC_FIELDS if getattr(args, k) is not None}
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
    if trace is not None:
        changes["trace"] = trace
        changes["arrival"] = "trace"
    return cfg.with_(**changes) if changes else cfg


def _option(field: str) -> str:
    return flag(field)


def _lines(errors: list[dict], trace_path: str | None = None) -> list[str]:
    """One line per problem; one about the trace names its file, as the parser's problems do."""
    def where(e):
        return f"{shown_path(trace_path)}: " if trace_path is not None and e["field"] == "trace" else ""
    return [f"{_option(e['field'])}: {where(e)}{e['message']}" for e in errors]


def _fail(errors: list[dict], trace_path: str | None = None) -> int:
    report(PROG, _lines(errors, trace_path))
    return 2


def _rates(text: str) -> tuple[list[float], list[str]]:
    """Request rates for --sweep, each checked like --rate-per-s."""
    check = Check("rate_per_s", ENGINE_FIELDS["rate_per_s"], None)
    rates, bad = [], []
    for x in (x.strip() for x in text.split(",")):
        value, problem = check.read(x)
        (bad if problem else rates).append(shown(x) if problem else value)
    if bad or not rates:
        return [], [f"--sweep: expected comma-separated request rates, each {describe(check.bound)}; "
                    f"not {', '.join(bad) if bad else 'an empty list'}"]
    return sorted(rates), []


def _policies(text: str) -> tuple[list[str], list[str]]:
    names = [x.strip() for x in text.split(",") if x.strip()]
    bad = [n for n in names if n not in POLICIES]
    if bad or not names:
        return [], [f"--compare: expected comma-separated policies from {', '.join(POLICIES)}, "
                    f"got {', '.join(shown(b) for b in bad) or 'none'}"]
    return names, []


def main(argv: list[str] | None = None) -> int:
    parsed = parse(build_parser(), list(sys.argv[1:] if argv is None else argv))
    report(PROG, parsed.notices, "note")
    problems = parsed.problems
    if parsed.args is None:
        report(PROG, problems)
        return 2
    args = parsed.args
    trace = rates = names = None
    if args.trace is not None:
        trace, more = read_trace(args.trace)
        problems += more
    if args.sweep is not None:
        rates, more = _rates(args.sweep)
        problems += more
    if args.compare is not None:
        names, more = _policies(args.compare)
        problems += more
    cfg = config_from_args(args, trace)
    spec = None
    if bench_cli.wanted(args):
        others = [o for o, v in (("--trace", args.trace), ("--sweep", args.sweep), ("--compare", args.compare)) if v is not None]
        problems += [f"{o}: not with the benchmark client's options" for o in others]
        spec, more = bench_cli.spec_from_args(args, cfg.workload)
        problems += more
        if not problems:
            cfg = bench_cli.config_for(spec, cfg, args)
    if problems:
        # Also every problem of the settings that did parse (bad ones are back at the preset's values).
        issues = validate_config(cfg)
        if not issues:
            issues = build(coerce_config(cfg))[1]
        bad = {p.split(":", 1)[0] for p in problems}
        report(PROG, problems + [line for line in _lines([i.to_dict() for i in issues], args.trace) if line.split(":", 1)[0] not in bad])
        return 2
    if rates is not None:
        sw = rate_sweep(cfg, rates)
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
    if names is not None:
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
        return _fail(r.errors, args.trace)
    if spec is not None and not args.json:
        more = bench_cli.print_run(r, spec, cfg, args)
        if more:
            report(PROG, more)
            return 2
        return 0
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
