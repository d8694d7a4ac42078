"""Family L: determinism, balance, well-formed windows, counters, and the physics of its own step model."""

from __future__ import annotations

import collections
import math
from collections.abc import Callable

import numpy as np
import pytest
from tests.blind_jobs import same_job

from bottleneck_operator.contract.signals import SIGNALS
from bottleneck_operator.contract.verdict import CLASSES, MECHANISMS, Bottleneck, Mechanism
from bottleneck_operator.contract.window import families_and_coverage
from bottleneck_operator_dev.familyl import FamilyLJob, generate_family_l, scrape
from bottleneck_operator_dev.familyl.hardware import BOARDS
from bottleneck_operator_dev.familyl.stages import STAGE_CLASS, bounding, removal_gains
from bottleneck_operator_dev.familyl.workloads import CLASS_MECHS, MECH_STAGE, scenario

START = 1_700_000_000.0  # an explicit time: nothing here reads the clock


@pytest.fixture(scope="module")
def jobs() -> list[FamilyLJob]:
    return generate_family_l(11, 100, start=START)


def test_same_seed_same_family_other_seed_other_family(jobs: list[FamilyLJob]) -> None:
    again = generate_family_l(11, 100, start=START)
    assert all(same_job(a, b) for a, b in zip(jobs, again, strict=True))
    other = generate_family_l(12, 100, start=START)
    assert not all(same_job(a, b) for a, b in zip(jobs, other, strict=True))


def test_classes_in_equal_numbers_shuffled_with_both_memory_mechanisms(jobs: list[FamilyLJob]) -> None:
    counts = collections.Counter(j.label for j in jobs)
    assert counts == {c: 20 for c in CLASSES}
    assert [j.label for j in jobs[:5]] != list(CLASSES) or [j.label for j in jobs[5:10]] != list(CLASSES)
    memory = {j.mechanism for j in jobs if j.label is Bottleneck.MEMORY}
    assert memory == {Mechanism.HOST_MEMORY_PRESSURE.value, Mechanism.HBM_BANDWIDTH.value}
    for j in jobs:
        assert Mechanism(j.mechanism) in MECHANISMS[j.label]


def test_windows_are_well_formed(jobs: list[FamilyLJob]) -> None:
    for j in jobs:
        w = j.window
        assert 20 <= w.timestamps.size <= 120
        assert w.start == START and w.timestamps[0] == START and w.end == w.timestamps[-1]
        assert np.allclose(np.diff(w.timestamps), 30.0)
        assert 1 <= len(w.pods) <= 16
        assert (w.namespace, w.job) == (j.namespace, j.name)
        for p in w.pods:
            assert 1 <= p.gpu_count <= 8
            assert set(p.signals) <= set(SIGNALS)
            assert all(v.shape == w.timestamps.shape for v in p.signals.values())
        families, coverage = families_and_coverage(w.pods)
        assert w.quality.families == families and w.quality.coverage == pytest.approx(coverage)
        assert w.quality.scrape_interval is not None and 5 <= w.quality.scrape_interval <= 60


def test_a_custom_step_moves_the_grid() -> None:
    (job,) = generate_family_l(5, 1, start=START, step=15.0)
    assert np.allclose(np.diff(job.window.timestamps), 15.0)


def _values(jobs: list[FamilyLJob], name: str) -> np.ndarray:
    vals = [p.signals[name] for j in jobs for p in j.window.pods if name in p.signals]
    flat = np.concatenate(vals) if vals else np.empty(0)
    return flat[np.isfinite(flat)]


def test_units_are_in_range(jobs: list[FamilyLJob]) -> None:
    for name, spec in SIGNALS.items():
        v = _values(jobs, name)
        if spec.unit == "ratio":
            assert ((v >= 0) & (v <= 1)).all(), name
        else:
            assert (v >= 0).all(), name
    boards = {b.model: b for b in BOARDS}
    for j in jobs:
        for p in j.window.pods:
            board = boards[p.gpu_model or ""]
            s = p.signals
            if "power_w" in s:
                assert np.nanmax(s["power_w"]) <= board.tdp_w
            if "power_w" in s and "power_limit_w" in s:
                assert (s["power_w"] <= s["power_limit_w"] + 1e-9)[np.isfinite(s["power_w"] + s["power_limit_w"])].all()
            if "sm_clock_mhz" in s:
                assert np.nanmax(s["sm_clock_mhz"]) <= board.boost_mhz


def test_counters_are_monotone_between_resets_and_rate_reads_them_back() -> None:
    rng = np.random.default_rng(1)
    grid = START + 30.0 * np.arange(60, dtype=np.float64)
    truth = np.vstack([np.full(60, 5e8), np.linspace(0.1, 0.9, 60)])
    for _ in range(40):
        sc = scrape.scraper(rng, grid[0], grid[-1], 15.0, 0.0, True)
        raw = scrape.counters(sc, truth, grid, 30.0, np.array([1e6, 3e4]))
        drops = np.diff(raw, axis=1) < 0
        assert drops.any(axis=0).sum() <= (1 if sc.restart is not None else 0)
        got = scrape.rate(sc, raw, grid, 15.0, 30.0)
        ok = np.isfinite(got[0])
        assert ok.mean() > 0.7
        # Across a reset rate() misses what ran between the last scrape and the restart, as in
        # Prometheus: it may read low there, never high; elsewhere it reads the true rate.
        clean = ok.copy()
        if sc.restart is not None:
            clean &= (grid < sc.restart) | (grid > sc.restart + 8 * 15.0 + 60.0)
            assert (got[0][ok] <= 5e8 * (1 + 1e-6)).all()
        assert np.allclose(got[0][clean], 5e8, rtol=1e-6)
        assert (got[1][np.isfinite(got[1])] >= 0).all()


