"""Counters count: monotone between resets, and a rate read across a reset stays true."""

from __future__ import annotations

import numpy as np

from bottleneck_operator_dev.familym.observe import counter_of, held, rate_of, restart_masks


def test_counters_are_monotone_between_resets() -> None:
    rng = np.random.default_rng(0)
    rate = rng.uniform(0.0, 1e9, size=(4, 80))
    _gap, reset = restart_masks(rng, 4, 80, chance=1.0)
    counter = counter_of(rate, 30.0, reset, rng)
    assert reset.any()
    for p in range(4):
        drops = np.flatnonzero(np.diff(counter[p]) < 0) + 1
        assert set(drops) <= set(np.flatnonzero(reset[p]))
        assert np.all(counter[p] >= 0)


def test_rate_reads_the_truth_away_from_resets() -> None:
    rng = np.random.default_rng(1)
    rate = np.full((2, 40), 5e6)
    reset = np.zeros((2, 40), dtype=bool)
    reset[0, 20] = True
    seen = rate_of(counter_of(rate, 15.0, reset, rng), 15.0, window=2)
    assert np.isnan(seen[:, 0]).all()
    assert np.allclose(seen[1, 1:], 5e6)
    assert np.allclose(seen[0, 1:20], 5e6)
    assert np.all(seen[0, 20:] >= 0) and np.all(seen[0, 20:] <= 5e6 + 1e-3)


def test_held_gauge_repeats_between_scrapes() -> None:
    values = np.arange(12, dtype=np.float64)[None, :]
    out = held(values, 4, 0)
    assert out[0].tolist() == [0, 0, 0, 0, 4, 4, 4, 4, 8, 8, 8, 8]
    assert held(values, 1, 0) is values
