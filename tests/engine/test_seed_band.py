"""The rate sweep over several random seeds: the first seed's curve, each seed's knee, and the
p99 TTFT range per rate."""

from kvlab.sim.engine.presets import seed004
from kvlab.sim.engine.sweep import band_from, knee, rate_sweep, seed_band_job

RATES = [0.5, 1.5, 2.0, 2.5, 3.0]


def test_band_matches_the_sweeps_it_summarises():
    cfg = seed004().with_(num_requests=150)
    job = seed_band_job(cfg, RATES, [0, 1, 2])
    job.run()
    sw = band_from(job)
    single = [rate_sweep(cfg.with_(seed=s), RATES) for s in (0, 1, 2)]
    assert [p.ttft_p99_s for p in sw.points] == [p.ttft_p99_s for p in single[0].points]
    assert sw.seed_knees == [knee(s.points) for s in single]
    for i, b in enumerate(sw.band):
        values = [s.points[i].ttft_p99_s for s in single]
        assert (b.rate_per_s, b.ttft_p99_low_s, b.ttft_p99_high_s) == (RATES[i], min(values), max(values))


def test_one_seed_has_no_band():
    job = seed_band_job(seed004().with_(num_requests=50), [1.0, 2.0], [7])
    job.run()
    sw = band_from(job)
    assert sw.band == [] and len(sw.seed_knees) == 1 and len(sw.points) == 2
