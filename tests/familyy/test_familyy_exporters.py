"""Family Y's exporters: counters integrate and reset, dcgm-exporter averages, and each class looks its part."""

from __future__ import annotations

import numpy as np
import pytest

from bottleneck_operator.contract.signals import Family
from bottleneck_operator.contract.verdict import CLASSES, Bottleneck, Mechanism
from bottleneck_operator_dev.familyy import FamilyYJob, generate_family_y
from bottleneck_operator_dev.familyy.exporters import Exporters, _Reader
from bottleneck_operator_dev.familyy.truth import DT

START = 1_700_000_000.0


@pytest.fixture(scope="module")
def jobs() -> list[FamilyYJob]:
    return generate_family_y(seed=21, n=60, start=START)


def _reader(scrape: float = 15.0) -> tuple[_Reader, np.ndarray, np.ndarray]:
    ex = Exporters(scrape, 30.0, frozenset(), 0.0, None, None, 2)
    grid = np.arange(-600.0, 3600.0 + DT, DT)
    times = np.arange(-590.0, 3600.0, scrape)
    at = np.arange(0.0, 3600.0, 30.0)
    return _Reader(grid, times, at, 30.0, ex, START), grid, times


def test_counters_are_monotone_between_resets_and_rate_reads_the_true_rate() -> None:
    r, grid, times = _reader()
    rate = np.where(grid < 1800, 1e6, 3e6)
    raw = r.raw_counter(rate, reset=1000.0, offset=5e9)
    before, after = raw[times < 1000.0], raw[times >= 1000.0]
    assert np.all(np.diff(before) >= 0) and np.all(np.diff(after) >= 0)
    assert after[0] < before[-1]  # the reset
    got = r.counters({"c": rate}, reset=1000.0)["c"]
    at = np.arange(0.0, 3600.0, 30.0)
    calm = (np.abs(at - 1000.0) > 120) & (np.abs(at - 1800.0) > 120)
    truth = np.where(at < 1800, 1e6, 3e6)
    np.testing.assert_allclose(got[calm], truth[calm], rtol=0.02)


def test_dcgm_fields_are_averaged_over_the_collection_interval() -> None:
    r, grid, _ = _reader(scrape=15.0)
    square = np.where((grid // 10) % 2 == 0, 1.0, 0.0)  # 10 s on, 10 s off
    averaged = r.averaged(square, collect=30.0, phase=0.0)
    assert np.nanmax(np.abs(averaged - 0.5)) < 0.2  # a 30 s mean, not an instant
    instant = r.gauge(square)
    assert np.nanmax(np.abs(instant - 0.5)) > 0.4


def _median(job: FamilyYJob, name: str) -> float | None:
    vals = [np.nanmedian(p.signals[name]) for p in job.window.pods if name in p.signals]
    return float(np.max(vals)) if vals else None


def test_cpu_throttled_jobs_are_throttled_and_host_pressure_jobs_swap(jobs: list[FamilyYJob]) -> None:
    throttled = [j for j in jobs if j.mechanism == Mechanism.THROTTLED.value]
    pressured = [j for j in jobs if j.mechanism == Mechanism.HOST_MEMORY_PRESSURE.value]
    assert throttled and pressured
    for j in throttled:
        frac = _median(j, "cpu_throttled_frac") or _median(j, "sc_throttled_frac")
        if frac is not None:
            assert frac > 0.5
    for j in pressured:
        faults = _median(j, "sc_majfault_ps") or _median(j, "node_majfault_ps")
        if faults is not None:
            assert faults > 1000.0  # swap-ins or file pages back from disk, far above the ~20/s baseline


def test_gpu_bound_jobs_keep_the_gpu_busier_than_io_and_cpu_bound_ones(jobs: list[FamilyYJob]) -> None:
    def busy(cls: Bottleneck) -> float:
        return float(np.median([_median(j, "gpu_util") for j in jobs if j.label is cls]))

    assert busy(Bottleneck.GPU) > busy(Bottleneck.IO)
    assert busy(Bottleneck.GPU) > busy(Bottleneck.CPU)
    assert busy(Bottleneck.GPU) > 0.6


def test_rdma_traffic_shows_only_to_the_infiniband_collector(jobs: list[FamilyYJob]) -> None:
    seen = 0
    for j in jobs:
        if not any(t.startswith(("fabric:ib", "fabric:roce")) for t in j.tags):
            continue
        for p in j.window.pods:
            if Family.NODE_IB.value and "ib_rx_bps" in p.signals and "sc_net_rx_bps" in p.signals:
                ib, own = np.nanmedian(p.signals["ib_rx_bps"]), np.nanmedian(p.signals["sc_net_rx_bps"])
                if ib > 1e8:
                    assert own < ib  # the collective's bytes bypass the pod's interfaces
                    seen += 1
    assert seen > 0


def test_hard_and_easy_cases_in_every_class() -> None:
    jobs = generate_family_y(seed=5, n=100, start=START)
    hard = {j.label for j in jobs if "hard" in j.tags}
    easy = {j.label for j in jobs if "easy" in j.tags}
    assert hard == easy == set(CLASSES)
    close = {j.label for j in jobs if "close-shadow-prices" in j.tags or "near-binding-rival" in j.tags}
    assert len(close) >= 4  # not only neighbours: second constraints near the first in most classes
