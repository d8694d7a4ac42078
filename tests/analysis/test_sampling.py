"""The sampling rules of the window contract: rate() and last_over_time() computed the way Prometheus does.

Expected values are worked out by hand from the rules (comments show the arithmetic); the
cross-check against a real Prometheus is in tests/telemetry/test_consistency.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from bottleneck_operator.contract.sampling import (
    DEFAULT_SCRAPE_INTERVAL,
    Sampler,
    counter_rate,
    gauge_window,
    last_sample,
    range_milliseconds,
    rate_range,
)


def test_rate_range_and_gauge_window() -> None:
    assert rate_range(30.0, 15.0) == 60.0  # 4 intervals win over step + interval
    assert rate_range(30.0, 60.0) == 240.0
    assert rate_range(120.0, 15.0) == 135.0  # a long step: step + interval
    assert rate_range(30.0, None) == rate_range(30.0, 0.0) == 4 * DEFAULT_SCRAPE_INTERVAL
    assert gauge_window(30.0, 60.0) == pytest.approx(66.0)
    assert gauge_window(30.0, 15.0) == pytest.approx(33.0)
    assert gauge_window(30.0, None) == pytest.approx(1.1 * DEFAULT_SCRAPE_INTERVAL)


def test_range_milliseconds_rounds_up() -> None:
    assert range_milliseconds(60.0) == 60000
    assert range_milliseconds(60.0004) == 60001
    assert range_milliseconds(gauge_window(30.0, 45.0)) == 49501  # 1.1 x 45 = 49.50000000000001 s
    assert range_milliseconds(0.0) == 1


def test_linear_counter_gives_its_slope_when_extrapolated_to_both_edges() -> None:
    t = np.arange(3.0, 200.0, 10.0)  # samples at 3, 13, ...: never on a range edge
    v = 1000.0 + 5.0 * t
    at = np.array([100.0, 150.0, 190.0])
    # e.g. T=100, R=60: samples 43..93 (span 50 s), 3 s and 7 s from the edges (< 1.1 x 10 s)
    np.testing.assert_allclose(counter_rate(t, v, at, 60.0), [5.0, 5.0, 5.0], rtol=1e-12)


def test_counter_reset_counts_as_a_restart_from_zero() -> None:
    t = np.arange(0.0, 60.0, 10.0)
    v = np.array([100.0, 110.0, 120.0, 5.0, 15.0, 25.0])
    # Prometheus 2: [0, 50] holds all six samples; increase 25 - 100 + 120 (the value before the drop)
    assert counter_rate(t, v, [50.0], 50.0)[0] == pytest.approx(45.0 / 50.0)
    # Prometheus 3: (0, 50] drops t=0; increase 25 - 110 + 120 = 35 over 40 s, extrapolated 10 s to the start
    assert counter_rate(t, v, [50.0], 50.0, prometheus_major=3)[0] == pytest.approx(35.0 * (50.0 / 40.0) / 50.0)


def test_series_ending_inside_the_range_is_extended_by_half_an_interval() -> None:
    t = np.arange(0.0, 40.0, 10.0)  # 0..30, then nothing
    v = 1000.0 + 2.0 * t
    # T=100, R=100: increase 60 over 30 s; the end is 70 s away (>= 11 s): +5 s only
    assert counter_rate(t, v, [100.0], 100.0)[0] == pytest.approx(60.0 * (35.0 / 30.0) / 100.0)


def test_counter_is_not_extrapolated_below_zero() -> None:
    t = np.arange(45.0, 300.0, 15.0)
    v = 100.0 + 10.0 * (t - 45.0)
    # T=120, R=100: samples 45..120, increase 750 over 75 s; the start is 25 s away (>= 16.5 s), and
    # the counter was zero 10 s before its first sample (75 x 100 / 750).
    # Prometheus 2 caps first, then that 10 s is under the threshold: extrapolated by 10 s.
    assert counter_rate(t, v, [120.0], 100.0)[0] == pytest.approx(750.0 * (85.0 / 75.0) / 100.0)
    # Prometheus 3 takes half an interval (7.5 s) first, which the 10 s cap leaves alone.
    assert counter_rate(t, v, [120.0], 100.0, prometheus_major=3)[0] == pytest.approx(750.0 * (82.5 / 75.0) / 100.0)
    # a counter that starts high is extrapolated the full half interval in both
    big = v + 1e6
    assert counter_rate(t, big, [120.0], 100.0)[0] == pytest.approx(750.0 * (82.5 / 75.0) / 100.0)


def test_gap_inside_the_range_keeps_the_rate() -> None:
    t = np.array([0.0, 10.0, 20.0, 50.0, 60.0])  # 30 and 40 missed
    v = 1000.0 + t
    # [0, 60] is covered edge to edge: the rate is the slope whatever the spacing
    assert counter_rate(t, v, [60.0], 60.0)[0] == pytest.approx(1.0)


def test_fewer_than_two_samples_is_nan() -> None:
    t = np.array([0.0, 10.0, 100.0, 110.0])
    v = np.array([0.0, 10.0, 100.0, 110.0])
    r = counter_rate(t, v, [5.0, 10.0, 90.0, 100.0, 110.0], 40.0)
    # T=5: one sample; T=10: two; T=90: none in [50, 90]; T=100: one; T=110: two
    assert np.isnan(r[[0, 2, 3]]).all()
    assert np.isfinite(r[[1, 4]]).all()
    assert np.isnan(counter_rate([5.0], [1.0], [5.0, 10.0], 30.0)).all()
    assert counter_rate(np.empty(0), np.empty((3, 0)), [1.0, 2.0], 30.0).shape == (3, 2)


def test_vectorised_over_series_and_times() -> None:
    rng = np.random.default_rng(4)
    t = np.cumsum(rng.uniform(9.0, 11.0, 80))
    v = np.cumsum(rng.uniform(0.0, 3.0, (2, 3, 80)), axis=-1)
    v[1, 2, 40:] -= v[1, 2, 39]  # a reset in one series only
    at = np.arange(50.0, t[-1] + 60.0, 7.0)
    rates = counter_rate(t, v, at, 45.0)
    assert rates.shape == (2, 3, at.size)
    for i in range(2):
        for j in range(3):
            for k in (0, at.size // 2, at.size - 1):
                np.testing.assert_array_equal(rates[i, j, k], counter_rate(t, v[i, j], [at[k]], 45.0)[0])
    assert (rates[np.isfinite(rates)] >= 0).all()  # resets undone: a counter never falls


def test_one_sampler_serves_many_series() -> None:
    rng = np.random.default_rng(5)
    t = np.cumsum(rng.uniform(14.0, 16.0, 60))
    at = np.arange(30.0, t[-1], 30.0)
    s = Sampler(t, at, range_seconds=60.0, window=33.0)
    for _ in range(3):
        v = np.cumsum(rng.uniform(0.0, 5.0, 60))
        np.testing.assert_array_equal(s.rate(v), counter_rate(t, v, at, 60.0))
        np.testing.assert_array_equal(s.last(v), last_sample(t, v, at, 33.0))
    with pytest.raises(ValueError, match="last axis"):
        s.rate(np.zeros(59))


def test_last_sample_within_the_window() -> None:
    t = np.array([0.0, 10.0, 20.0, 60.0])
    g = np.array([[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]])
    out = last_sample(t, g, [0.0, 15.0, 29.0, 30.0, 31.0, 60.0, 100.0], 10.0)
    expected_row0 = [1.0, 2.0, 3.0, 3.0, np.nan, 4.0, np.nan]  # T=30: 20 is exactly 10 s old, still in (2.x)
    np.testing.assert_array_equal(out[0], expected_row0)
    np.testing.assert_array_equal(out[1], [5.0, 6.0, 7.0, 7.0, np.nan, 8.0, np.nan])
    assert np.isnan(last_sample(t, g, [30.0], 10.0, prometheus_major=3)).all()  # left-open in 3.x
    assert np.isnan(last_sample(t, g, [-1.0], 10.0)).all()  # before the first sample


def test_invalid_input_is_refused() -> None:
    with pytest.raises(ValueError, match="increasing"):
        counter_rate([0.0, 10.0, 10.0], [1.0, 2.0, 3.0], [10.0], 30.0)
    with pytest.raises(ValueError, match="last axis"):
        last_sample([0.0, 10.0], [1.0, 2.0, 3.0], [10.0], 30.0)
    with pytest.raises(ValueError, match="prometheus_major"):
        counter_rate([0.0, 10.0], [1.0, 2.0], [10.0], 30.0, prometheus_major=1)
