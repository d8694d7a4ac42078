"""Every window is what the data layer could hand over: contract names, shapes, units, counters."""

from __future__ import annotations

import numpy as np

from bottleneck_operator.contract.signals import CONTEXT_SIGNALS, SIGNAL_NAMES, SIGNALS, Kind
from bottleneck_operator.contract.window import families_and_coverage
from bottleneck_operator_dev.familyh import FamilyHJob
from bottleneck_operator_dev.familyh.hardware import BOARDS
from bottleneck_operator_dev.familyh.scrape import counters

BOARD_BY_MODEL = {b.model_name: b for b in BOARDS.values()}


def test_only_contract_signals_one_value_per_timestamp(family: list[FamilyHJob]) -> None:
    allowed = set(SIGNAL_NAMES) | set(CONTEXT_SIGNALS)
    for job in family:
        for pod in job.window.pods:
            assert set(pod.signals) <= allowed
            for name in pod.signals:
                values = pod.signals[name]
                assert values.shape == job.window.timestamps.shape
                assert values.dtype == np.float64


def test_values_are_in_their_units_ranges(family: list[FamilyHJob]) -> None:
    for job in family:
        for pod in job.window.pods:
            for name in pod.signals:
                v = pod.signals[name][np.isfinite(pod.signals[name])]
                unit = SIGNALS[name].unit
                assert np.all(v >= 0.0), name
                if unit == "ratio":
                    assert np.all(v <= 1.0), name


def test_power_stays_under_the_enforced_limit_and_the_board(family: list[FamilyHJob]) -> None:
    seen = 0
    for job in family:
        for pod in job.window.pods:
            if pod.gpu_model is None:
                continue
            board = BOARD_BY_MODEL[pod.gpu_model]
            power = pod.signals["power_w"]
            assert np.nanmax(power, initial=0.0) <= board.tdp_w
            assert np.nanmax(pod.signals["sm_clock_mhz"], initial=0.0) <= board.boost_mhz
            if "power_limit_w" in pod.signals:
                seen += 1
                both = np.isfinite(power) & np.isfinite(pod.signals["power_limit_w"])
                assert np.all(power[both] <= pod.signals["power_limit_w"][both])
    assert seen > 0


def test_quality_says_what_the_window_holds(family: list[FamilyHJob]) -> None:
    for job in family:
        families, coverage = families_and_coverage(job.window.pods)
        q = job.window.quality
        assert q.families == families
        assert q.coverage == coverage
        assert q.scrape_interval is not None and 5.0 <= q.scrape_interval <= 60.0


def test_counter_signals_are_rates_that_survive_resets(family: list[FamilyHJob]) -> None:
    restarted = [j for j in family if "container-restart" in j.tags or "ib-counter-reset" in j.tags]
    assert restarted
    for job in restarted:
        for pod in job.window.pods:
            for name in pod.signals:
                if SIGNALS[name].kind is Kind.COUNTER:
                    finite = pod.signals[name][np.isfinite(pod.signals[name])]
                    assert np.all(finite >= 0.0), name


def test_raw_counters_are_monotone_between_resets() -> None:
    rng = np.random.default_rng(0)
    grid = np.arange(0.0, 600.0, 5.0)
    rates = np.abs(rng.normal(100.0, 30.0, (3, grid.size)))
    times = np.arange(1.0, 590.0, 15.0)
    values = counters(grid, rates, times, rng, resets=(200.0, 410.0))
    drops = np.diff(values, axis=-1) < 0
    # the only drops are at the resets, for every series
    where = {int(i) for i in np.nonzero(drops.any(axis=0))[0]}
    expected = {int(np.searchsorted(times, 200.0)) - 1, int(np.searchsorted(times, 410.0)) - 1}
    assert where == expected
    assert np.all(values >= 0.0)


def test_a_saturating_counter_stops_at_its_ceiling() -> None:
    rng = np.random.default_rng(1)
    grid = np.arange(0.0, 300.0, 5.0)
    values = counters(grid, np.full((1, grid.size), 1e9), np.arange(0.0, 290.0, 10.0), rng, ceiling=5e10)
    assert np.all(values <= 5e10)
    assert np.all(np.diff(values) >= 0.0)
