"""Family V's model: exact MVA, the label from halved demands, counters, and each class's physics."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from bottleneck_operator.contract.sampling import Sampler
from bottleneck_operator.contract.verdict import Bottleneck, Mechanism
from bottleneck_operator_dev.familyv import FamilyVJob
from bottleneck_operator_dev.familyv.exporters import Scrapes, Timeline, counter_values
from bottleneck_operator_dev.familyv.model import (
    DECODE,
    SPEEDS,
    STORAGE_BW,
    TRAINER,
    Rank,
    Resource,
    label,
    mechanism_of,
    parts,
    solve_ranks,
    station_demands,
)
from bottleneck_operator_dev.familyv.mva import Kind, solve


def _rank(**over: float | int | bool) -> Rank:
    """A ResNet-like rank on one A100 where nothing is near binding but the GPU's math."""
    base = Rank(
        read_bytes=28e6,
        req_bytes=128e3,
        storage_bw=3.0e9,
        storage_lat=100e-6,
        storage_conc=2.0,
        decode_cs=0.05,
        workers=8,
        prefetch=2,
        cpu_quota=math.inf,
        cpu_avail=30.0,
        swap_s=0.0,
        h2d_bytes=40e6,
        pcie_bw=25e9,
        pinned=True,
        flops_mm=3.1e12,
        bytes_mm=6e9,
        flops_el=1e9,
        bytes_el=4e9,
        peak=200e12,
        hbm_bw=1.7e12,
        launch_s=3e-3,
        intra_s=0.0,
        intra_over_pcie=False,
        inter_s=0.0,
        overlap=0.8,
        exposed_floor=0.1,
    )
    return replace(base, **over)  # type: ignore[arg-type]


def test_mva_matches_closed_forms() -> None:
    # one think (delay) station Z = 1 and one queue D = 0.5 with three customers: the exact recursion
    sol = solve([[1.0, 0.5]], (Kind.DELAY, Kind.QUEUE), 3)
    assert sol.throughput[0] == pytest.approx(30.0 / 19.0)
    assert sol.queue[0].sum() == pytest.approx(3.0)  # Little's law over the whole cycle
    assert sol.utilisation[0, 1] == pytest.approx(sol.throughput[0] * 0.5)  # utilisation law
    # a load-dependent station with alpha(j) = 1 is a queue; with alpha(j) = j it is a delay
    d = [[1.0, 0.5, 0.7]]
    ld = (Kind.DELAY, Kind.QUEUE, Kind.LOAD_DEPENDENT)
    as_queue = solve(d, (Kind.DELAY, Kind.QUEUE, Kind.QUEUE), 4).throughput
    assert solve(d, ld, 4, np.ones((1, 1, 4))).throughput == pytest.approx(as_queue)
    as_delay = solve([[1.7, 0.5]], (Kind.DELAY, Kind.QUEUE), 4).throughput
    assert solve(d, ld, 4, np.arange(1.0, 5.0).reshape(1, 1, 4)).throughput == pytest.approx(as_delay)
    sol = solve(d, ld, 4, np.minimum(np.arange(1.0, 5.0), 2.0).reshape(1, 1, 4))
    assert sol.marginal[0, 0].sum() == pytest.approx(1.0)
    with pytest.raises(ValueError, match="population"):
        solve(d, ld, 0, np.ones((1, 1, 1)))


@pytest.mark.parametrize(
    ("over", "expected"),
    [
        ({}, Resource.COMPUTE),
        ({"storage_bw": 0.2e9}, Resource.STORAGE),
        ({"decode_cs": 2.0, "cpu_quota": 4.0}, Resource.CPU),
        ({"swap_s": 0.5}, Resource.HOST_MEMORY),
        ({"h2d_bytes": 40e6, "pinned": False, "pcie_bw": 0.3e9}, Resource.PCIE),
        ({"intra_s": 0.2}, Resource.NVLINK),
        ({"inter_s": 0.3}, Resource.NETWORK),
        ({"bytes_el": 80e9}, Resource.HBM),
        ({"launch_s": 0.2}, Resource.LAUNCH),
    ],
)
def test_label_is_the_resource_whose_halving_helps_most(over: dict[str, float], expected: Resource) -> None:
    r = _rank(**over)
    got, gains = label([(600.0, [r])])
    assert got is expected
    # the same answer directly: halving the binding resource shortens the cycle most
    x = solve_ranks([r], SPEEDS).throughput
    cycle = 1.0 / x
    assert int(np.argmin(cycle[1:])) == expected
    assert gains[expected] == pytest.approx(cycle[0] / cycle[1 + expected])
    assert np.all(gains >= 1.0 - 1e-12)


