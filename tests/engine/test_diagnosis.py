"""Which limit binds a run (sim/engine/diagnosis.py): each rule on the signals it reads, the order the
rules are tried in, and the verdict real runs get."""

from __future__ import annotations

from dataclasses import replace

import pytest
from kvlab.sim.engine import preset, simulate
from kvlab.sim.engine.diagnosis import LIMITS, MET_NONE, QUEUE_SHARE, QUEUED_AT_END, REPEATED_SHARE, WAITING_SHARE, Signals, diagnose, rules
from kvlab.sim.engine.result import EngineResult

from .conftest import ROOMY, small

# A run where every request misses and no rule but the last holds: nothing repeats, nothing queues,
# the loop is closed, the pool has room and the first-token target is the one missed.
QUIET = Signals(completed=100, missed=100, missed_ttft=100, missed_itl=0, prompt_tokens_computed=100_000,
                repeated_prompt_tokens=0, arrival_rate_per_s=None, completed_rate_per_s=1.0, queued_at_last_arrival=0,
                preempted_requests=0,
                waiting_share_pool_full=0.0, waiting_share_batch_full=0.0, mean_queue_s=0.0, mean_ttft_s=1.0)


def limit(**changes) -> str:
    return diagnose(replace(QUIET, **changes)).limit


def test_each_rule_names_its_limit_on_the_signal_it_reads():
    assert limit() == "own_prefill"
    assert limit(missed_ttft=10, missed_itl=90) == "decode_step"
    assert limit(mean_queue_s=QUEUE_SHARE) == "prefill"
    assert limit(waiting_share_batch_full=WAITING_SHARE) == "batch_cap"
    assert limit(waiting_share_pool_full=WAITING_SHARE) == "pool"
    assert limit(preempted_requests=1) == "pool"
    assert limit(arrival_rate_per_s=1.0, queued_at_last_arrival=round(QUEUED_AT_END * 100)) == "arrivals"
    assert limit(queued_at_last_arrival=50) == "own_prefill"  # a closed loop's queue is its clients' own
    assert limit(repeated_prompt_tokens=int(REPEATED_SHARE * 100_000)) == "repeated_prefill"
    assert limit(missed=round((1 - MET_NONE) * 100)) == "none"
    assert limit(completed=0) == ""


def test_just_below_each_threshold_the_next_rule_decides():
    assert limit(mean_queue_s=QUEUE_SHARE * 0.99) == "own_prefill"
    assert limit(waiting_share_batch_full=WAITING_SHARE * 0.99) == "own_prefill"
    assert limit(waiting_share_pool_full=WAITING_SHARE * 0.99) == "own_prefill"
    assert limit(preempted_requests=0, waiting_share_pool_full=0.0) == "own_prefill"
    assert limit(arrival_rate_per_s=1.0, queued_at_last_arrival=round(QUEUED_AT_END * 100) - 1) == "own_prefill"
    assert limit(repeated_prompt_tokens=int(REPEATED_SHARE * 100_000) - 1) == "own_prefill"
    assert limit(missed=round((1 - MET_NONE) * 100) + 1) == "own_prefill"


def test_the_rules_are_tried_in_order():
    """Every signal at once: the first rule wins, and taking its signal away hands the verdict to the next."""
    everything = dict(repeated_prompt_tokens=80_000, arrival_rate_per_s=2.0, queued_at_last_arrival=30, preempted_requests=10,
                      waiting_share_pool_full=0.9, waiting_share_batch_full=0.9, mean_queue_s=0.9, missed_itl=100,
                      missed_ttft=0)
    order = ["repeated_prefill", "arrivals", "pool", "pool", "batch_cap", "prefill", "decode_step"]
    off = {"repeated_prompt_tokens": 0, "arrival_rate_per_s": None, "preempted_requests": 0,
           "waiting_share_pool_full": 0.0, "waiting_share_batch_full": 0.0, "mean_queue_s": 0.0, "missed_itl": 0}
    seen = []
    for name, value in off.items():
        seen.append(limit(**everything))
        everything[name] = value
    assert seen == order
    assert limit(**{**everything, "missed_ttft": 100}) == "own_prefill"


def test_the_verdict_keeps_its_figure_threshold_name_and_reason():
    d = diagnose(replace(QUIET, arrival_rate_per_s=3.0, completed_rate_per_s=2.0, queued_at_last_arrival=30))
    assert (d.limit, d.figure, d.threshold) == ("arrivals", 0.3, QUEUED_AT_END)
    # The closest call among the rules tried: 0.3 against 0.1 (every rule before it is far off).
    assert d.margin == pytest.approx(2.0)
    assert d.name == LIMITS["arrivals"]
    assert d.reason == ("when the last request arrived, 30% of the run's requests were still waiting to start; they "
                        "arrive 1.50x as fast as the engine completes them")
    assert diagnose(replace(QUIET, preempted_requests=26)).reason == "26% of requests were preempted"
    assert d.to_dict()["signals"]["arrival_rate_per_s"] == 3.0


def run(cfg) -> dict:
    return simulate(cfg).binding_limit


def test_a_light_load_on_a_roomy_pool_binds_nothing():
    b = run(small(rate=1.0, scenario=ROOMY, n=100))
    assert b["limit"] == "none" and b["figure"] >= MET_NONE


def test_the_saturation_case_binds_on_the_pool():
    b = run(preset("seed001-saturation"))
    assert b["limit"] == "pool"
    assert b["signals"]["preempted_requests"] > 0


