"""sim.block_map: the pool block by block under each allocation rule (lesson A5's figure)."""

from __future__ import annotations

import pytest
from kvlab.sim.admission import reservation_tokens
from kvlab.sim.block_map import FREE, HELD, RESERVED, STRANDED, MapRequest, block_map
from kvlab.sim.errors import InputError
from kvlab.sim.scenario import ALLOCATIONS

REQUESTS = (MapRequest(0, 48, 80), MapRequest(0, 32, 32), MapRequest(0, 64, 96), MapRequest(4, 48, 96),
            MapRequest(8, 32, 64), MapRequest(12, 64, 48))
POOL, BLOCK, MAX_LEN = 36, 16, 256


@pytest.fixture(scope="module")
def maps():
    return {a: block_map(REQUESTS, POOL, BLOCK, MAX_LEN, a) for a in ALLOCATIONS}


def _blocks_of(m, step: int, i: int) -> list[int]:
    return [b for b, o in enumerate(m.owners[step]) if o == i]


@pytest.mark.parametrize("allocation", ["contiguous", "reserve_max"])
def test_a_contiguous_reservation_is_admissions_rule_in_one_run(maps, allocation):
    m = maps[allocation]
    for i, r in enumerate(REQUESTS):
        blocks = _blocks_of(m, m.admitted_step[i], i)
        want = reservation_tokens(allocation, r.prompt_tokens + r.output_tokens, MAX_LEN, BLOCK) // BLOCK
        assert len(blocks) == want and blocks == list(range(blocks[0], blocks[0] + want))


def test_paged_holds_only_the_blocks_its_tokens_fill(maps):
    m = maps["paged"]
    assert RESERVED not in {c for row in m.cells for c in row} and m.preemptions == 0
    i, r = 2, REQUESTS[2]
    for step in range(m.admitted_step[i], m.finished_step[i] + 1):
        tokens = r.prompt_tokens + 1 + step - m.admitted_step[i]
        assert len(_blocks_of(m, step, i)) == -(-tokens // BLOCK)


def test_every_request_runs_its_length_and_the_pool_never_overflows(maps):
    for m in maps.values():
        assert all(len(row) == POOL for row in m.cells)
        assert [f - a + 1 for a, f in zip(m.admitted_step, m.finished_step, strict=True)] == [r.output_tokens for r in REQUESTS]
        assert all(a >= r.arrival_step for a, r in zip(m.admitted_step, REQUESTS, strict=True))


def test_the_three_rules_rank_as_the_lesson_says(maps):
    reserve, exact, paged = maps["reserve_max"], maps["contiguous"], maps["paged"]
    assert (reserve.peak_running, exact.peak_running, paged.peak_running) == (2, 4, 6)
    assert reserve.share(RESERVED) > exact.share(RESERVED) > paged.share(RESERVED) == 0
    # External fragmentation: free blocks enough for the waiting request, in no run long enough.
    assert exact.share(STRANDED) > 0 and reserve.share(STRANDED) == paged.share(STRANDED) == 0
    for step, row in enumerate(exact.cells):
        if STRANDED in row:
            assert FREE not in row and HELD in row and step < max(exact.finished_step)


def test_paged_preempts_the_newest_when_a_block_runs_out():
    m = block_map((MapRequest(0, 16, 40), MapRequest(0, 16, 40)), 4, 16, 64, "paged")
    assert m.preemptions >= 1 and m.finished_step[0] < m.finished_step[1]


@pytest.mark.parametrize("args, field", [
    ((REQUESTS, POOL, BLOCK, MAX_LEN, "pagd"), "allocation"),
    ((REQUESTS, 0, BLOCK, MAX_LEN, "paged"), "pool_blocks"),
    ((REQUESTS, 8, BLOCK, MAX_LEN, "paged"), "pool_blocks"),
    (((MapRequest(0, 200, 100),), POOL, BLOCK, MAX_LEN, "paged"), "requests[0]"),
    (((), POOL, BLOCK, MAX_LEN, "paged"), "requests"),
])
def test_bad_input_names_its_field(args, field):
    with pytest.raises(InputError) as e:
        block_map(*args)
    assert e.value.issues[0].field == field


def test_every_bad_field_is_named_at_once():
    with pytest.raises(InputError) as e:
        block_map(REQUESTS, 0, 0, MAX_LEN, "pagd")
    assert [i.field for i in e.value.issues] == ["allocation", "pool_blocks", "block_tokens"]
