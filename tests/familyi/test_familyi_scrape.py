"""Scrapes, counters and rate(): counters stay counters, gauges go stale in an outage."""

from __future__ import annotations

import numpy as np

from bottleneck_operator_dev.familyi.scrape import counters, gauge, mean_activity, rate, schedule

START, END = 1_750_000_000.0, 1_750_003_600.0


def test_counters_only_rise_between_resets_and_restart_from_zero() -> None:
    rng = np.random.default_rng(1)
    ex = schedule(rng, 15.0, START, END, restart=False, reset_at=START + 1800.0)
    rates = rng.uniform(0.0, 5.0, size=(3, ex.times.size))
    c = counters(rates, ex, rng)
    at = int(np.flatnonzero(ex.resets)[0])
    assert ex.resets.sum() == 1
    assert (np.diff(c[:, :at]) >= 0).all() and (np.diff(c[:, at:]) >= 0).all()
    assert (c[:, at] < c[:, at - 1]).all()
    assert np.allclose(c[:, at], rates[:, at] * 15.0)


def test_rate_reads_a_steady_counter_back_across_a_reset() -> None:
    rng = np.random.default_rng(2)
    ex = schedule(rng, 30.0, START, END, restart=False, reset_at=START + 1000.0)
    c = counters(np.full((1, ex.times.size), 7.0), ex, rng)
    grid = START + 30.0 * np.arange(100, dtype=np.float64)
    r = rate(c, ex, grid, 120.0)
    assert np.allclose(r[np.isfinite(r)], 7.0) and np.isfinite(r).all()


def test_an_outage_makes_gauges_stale_and_thins_rate() -> None:
    rng = np.random.default_rng(3)
    ex = schedule(rng, 60.0, START, END, restart=True, reset_at=None)
    assert (~ex.up).sum() >= 1
    grid = START + 15.0 * np.arange(240, dtype=np.float64)
    g = gauge(np.ones((1, ex.times.size)), ex, grid)
    down = ex.times[~ex.up]
    stale = (grid >= down.min()) & (grid < down.max() + 60.0)
    assert np.isnan(g[0, stale]).all() and not np.isnan(g[0, ~stale]).any()
    r = rate(counters(np.ones((1, ex.times.size)), ex, rng), ex, grid, 120.0)
    assert np.isnan(r).any() and np.allclose(r[np.isfinite(r)], 1.0)


def test_pauses_take_their_share_of_each_interval() -> None:
    times = np.array([60.0, 120.0, 180.0])
    act = mean_activity(times, 60.0, np.array([[90.0, 150.0]]))
    assert np.allclose(act, [1.0, 0.5, 0.5])
