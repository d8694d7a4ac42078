"""Family J: deterministic, balanced, well-formed windows, and physics that follows its own step model."""

from __future__ import annotations

import collections

import numpy as np
import pytest

from bottleneck_operator.contract.signals import SIGNALS, Family
from bottleneck_operator.contract.verdict import CLASSES, Bottleneck, Mechanism
from bottleneck_operator.contract.window import PodWindow, families_and_coverage
from bottleneck_operator_dev.familyj import FamilyJJob, generate_family_j
from bottleneck_operator_dev.familyj.family import build_job
from bottleneck_operator_dev.familyj.hardware import BOARDS, FABRICS

START = 1_750_000_000.0
TDP = {b.model_name: b.tdp_w for b, _ in BOARDS}
BOOST = {b.model_name: b.boost_mhz for b, _ in BOARDS}


@pytest.fixture(scope="module")
def jobs() -> list[FamilyJJob]:
    return generate_family_j(11, 60, start=START)


def _mean(job: FamilyJJob, name: str) -> float | None:
    rows = [p.signals[name] for p in job.window.pods if name in p.signals]
    values = np.concatenate(rows) if rows else np.array([])
    return float(np.nanmean(values)) if np.isfinite(values).any() else None


def test_same_seed_same_family_other_seed_another() -> None:
    a = generate_family_j(3, 10, start=START)
    b = generate_family_j(3, 10, start=START)
    c = generate_family_j(4, 10, start=START)
    assert [(j.name, j.label, j.mechanism, j.tags) for j in a] == [(j.name, j.label, j.mechanism, j.tags) for j in b]
    for x, y in zip(a, b, strict=True):
        for px, py in zip(x.window.pods, y.window.pods, strict=True):
            assert list(px.signals) == list(py.signals)
            for name in px.signals:
                np.testing.assert_array_equal(px.signals[name], py.signals[name])
    assert [j.name for j in a] != [j.name for j in c]


def test_classes_in_equal_numbers_and_both_memory_mechanisms(jobs: list[FamilyJJob]) -> None:
    counts = collections.Counter(j.label for j in jobs)
    assert counts == {c: 12 for c in CLASSES}
    memory = collections.Counter(j.mechanism for j in jobs if j.label is Bottleneck.MEMORY)
    assert memory == {Mechanism.HOST_MEMORY_PRESSURE.value: 6, Mechanism.HBM_BANDWIDTH.value: 6}
    odd = collections.Counter(j.label for j in generate_family_j(5, 7, start=START))
    assert max(odd.values()) - min(odd.get(c, 0) for c in CLASSES) <= 1
    # shuffled: the classes do not come round in a fixed rotation
    assert [j.label for j in jobs[:5]] != [j.label for j in jobs[5:10]]


def test_windows_are_well_formed(jobs: list[FamilyJJob]) -> None:
    for job in jobs:
        w = job.window
        assert 20 <= w.timestamps.size <= 120
        np.testing.assert_allclose(w.timestamps, START + 30.0 * np.arange(w.timestamps.size))
        assert (w.start, w.end, w.step) == (START, w.timestamps[-1], 30.0)
        assert 1 <= len(w.pods) <= 16 and len({p.pod for p in w.pods}) == len(w.pods)
        assert job.name not in {c.value for c in CLASSES} and job.label.value not in job.name
        for pod in w.pods:
            assert 1 <= pod.gpu_count <= 8
            assert set(pod.signals) <= set(SIGNALS)
            assert all(v.shape == w.timestamps.shape for v in pod.signals.values())
        families, coverage = families_and_coverage(w.pods)
        assert (w.quality.families, w.quality.coverage) == (families, coverage)
        assert w.quality.scrape_interval is not None and 5 <= w.quality.scrape_interval <= 60


def test_units_in_range(jobs: list[FamilyJJob]) -> None:
    for job in jobs:
        model = job.window.pods[0].gpu_model or ""
        for pod in job.window.pods:
            for name, values in pod.signals.items():
                v = values[np.isfinite(values)]
                unit = SIGNALS[name].unit
                if unit == "ratio":
                    assert ((v >= 0) & (v <= 1)).all(), (job.name, name)
                elif unit in ("B/s", "1/s", "cores", "procs", "B", "W", "MHz"):
                    assert (v >= 0).all(), (job.name, name)
            power = pod.signals.get("power_w")
            if power is not None:
                assert np.nanmax(power) <= TDP[model] + 10.0  # NVML's reading noise of a few watts
            limit = pod.signals.get("power_limit_w")
            if power is not None and limit is not None:
                assert np.nanmax(power - limit) <= 10.0
            clock = pod.signals.get("sm_clock_mhz")
            if clock is not None:
                assert np.nanmax(clock) <= BOOST[model] + 15.0


def test_counters_only_fall_when_their_exporter_restarts() -> None:
    restarted = 0
    for i in range(40):
        _, raw, _ = build_job(21, i, CLASSES[i % 5], _first_mechanism(CLASSES[i % 5]), start=START, step=30.0)
        for key, values in raw.counters.items():
            exporter = key.split("/")[0]
            times = raw.times[exporter]
            falls = np.diff(values, axis=1) < 0
            at = raw.restarts.get(exporter)
            if at is None:
                assert not falls.any(), key
            else:
                # a counter may fall only across the restart, and then starts again near zero
                cols = np.flatnonzero(falls.any(axis=0))
                assert all(times[c] < at <= times[c + 1] for c in cols), key
                restarted += bool(cols.size)
    assert restarted > 0  # the draw includes restarts, so the check above has run on real resets


