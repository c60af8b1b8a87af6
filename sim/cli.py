"""`python -m kvlab.sim` / `kvlab`: evaluate one scenario from the command line.

Prints the engine log and a summary, or with --json one JSON object of the Result. Bad input
exits with status 2 and one line per problem, each naming the option and its allowed range
(sim/cliargs.py: option names, aliases, reading and reporting).
"""

from __future__ import annotations

import argparse
import json
import sys

from . import catalog
from .cliargs import Parser, flag, parse, report
from .evaluate import evaluate
from .profiles import profile_names
from .scenario import ALLOCATIONS, ENGINES, FIELDS, TP_SIZES, Scenario
from .spec_heads import SPEC_METHODS
from .units import GIB, KV_DTYPES, WEIGHT_DTYPES
from .userfile import CONFIG_JSON, FileProblem

PROG = "kvlab"
# Old option names, accepted for one release with a notice (sim.cliargs). Every other option is
# its Scenario field's name with dashes, as in `kvlab engine`.
RENAMED = {"prompt_tokens": ("--prompt",), "output_tokens": ("--output",), "gpu_memory_utilization": ("--gpu-util",),
           "block_size_tokens": ("--block-size",), "allocation": ("--alloc",), "force_mha": ("--mha",)}
NUMBERS = ("gpu_memory_gib", "prompt_tokens", "output_tokens", "concurrency", "gpu_memory_utilization", "block_size_tokens",
           "max_model_len", "max_num_batched_tokens", "max_num_seqs", "mem_fraction_static", "kv_cache_free_gpu_mem_fraction",
           "kv_cache_max_tokens", "dollars_per_gpu_hour")
# The speculative decoding options, shared with `kvlab engine` (add_spec_options).
SPEC_FIELDS = ("spec_method", "spec_draft_model", "spec_tokens", "spec_acceptance")
UNSET = {"gpu_memory_gib": "the GPU's own", "max_model_len": "the model's context (textbook: prompt + output)",
         "dollars_per_gpu_hour": "no cost shown"}


