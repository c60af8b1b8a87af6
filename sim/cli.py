"""`python -m kvlab.sim` / `kvlab`: evaluate one scenario from the command line.

Prints the engine log and a summary, or with --json one JSON object of the Result. Bad input
exits with status 2 and one line naming the option and its allowed range.
"""

from __future__ import annotations

import argparse
import json
import sys

from . import catalog
from .evaluate import evaluate
from .profiles import profile_names
from .scenario import ALLOCATIONS, ENGINES, FIELDS, TP_SIZES, Scenario, _fmt
from .units import GIB, KV_DTYPES, WEIGHT_DTYPES


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2, no usage dump
        self.exit(2, f"kvlab: error: {message}\n")


def _number(name: str, integer: bool):
    bound = FIELDS[name]

    def parse(text: str):
        try:
            value = int(text) if integer else float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"must be {'an integer' if integer else 'a number'} between {_fmt(bound.low)} and {_fmt(bound.high)}, got {text[:40]!r}"
            ) from None
        return value

    return parse


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="kvlab", description="Evaluate one LLM serving configuration: KV cache, HBM budget, roofline.")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--model", default="qwen3-8b", help=f"catalog model id ({', '.join(catalog.model_ids())})")
    src.add_argument("--config", metavar="PATH", help="a Hugging Face config.json file instead of --model")
    p.add_argument("--gpu", default="h100-sxm", help=f"catalog GPU id ({', '.join(catalog.gpu_ids())})")
    num_opts = [
        ("--gpu-memory-gib", "gpu_memory_gib", False),
        ("--prompt", "prompt_tokens", True),
        ("--output", "output_tokens", True),
        ("--concurrency", "concurrency", True),
        ("--gpu-util", "gpu_memory_utilization", False),
        ("--block-size", "block_size_tokens", True),
        ("--max-model-len", "max_model_len", True),
        ("--max-num-batched-tokens", "max_num_batched_tokens", True),
        ("--max-num-seqs", "max_num_seqs", True),
        ("--mem-fraction-static", "mem_fraction_static", False),
        ("--dollars-per-gpu-hour", "dollars_per_gpu_hour", False),
    ]
    defaults = Scenario()
    unset = {"gpu_memory_gib": "the GPU's own", "max_model_len": "the model's context (textbook: prompt + output)",
             "dollars_per_gpu_hour": "no cost shown"}
    for flag, name, integer in num_opts:
        b = FIELDS[name]
        default = getattr(defaults, name)
        shown = "" if "unset:" in b.help else f"; default {unset.get(name, 'unset') if default is None else _fmt(default)}"
        p.add_argument(flag, dest=name, type=_number(name, integer), default=default,
                       help=f"{b.help} ({_fmt(b.low)} to {_fmt(b.high)}{shown})")
    p.add_argument("--tp", type=int, default=1, choices=TP_SIZES, help="tensor-parallel size")
    p.add_argument("--kv-dtype", default="bf16", choices=KV_DTYPES)
    p.add_argument("--weight-dtype", default="bf16", choices=WEIGHT_DTYPES)
    p.add_argument("--mha", action="store_true", help="force multi-head attention (kv_heads := q_heads)")
    p.add_argument("--alloc", dest="allocation", default="contiguous", choices=ALLOCATIONS)
    p.add_argument("--engine", default="textbook", choices=ENGINES, help="memory accounting")
    p.add_argument("--profile", default="textbook", help=f"efficiency profile ({', '.join(profile_names())})")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    return p


def scenario_from_args(args: argparse.Namespace) -> Scenario:
    config = None
    if args.config:
        try:
            with open(args.config, encoding="utf-8") as f:
                config = json.load(f)
        except (OSError, ValueError) as e:
            # Exit status 2 like every other bad option, on one line.
            reason = str(e).splitlines()[0] if str(e) else type(e).__name__
            print(f"kvlab: error: --config: cannot read {args.config!r} as JSON ({reason})", file=sys.stderr)
            raise SystemExit(2) from None
    names = set(Scenario.__dataclass_fields__) - {"config", "force_mha"}
    kwargs = {k: getattr(args, k) for k in names if hasattr(args, k)}
    return Scenario(config=config, force_mha=args.mha, **kwargs)


def _option(field: str) -> str:
    """The command-line option behind an error's field; config.json fields are named inside --config."""
    flags = {"prompt_tokens": "--prompt", "output_tokens": "--output", "gpu_memory_utilization": "--gpu-util",
             "allocation": "--alloc", "force_mha": "--mha", "block_size_tokens": "--block-size"}
    if field in flags:
        return flags[field]
    if field in Scenario.__dataclass_fields__:
        return "--" + field.replace("_", "-")
    return f"--config ({field})"


def _summary(r) -> str:
    def ms(x, bound):
        return "n/a" if x is None else f"{x * 1e3:.2f} ms ({bound}-bound)"
    lines = [
        f"{r.model_name} ({r.attention_kind}): {r.kv_formula}",
        f"params {r.params_total / 1e9:.2f}B total, {r.params_active / 1e9:.2f}B active; weights {r.weight_bytes / GIB:.2f} GiB",
        f"KV pool {r.kv_pool_bytes / GIB:.2f} GiB = {r.kv_pool_tokens:,} tokens; {r.max_sequences} sequences fit; "
        f"batch {r.batch} ({r.batch_limited_by})",
        f"TTFT {ms(r.ttft_s, r.prefill_bound)}; ITL {ms(r.itl_s, r.decode_bound)}; "
        f"{r.decode_tokens_per_s:,.0f} tok/s aggregate, {r.per_stream_tokens_per_s:,.1f} tok/s per stream",
    ]
    if r.dollars_per_million_tokens is not None:
        lines.append(f"${r.dollars_per_million_tokens:.3f} per million output tokens")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    result = evaluate(scenario_from_args(args))
    if result.errors:
        e = result.errors[0]
        print(f"kvlab: error: {_option(e['field'])}: {e['message']}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(result.to_dict(), sort_keys=True))
    else:
        print("\n".join(result.log))
        print()
        print(_summary(result))
    return 0




if __name__ == "__main__":
    sys.exit(main())