def test_arrivals_far_past_what_one_engine_completes_bind_on_the_load():
    b = run(small(rate=60.0, scenario=ROOMY, n=600))
    assert b["limit"] == "arrivals" and b["figure"] > 0.5
    assert b["signals"]["arrival_rate_per_s"] > 5 * b["signals"]["completed_rate_per_s"]


def test_a_small_cap_on_running_sequences_binds_a_closed_loop_of_many_users():
    b = run(small(n=300, scenario=ROOMY.with_(max_num_seqs=8), arrival="closed", clients=64))
    assert b["limit"] == "batch_cap"
    assert b["signals"]["waiting_share_pool_full"] < WAITING_SHARE


def test_a_shared_prompt_computed_again_binds_until_the_prefix_cache_serves_it():
    """The retrieval preset at a load its prefill cannot carry without the cache: the repeated openings
    are most of the prompt work; with the cache on they are read, not computed, and the rule lets go."""
    busy = preset("prefix-rag").with_(rate_per_s=8.0, num_requests=400, prefix_tokens=6000, prompt_tokens=6500,
                                      prompt_min_tokens=6100, prompt_max_tokens=12000)
    off = run(busy.with_(prefix_caching=False))
    on = run(busy)
    assert off["limit"] == "repeated_prefill" and off["figure"] > 0.6
    assert on["limit"] != "repeated_prefill"
    assert on["signals"]["repeated_prompt_tokens"] < 0.1 * off["signals"]["repeated_prompt_tokens"]


def test_one_user_with_a_tight_per_token_target_binds_on_the_decode_step():
    b = run(small(n=20, scenario=ROOMY, arrival="closed", clients=1, itl_target_s=0.005))
    assert b["limit"] == "decode_step"
    assert b["signals"]["mean_queue_s"] == 0


def test_short_prompts_queued_behind_long_ones_bind_on_prefill():
    b = run(preset("seed000-shared-queue"))
    assert b["limit"] == "prefill" and b["figure"] > 0.5


def test_a_light_load_of_long_prompts_binds_on_their_own_prefill():
    b = run(preset("long-prompts-light"))
    assert b["limit"] == "own_prefill"
    assert b["signals"]["missed_ttft"] > b["signals"]["missed_itl"]


def test_a_run_that_failed_validation_has_no_verdict():
    r = simulate(small(n=0))
    assert not r.ok and r.binding_limit == {}


def test_the_verdict_survives_a_json_round_trip_and_is_printed():
    import json

    r = simulate(preset("seed001-saturation"))
    back = EngineResult.from_dict(json.loads(json.dumps(r.to_dict())))
    assert back.binding_limit == r.binding_limit
    assert r.summary_lines()[-1] == f"binding limit: {LIMITS['pool']} ({r.binding_limit['reason']})"


@pytest.mark.parametrize("key", sorted(LIMITS))
def test_every_limit_has_a_reason(key):
    assert diagnose(replace(QUIET, **{
        "none": {"missed": 0}, "repeated_prefill": {"repeated_prompt_tokens": 90_000},
        "arrivals": {"arrival_rate_per_s": 2.0, "queued_at_last_arrival": 40}, "pool": {"waiting_share_pool_full": 0.8},
        "batch_cap": {"waiting_share_batch_full": 0.8}, "prefill": {"mean_queue_s": 0.5},
        "decode_step": {"missed_ttft": 0, "missed_itl": 100}, "own_prefill": {},
    }[key])).reason


def test_a_short_run_within_capacity_is_not_called_overloaded():
    """Twenty requests finish well after the last arrives (their own service time), so completions trail
    arrivals by far more than 10%; the queue left when arrivals stop is what tells overload apart."""
    b = run(small(n=20, rate=4.0, scenario=ROOMY, output_tokens=400))
    s = b["signals"]
    assert s["arrival_rate_per_s"] > 1.1 * s["completed_rate_per_s"]
    assert b["limit"] != "arrivals" and s["queued_at_last_arrival"] == 0


def test_a_verdict_every_rule_of_which_was_at_zero_has_no_margin_and_stays_json():
    """The fuzz case that found it: one request in flight and a 0.1 ms per-token target. Every rule tried read
    zero except the last, so no distance is finite; the margin is None, not infinity."""
    import json

    b = run(small(n=6, scenario=ROOMY, max_concurrency=1, itl_target_s=0.0001))
    assert b["limit"] == "decode_step" and b["margin"] is None
    json.dumps(b, allow_nan=False)


def test_the_verdict_carries_the_shares_and_the_rules_tried_so_no_view_divides_again():
    s = replace(QUIET, completed=200, missed=60, missed_ttft=20, missed_itl=50, arrival_rate_per_s=6.0, completed_rate_per_s=4.0)
    d = diagnose(s).to_dict()
    assert d["signals"]["missed_itl_share"] == 0.25 and d["signals"]["missed_ttft_share"] == 0.1
    assert d["signals"]["overload"] == 1.5
    tried = d["tried"]
    assert [t["limit"] for t in tried] == [limit for limit, *_ in rules(s)][:len(tried)]
    assert tried[-1]["limit"] == d["limit"] and tried[-1]["figure"] >= tried[-1]["threshold"]
    assert all(t["figure"] < t["threshold"] for t in tried[:-1])
    assert d["verdict"] == f"{d['name']} ({d['reason']})"