def build_parser(prog: str = PROG, epilog: str | None = None) -> Parser:
    # `kvlab` passes its list of commands, shown above the options.
    description = "Evaluate one LLM serving configuration: KV cache, HBM budget, roofline."
    p = Parser(prog=prog, description=f"{epilog}\n\n{description}" if epilog else description,
               usage=f"{prog} COMMAND [options]  or  {prog} [options]" if epilog else None,
               formatter_class=argparse.RawDescriptionHelpFormatter)
    src = p.add_mutually_exclusive_group()
    src.add_argument("--model", default="qwen3-8b", help=f"catalog model id ({', '.join(catalog.model_ids())}; default %(default)s)")
    src.add_argument("--config", metavar="PATH", help="a Hugging Face config.json file instead of --model "
                     "(example: examples/config.json in the repository)")
    p.add_argument("--gpu", default="h100-sxm", help=f"catalog GPU id ({', '.join(catalog.gpu_ids())}; default %(default)s)")
    defaults = Scenario()
    for name in NUMBERS:
        b = FIELDS[name]
        default = getattr(defaults, name)
        unset = None if default is not None or "unset:" in b.help else UNSET.get(name)
        p.add_option(name, aliases=RENAMED.get(name, ()), bound=b, default=default, unset=unset)
    p.add_option("tp", choices=TP_SIZES, integer_choices=True, default=1, help="tensor-parallel size")
    p.add_option("attention_dp", choices=TP_SIZES, integer_choices=True, default=1,
                 help="attention data-parallel groups over the tp GPUs, each with its own requests and cache (SGLang "
                      "--enable-dp-attention --dp N, vLLM --data-parallel-size N); must divide --tp")
    p.add_option("pp", choices=TP_SIZES, integer_choices=True, default=1,
                 help="pipeline stages of --tp GPUs each, every stage a run of the layers (vLLM --pipeline-parallel-size)")
    p.add_option("kv_dtype", choices=KV_DTYPES, default="bf16", help="KV cache element type")
    p.add_option("weight_dtype", choices=WEIGHT_DTYPES, default="bf16", help="weight element type")
    p.add_option("allocation", aliases=RENAMED["allocation"], choices=ALLOCATIONS, default="contiguous",
                 help="KV allocation")
    p.add_option("engine", choices=ENGINES, default="textbook", help="memory accounting")
    p.add_option("engine_version", help="engine release whose rules apply, major.minor (vllm 0.5 to 0.19, sglang 0.3 "
                 "to 0.5, tensorrt-llm 0.14 to 1.2; unset: the current release)")
    p.add_argument("--force-mha", dest="force_mha", action="store_true", help="force multi-head attention (kv_heads := q_heads)")
    p.add_argument("--mha", dest="force_mha", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--expert-parallel", dest="expert_parallel", action="store_true",
                   help="MoE models: whole experts on each of the tp GPUs (vLLM --enable-expert-parallel, SGLang --ep-size)")
    p.renamed["--mha"] = "--force-mha"
    add_spec_options(p, defaults)
    p.add_argument("--profile", default="textbook", help=f"efficiency profile ({', '.join(profile_names())}; default %(default)s)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    return p


def add_spec_options(p: Parser, defaults: Scenario | None) -> None:
    """The speculative decoding options of `kvlab` and `kvlab engine`, one table for both.
    `defaults` None: the options default to unset (`kvlab engine` keeps the preset's values)."""
    p.add_option("spec_method", choices=SPEC_METHODS, default=defaults.spec_method if defaults is not None else None,
                 help="speculative decoding: where the proposals come from: draft (the model --spec-draft-model names), "
                      "eagle (an EAGLE head built from the target's dimensions), mtp (the target's own MTP layers)")
    p.add_argument("--spec-draft-model", dest="spec_draft_model", metavar="MODEL",
                   help="speculative decoding with --spec-method draft: a catalog model id as the draft model, sharing the "
                        "target's vocabulary (unset: no speculative decoding)")
    for name in ("spec_tokens", "spec_acceptance"):
        p.add_option(name, bound=FIELDS[name], default=getattr(defaults, name) if defaults is not None else None)


def read_config(path: str) -> tuple[dict | None, list[str]]:
    """(config, []) or (None, problems) for a --config file (sim.userfile: its size, text and shape)."""
    try:
        return CONFIG_JSON.read(path), []
    except FileProblem as e:
        return None, [f"--config: {line}" for line in e.lines()]


def scenario_from_args(args: argparse.Namespace, config: dict | None = None) -> Scenario:
    names = set(Scenario.__dataclass_fields__) - {"config"}
    kwargs = {k: getattr(args, k) for k in names if hasattr(args, k)}
    return Scenario(config=config, **kwargs)


def _option(field: str) -> str:
    """The command-line option behind an error's field; config.json fields are named inside --config."""
    if field in Scenario.__dataclass_fields__:
        return flag(field)
    return f"--config ({field})"


def _summary(r) -> str:
    def ms(x, bound):
        return "n/a" if x is None else f"{x * 1e3:.2f} ms ({bound}-bound)"
    lines = [
        f"{r.model_name} ({r.attention_kind}): {r.kv_formula}",
        f"params {r.params_total / 1e9:.2f}B total, {r.params_active / 1e9:.2f}B active; weights {r.weight_bytes / GIB:.2f} GiB",
        f"KV pool {r.kv_pool_bytes / GIB:.2f} GiB = {r.kv_pool_tokens:,} tokens; {r.max_sequences} sequences fit; "
        f"batch {r.batch} ({r.batch_limited_by})",
    ]
    if r.refusal is not None:  # a valid question whose answer is that nothing runs: no latency to print
        lines.append(f"Nothing runs ({r.refusal['reason']}): {r.refusal['message']}")
    else:
        lines.append(f"TTFT {ms(r.ttft_s, r.prefill_bound)}; ITL {ms(r.itl_s, r.decode_bound)}; "
                     f"{r.decode_tokens_per_s:,.0f} tok/s in decode steps (all streams), {r.per_stream_tokens_per_s:,.1f} tok/s "
                     f"per stream; {r.served_tokens_per_s:,.0f} tok/s with the prefills")
    if r.spec_speedup is not None:
        lines.append(f"speculative decoding with {r.spec_draft_name}: {r.spec_tokens_per_step:.2f} tokens a step, "
                     f"ITL {r.spec_speedup:.2f}x faster than without a draft")
    if r.served_dollars_per_million_tokens is not None:
        lines.append(f"${r.served_dollars_per_million_tokens:.3f} per million output tokens, prefills included "
                     f"(${r.decode_dollars_per_million_tokens:.3f} for the decode steps alone)")
    return "\n".join(lines)


def main(argv: list[str] | None = None, prog: str = PROG, epilog: str | None = None) -> int:
    parser = build_parser(prog, epilog)
    parsed = parse(parser, list(sys.argv[1:] if argv is None else argv))
    report(prog, parsed.notices, "note")
    problems = parsed.problems
    if parsed.args is None:
        report(prog, problems)
        return 2
    args = parsed.args
    config = None
    if args.config is not None:
        config, more = read_config(args.config)
        problems += more
    bad = {p.split(":", 1)[0] for p in problems}
    result = evaluate(scenario_from_args(args, config))
    # The simulator's own checks of the settings that parsed, after the ones that did not.
    problems += [f"{_option(e['field'])}: {e['message']}" for e in result.errors if _option(e["field"]) not in bad]
    if problems:
        report(prog, problems)
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