def test_roofline_places_kernels_and_launch_overhead() -> None:
    ones = np.ones((1, len(Resource)))
    p = parts(_rank(), ones)
    assert p.compute[0] == pytest.approx(3.1e12 / 200e12)  # math-bound GEMMs
    assert p.hbm[0] == pytest.approx(4e9 / 1.7e12)  # the other kernels wait on HBM
    small = parts(_rank(launch_s=0.5), ones)
    assert small.gpu[0] == pytest.approx(0.5)  # the host cannot launch faster than that
    # backward hides the exchange up to overlap x backward; never below its last bucket
    hidden = parts(_rank(intra_s=0.005), ones)
    assert hidden.exposed[0] == pytest.approx(0.1 * 0.005)
    bare = parts(_rank(intra_s=0.5), ones)
    assert bare.exposed[0] == pytest.approx(0.5 - 0.8 * (2 / 3) * (bare.compute[0] + bare.hbm[0]))


def test_cpu_bound_rank_uses_its_cores_and_names_the_cap() -> None:
    throttled = _rank(decode_cs=30.0, cpu_quota=4.0)
    sol = solve_ranks([throttled], SPEEDS[:1])
    busy_cores = sol.throughput[0] * station_demands(throttled, SPEEDS[:1])[0, DECODE]
    assert busy_cores == pytest.approx(4.0, rel=0.02)  # the quota is the ceiling
    assert mechanism_of(Resource.CPU, throttled, True) is Mechanism.THROTTLED
    saturated = _rank(decode_cs=30.0, cpu_avail=3.0)
    assert mechanism_of(Resource.CPU, saturated, True) is Mechanism.SATURATED
    few = _rank(decode_cs=30.0, workers=2)
    assert mechanism_of(Resource.CPU, few, True) is Mechanism.TOO_FEW_WORKERS


def test_io_bound_rank_saturates_storage_and_idles_the_gpu() -> None:
    r = _rank(storage_bw=0.2e9)
    sol = solve_ranks([r], SPEEDS[:1])
    d = station_demands(r, SPEEDS[:1])[0]
    assert sol.throughput[0] * d[STORAGE_BW] == pytest.approx(1.0, abs=0.02)
    assert sol.throughput[0] * d[TRAINER] < 0.2


def test_slowest_rank_sets_the_pace() -> None:
    fast, slow = _rank(), _rank(peak=100e12)
    both = label([(600.0, [fast, slow])])[1]
    alone = label([(600.0, [slow])])[1]
    assert both == pytest.approx(alone)


def test_counters_rise_between_resets_and_rate_recovers_the_truth() -> None:
    rng = np.random.default_rng(0)
    bounds = np.array([0.0, 500.0, 1000.0])
    tl = Timeline(bounds, {"a": np.array([100.0, 300.0])})
    times = np.arange(5.0, 1000.0, 15.0)
    grid = np.arange(200.0, 1000.0, 30.0)
    sampler = Sampler(times, grid, range_seconds=60.0, window=33.0)
    sc = Scrapes(times, sampler, (30,))
    raw = counter_values(rng, tl, ("a",), sc, 0.0)[0]
    steps = np.diff(raw)
    assert np.all(np.delete(steps, 29) >= 0.0) and steps[29] < 0.0
    rates = sampler.rate(raw)
    assert np.nanmedian(rates[grid < 450]) == pytest.approx(100.0, rel=0.02)
    assert np.nanmedian(rates[grid > 600]) == pytest.approx(300.0, rel=0.02)


def _median(jobs: list[FamilyVJob], mech: str, signal: str) -> float:
    vals = [
        float(np.nanmedian(p.signals[signal]))
        for j in jobs
        if j.mechanism == mech
        for p in j.window.pods
        if signal in p.signals and np.isfinite(p.signals[signal]).any()
    ]
    return float(np.median(vals)) if vals else math.nan


def test_each_class_shows_its_physics(jobs: list[FamilyVJob]) -> None:
    io = [j for j in jobs if j.label is Bottleneck.IO]
    blocking = [j for j in io if "storage=object" not in j.tags]
    http = [j for j in io if "storage=object" in j.tags]
    # readers blocked in the kernel show io pressure; HTTP object-store readers wait in sockets and show none
    assert np.nanmedian([_median([j], j.mechanism, "sc_psi_io_some") for j in blocking]) > 0.5
    assert not any(_median([j], j.mechanism, "sc_psi_io_some") > 0.0 for j in http)
    assert _median(jobs, "compute", "sm_active") > _median(jobs, "network-storage", "sm_active")
    assert _median(jobs, "hbm-bandwidth", "dram_active") > _median(jobs, "compute", "dram_active")
    assert _median(jobs, "host-memory-pressure", "sc_swapin_ps") > 0.0
    assert _median(jobs, "throttled", "cpu_throttled_frac") > 0.3
    assert _median(jobs, "pcie", "pcie_rx_bps") > _median(jobs, "compute", "pcie_rx_bps")
    for j in jobs:
        if j.mechanism == "network":
            assert len(j.window.pods) >= 2
        if j.mechanism == "nvlink":
            assert j.window.pods[0].gpu_count >= 2
