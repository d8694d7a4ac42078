"""Family P's windows: deterministic, balanced, well-formed, in the contract's names and units."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from bottleneck_operator.contract.signals import SIGNALS, Kind
from bottleneck_operator.contract.verdict import CLASSES, Bottleneck
from bottleneck_operator.contract.window import families_and_coverage
from bottleneck_operator_dev.familyp import FamilyPJob, generate_family_p
from bottleneck_operator_dev.familyp.fleet import BOARDS
from bottleneck_operator_dev.familyp.scrape import DT, counter_values, rate

START = 1_750_000_000.0
BOARD_BY_MODEL = {b.model: b for b in BOARDS.values()}


@pytest.fixture(scope="module")
def jobs() -> list[FamilyPJob]:
    return generate_family_p(11, 60, start=START)


def test_same_seed_same_jobs_other_seed_other_jobs() -> None:
    a, b = generate_family_p(5, 10, start=START), generate_family_p(5, 10, start=START)
    c = generate_family_p(6, 10, start=START)
    assert [(j.name, j.label, j.mechanism, j.tags) for j in a] == [(j.name, j.label, j.mechanism, j.tags) for j in b]
    for x, y in zip(a, b, strict=True):
        for px, py in zip(x.window.pods, y.window.pods, strict=True):
            assert list(px.signals) == list(py.signals)
            for name in px.signals:
                np.testing.assert_array_equal(px.signals[name], py.signals[name])
    assert [j.name for j in a] != [j.name for j in c]


def test_windows_start_where_asked_and_nothing_reads_the_clock() -> None:
    early, late = generate_family_p(9, 5, start=START), generate_family_p(9, 5, start=START + 86_400.0, step=30.0)
    for x, y in zip(early, late, strict=True):
        assert x.window.start == START and x.window.timestamps[0] == START
        np.testing.assert_allclose(np.diff(x.window.timestamps), 30.0)
        np.testing.assert_allclose(y.window.timestamps - x.window.timestamps, 86_400.0)
        for px, py in zip(x.window.pods, y.window.pods, strict=True):
            np.testing.assert_array_equal(px.signals["power_w"], py.signals["power_w"])


def test_the_five_classes_come_in_equal_numbers_with_both_memory_mechanisms(jobs: list[FamilyPJob]) -> None:
    assert Counter(j.label for j in jobs) == {c: 12 for c in CLASSES}
    memory = Counter(j.mechanism for j in jobs if j.label is Bottleneck.MEMORY)
    assert memory == {"host-memory-pressure": 6, "hbm-bandwidth": 6}
    assert [j.label for j in jobs[:10]] != [CLASSES[k % 5] for k in range(10)]  # shuffled, not cycled


def test_windows_are_well_formed(jobs: list[FamilyPJob]) -> None:
    for job in jobs:
        w = job.window
        assert 20 <= w.timestamps.size <= 120 and w.end == w.timestamps[-1]
        assert 1 <= len(w.pods) <= 16 and w.namespace == job.namespace and w.job == job.name
        families, coverage = families_and_coverage(w.pods)
        assert w.quality.families == families and w.quality.coverage == pytest.approx(coverage)
        assert w.quality.scrape_interval is not None and 5.0 <= w.quality.scrape_interval <= 60.0
        for pod in w.pods:
            assert 1 <= pod.gpu_count <= 8 and pod.gpu_model in BOARD_BY_MODEL
            assert set(pod.signals) <= set(SIGNALS)
            assert all(v.shape == w.timestamps.shape for v in pod.signals.values())


def test_values_stay_in_their_units(jobs: list[FamilyPJob]) -> None:
    for job in jobs:
        for pod in job.window.pods:
            board = BOARD_BY_MODEL[pod.gpu_model or ""]
            for name, values in pod.signals.items():
                seen = values[np.isfinite(values)]
                assert (seen >= 0).all(), name
                if SIGNALS[name].unit == "ratio":
                    assert (seen <= 1.0 + 1e-9).all(), (job.name, name)
            s = pod.signals
            assert np.nanmax(s["power_w"], initial=0) <= board.tdp_w
            assert np.nanmax(s["sm_clock_mhz"], initial=0) <= board.max_clock_mhz
            if "power_limit_w" in s:
                assert (np.nan_to_num(s["power_w"]) <= np.nan_to_num(s["power_limit_w"], nan=np.inf) + 1e-6).all()
            for link in ("pcie_rx_bps", "pcie_tx_bps"):
                if link in s:
                    assert np.nanmax(s[link], initial=0) <= board.pcie_bps * 1.001


def test_counters_are_monotone_between_resets_and_rate_reads_through_a_reset() -> None:
    rng = np.random.default_rng(0)
    fine = np.arange(200) * DT
    rates = np.vstack([np.full(200, 10.0), rng.uniform(0, 5, 200)])
    at = np.arange(3, 200, 3)
    reset = 120
    values = counter_values(rates, at, reset, rng)
    steps = np.diff(values, axis=1)
    drop = np.flatnonzero((steps < 0).any(axis=0))
    assert drop.size == 1 and at[drop[0]] < reset <= at[drop[0] + 1]  # one reset, where the container restarted
    assert (np.delete(steps, drop, axis=1) >= 0).all()
    grid = fine[60::6]
    got = rate(values[:1], fine[at], grid, 4 * 15.0)
    seen = got[np.isfinite(got)]
    # Increments between the last scrape before a restart and the restart are lost, as in Prometheus:
    # a reset may only undercount, and only in the ranges that span it.
    assert seen.size > 0.9 * got.size and (seen > 0).all() and (seen <= 10.0 + 1e-9).all()
    assert np.isclose(seen, 10.0).mean() > 0.85


def test_only_counters_pass_through_rate_the_window_carries_no_raw_totals(jobs: list[FamilyPJob]) -> None:
    # A raw counter total would dwarf its rate: the cumulated cpu seconds of a job are >> its cores.
    for job in jobs:
        for pod in job.window.pods:
            for name in ("cpu_cores", "sc_cpu_cores"):
                if name in pod.signals:
                    assert SIGNALS[name].kind is Kind.COUNTER
                    assert np.nanmax(pod.signals[name], initial=0) < 600


@pytest.mark.parametrize(("n", "step"), [(-1, 30.0), (5, 0.0), (5, float("nan"))])
def test_bad_arguments_are_refused_clearly(n: int, step: float) -> None:
    with pytest.raises(ValueError, match="n must be"):
        generate_family_p(1, n, start=START, step=step)


def test_other_steps_keep_the_grid() -> None:
    for job in generate_family_p(3, 5, start=START, step=15.0):
        np.testing.assert_allclose(np.diff(job.window.timestamps), 15.0)
        assert job.window.step == 15.0