def _first_mechanism(cls: Bottleneck) -> Mechanism:
    return {
        Bottleneck.IO: Mechanism.NETWORK_STORAGE,
        Bottleneck.CPU: Mechanism.THROTTLED,
        Bottleneck.INTERCONNECT: Mechanism.NETWORK,
        Bottleneck.GPU: Mechanism.COMPUTE,
        Bottleneck.MEMORY: Mechanism.HOST_MEMORY_PRESSURE,
    }[cls]


def test_label_is_the_stage_whose_removal_saves_most() -> None:
    for i in range(15):
        cls = CLASSES[i % 5]
        job, _, acc = build_job(9, i, cls, _first_mechanism(cls), start=START, step=30.0)
        assert job.label is acc.label is cls
        assert acc.savings[cls] == max(acc.savings.values()) and acc.speedup > 1.0


def test_input_bound_gpus_wait(jobs: list[FamilyJJob]) -> None:
    """IO- and CPU-bound single-pod jobs: the loader is slower than the GPU, so its kernels pause."""
    input_bound = [
        j
        for j in jobs
        if j.label in (Bottleneck.IO, Bottleneck.CPU) and len(j.window.pods) == 1 and "time-sliced" not in j.tags
    ]
    waits = [w for j in input_bound if (w := _mean(j, "gpu_util") or _mean(j, "gr_engine_active")) is not None]
    assert waits and max(waits) < 0.97


def test_host_memory_pressure_shows_stalls_and_faults(jobs: list[FamilyJJob]) -> None:
    seen = 0
    for job in jobs:
        if job.mechanism != Mechanism.HOST_MEMORY_PRESSURE.value or Family.SIDECAR not in job.window.quality.families:
            continue
        seen += 1
        assert (_mean(job, "sc_psi_mem_some") or 0.0) > 0.01
        faults = "sc_swapin_ps" if "swap" in job.tags else "sc_majfault_ps"
        assert (_mean(job, faults) or 0.0) > 20.0
    assert seen


def test_hbm_bound_jobs_move_more_memory_than_they_compute(jobs: list[FamilyJJob]) -> None:
    seen = 0
    for job in jobs:
        if job.mechanism == Mechanism.HBM_BANDWIDTH.value and Family.DCGM_PROF in job.window.quality.families:
            seen += 1
            assert (_mean(job, "dram_active") or 0.0) > (_mean(job, "tensor_active") or 0.0)
    assert seen


def test_throttled_cpu_jobs_are_throttled(jobs: list[FamilyJJob]) -> None:
    """A quota-bound pod runs near its limit and is throttled in most CFS periods; so is any pod at its limit."""
    seen = 0
    for job in jobs:
        fams = job.window.quality.families
        if not {Family.CADVISOR, Family.CADVISOR_CFS, Family.KSM} <= fams:
            continue
        load = [
            (
                float(np.nanmean(p.signals["cpu_cores"] / p.signals["cpu_limit_cores"])),
                _pod_mean(p, "cpu_throttled_frac"),
            )
            for p in job.window.pods
        ]
        assert all(throttled > 0.5 for used, throttled in load if used > 0.95), (job.tags, load)
        if job.mechanism == Mechanism.THROTTLED.value:
            seen += 1
            assert max(used for used, _ in load) > 0.6 and max(t for _, t in load) > 0.2, (job.tags, load)
    assert seen


def _pod_mean(pod: PodWindow, name: str) -> float:
    return float(np.nanmean(pod.signals[name]))


def test_storage_shows_where_its_bytes_arrive() -> None:
    """Block storage shows reads and IO pressure in the pod's cgroup; HTTP object stores show neither."""
    seen: collections.Counter[str] = collections.Counter()
    for i in range(24):
        mech = (Mechanism.LOCAL_DISK, Mechanism.NETWORK_STORAGE)[i % 2]
        job, _, _ = build_job(31, i, Bottleneck.IO, mech, start=START, step=30.0)
        if Family.SIDECAR not in job.window.quality.families:
            continue
        block = _mean(job, "sc_io_read_bps") or 0.0
        pressure = _mean(job, "sc_psi_io_some") or 0.0
        if mech is Mechanism.LOCAL_DISK:
            seen["block"] += 1
            assert block > 5e7 and pressure > 0.3, job.tags
        elif "storage:object-store-http" in job.tags:
            seen["http"] += 1
            assert block == 0.0 and pressure < 0.1, job.tags
    assert seen["block"] and seen["http"]


def test_network_bound_jobs_fill_their_links() -> None:
    """Network-bound jobs move bytes near the NIC's rate, on the counters their fabric is seen by."""
    rates = {f.name: f for f, _ in FABRICS}
    seen = 0
    for i in range(16):
        job, _, acc = build_job(41, i, Bottleneck.INTERCONNECT, Mechanism.NETWORK, start=START, step=30.0)
        fabric = rates[next(t for t in job.tags if t.startswith("fabric:")).split(":", 1)[1]]
        signal = "ib_tx_bps" if fabric.ib_counters and fabric.rdma else "node_net_tx_bps"
        sent = _mean(job, signal)
        if job.mechanism != Mechanism.NETWORK.value or sent is None:
            continue
        seen += 1
        assert acc.comm_saving > 0.0
        assert sent > 0.2 * fabric.port_bps(), (job.tags, sent)
    assert seen
