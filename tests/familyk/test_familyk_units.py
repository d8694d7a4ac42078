"""Family K's signals are in the contract's units, and its counters behave like counters."""

from __future__ import annotations

import numpy as np
import pytest

from bottleneck_operator.contract.signals import SIGNALS
from bottleneck_operator_dev.familyk import FamilyKJob, generate_family_k
from bottleneck_operator_dev.familyk.hardware import BOARDS
from bottleneck_operator_dev.familyk.observe import counter_of, rate_of

BOARD = {b.model: b for b in BOARDS}


@pytest.fixture(scope="module")
def jobs() -> list[FamilyKJob]:
    return generate_family_k(23, 50, start=1_700_000_000.0, step=15.0)


def test_ratios_are_fractions_and_rates_are_not_negative(jobs: list[FamilyKJob]) -> None:
    for job in jobs:
        for pod in job.window.pods:
            for name, values in pod.signals.items():
                seen = values[np.isfinite(values)]
                assert (seen >= 0).all(), name
                if SIGNALS[name].unit == "ratio":
                    assert (seen <= 1.0).all(), name


def test_power_and_clock_stay_within_the_board(jobs: list[FamilyKJob]) -> None:
    checked = 0
    for job in jobs:
        for pod in job.window.pods:
            board = BOARD[pod.gpu_model or ""]
            power = pod.signals["power_w"]
            assert np.nanmax(power) <= board.tdp_w
            assert np.nanmin(power) >= board.idle_w * 0.9
            assert np.nanmax(pod.signals["sm_clock_mhz"]) <= board.max_clock
            if "power_limit_w" in pod.signals:
                assert (power <= pod.signals["power_limit_w"] + 1e-6)[np.isfinite(power)].all()
                checked += 1
    assert checked > 0


def test_fb_and_limits_are_plausible(jobs: list[FamilyKJob]) -> None:
    for job in jobs:
        for pod in job.window.pods:
            if "mem_limit_bytes" in pod.signals and np.isfinite(pod.signals["mem_limit_bytes"]).any():
                limit = np.nanmax(pod.signals["mem_limit_bytes"])
                assert np.nanmax(pod.signals["mem_working_set_bytes"]) <= limit * 1.05
            if "node_cpus" in pod.signals:
                assert np.nanmax(pod.signals["node_cpus"]) >= 16


def test_a_counter_is_monotone_between_resets_and_rate_reads_it_back() -> None:
    rng = np.random.default_rng(0)
    true = np.full(40, 5e6)
    counter = counter_of(true, 15.0, 25, rng)
    assert (np.diff(counter[:25]) >= 0).all() and (np.diff(counter[25:]) >= 0).all()
    assert counter[25] < counter[24]  # the restart
    read = rate_of(counter, 15.0, 1)
    assert read[1:25] == pytest.approx(np.full(24, 5e6))
    assert (read >= 0).all()
    smoothed = rate_of(counter, 15.0, 4)
    assert smoothed[5:20] == pytest.approx(np.full(15, 5e6))


def test_restarted_exporters_leave_a_gap(jobs: list[FamilyKJob]) -> None:
    restarted = [j for j in jobs if "restart:dcgm" in j.tags]
    assert restarted, "no job of this draw restarted dcgm-exporter"
    for job in restarted:
        assert any(np.isnan(p.signals["gpu_util"]).any() for p in job.window.pods)
        assert job.window.quality.coverage < 1.0