def test_a_restarted_exporter_resets_its_counters() -> None:
    rng = np.random.default_rng(0)
    grid = START + 30.0 * np.arange(100, dtype=np.float64)
    scrapers = [scrape.scraper(rng, grid[0], grid[-1], 30.0, 0.0, True) for _ in range(50)]
    restarted = [s for s in scrapers if s.restart is not None]
    assert restarted
    raw = scrape.counters(restarted[0], np.full((1, 100), 10.0), grid, 30.0, np.array([1e9]))
    assert (np.diff(raw[0]) < 0).sum() == 1


@pytest.mark.parametrize("mech", [m for ms in CLASS_MECHS.values() for m in ms])
def test_the_label_is_the_stage_whose_removal_speeds_the_step_most(mech: Mechanism) -> None:
    label = next(c for c, ms in CLASS_MECHS.items() if mech in ms)
    for i in range(8):
        sc = scenario(np.random.default_rng((99, i)), label, mech)
        gains = removal_gains(sc.step)
        stage, gain, runner_up = bounding(sc.step)
        assert stage == MECH_STAGE[mech] and STAGE_CLASS[stage][0] is label
        assert gain == max(gains.values()) and gain >= 1.05
        assert runner_up <= gain


def test_difficulty_varies(jobs: list[FamilyLJob]) -> None:
    tags = collections.Counter(t for j in jobs for t in j.tags)
    assert tags["gain:moderate"] >= 15 and tags["gain:strong"] >= 15
    assert tags["close-second"] >= 5 and tags["dcgm:dev-only"] >= 5


def _median(jobs: list[FamilyLJob], pick: Callable[[FamilyLJob], bool], name: str) -> float:
    per_job = []
    for j in jobs:
        if pick(j):
            v = _values([j], name)
            if v.size:
                per_job.append(float(np.median(v)))
    return float(np.median(per_job)) if per_job else math.nan


def _mech(m: Mechanism) -> Callable[[FamilyLJob], bool]:
    return lambda j: j.mechanism == m.value


def test_each_class_shows_its_own_physics() -> None:
    fam = generate_family_l(21, 150, start=START)
    gpu_bound = _mech(Mechanism.COMPUTE)
    # Input-bound GPUs wait: less of their time runs kernels than a compute-bound job's.
    for m in (Mechanism.LOCAL_DISK, Mechanism.NETWORK_STORAGE, Mechanism.SATURATED, Mechanism.THROTTLED):
        assert _median(fam, _mech(m), "gpu_util") < _median(fam, gpu_bound, "gpu_util")
    # Local-disk readers show on the block device; object-store and NFS readers on the network.
    assert _median(fam, _mech(Mechanism.LOCAL_DISK), "node_disk_read_bps") > 5 * _median(
        fam, gpu_bound, "node_disk_read_bps"
    )
    assert _median(fam, _mech(Mechanism.NETWORK_STORAGE), "node_net_rx_bps") > 5 * _median(
        fam, gpu_bound, "node_net_rx_bps"
    )
    # Host-memory pressure shows as pressure stalls and swap-in, not as an OOM kill.
    host = _mech(Mechanism.HOST_MEMORY_PRESSURE)
    assert _median(fam, host, "sc_psi_mem_some") > 0.1 > _median(fam, gpu_bound, "sc_psi_mem_some")
    assert _median(fam, host, "sc_swapin_ps") > 1000
    assert _values([j for j in fam if host(j)], "sc_oom_kills").max(initial=0.0) == 0.0
    # HBM-bound kernels keep DRAM busy and the tensor pipes quiet.
    hbm = _mech(Mechanism.HBM_BANDWIDTH)
    assert _median(fam, hbm, "dram_active") > _median(fam, gpu_bound, "dram_active")
    assert _median(fam, hbm, "tensor_active") < _median(fam, gpu_bound, "tensor_active")
    # A throttled loader is throttled; too few workers leave the node idle.
    assert _median(fam, _mech(Mechanism.THROTTLED), "cpu_throttled_frac") > 0.5
    assert _median(fam, _mech(Mechanism.TOO_FEW_WORKERS), "node_cpu_busy_frac") < 0.3
    # Fabric-bound jobs move bytes: NVLink inside a node, IB or TCP between nodes, PCIe for offload.
    assert _median(fam, _mech(Mechanism.NVLINK), "nvlink_total_bps") > 10 * _median(fam, gpu_bound, "nvlink_total_bps")
    boards = {b.model: b.pcie_bps for b in BOARDS}
    pcie_use = [
        float(np.nanmedian(p.signals["pcie_rx_bps"])) / boards[p.gpu_model or ""]
        for j in fam
        if j.mechanism == Mechanism.PCIE.value and len(j.window.pods) == 1
        for p in j.window.pods
        if "pcie_rx_bps" in p.signals
    ]
    assert pcie_use and float(np.median(pcie_use)) > 0.3
    network = [j for j in fam if j.mechanism == Mechanism.NETWORK.value]
    assert network and all(len(j.window.pods) >= 2 for j in network)


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="step"):
        generate_family_l(1, 5, start=START, step=0.0)
