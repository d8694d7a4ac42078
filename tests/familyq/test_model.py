"""Family Q's own model: the step, the scrapes, and what each class physically shows in its telemetry."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator_dev.familyq import FamilyQJob, generate_family_q
from bottleneck_operator_dev.familyq.scrape import Scraper
from bottleneck_operator_dev.familyq.stages import (
    COMM,
    DECODE,
    HBM,
    MATH,
    READ,
    label_of,
    savings,
    shape_stages,
    speedup,
)

SHARP = 6.0

START = 1_760_000_000.0  # an explicit time: nothing here reads the clock


@pytest.fixture(scope="module")
def family() -> list[FamilyQJob]:
    return generate_family_q(7, 100, start=START)


def test_the_stage_whose_removal_saves_most_names_the_class() -> None:
    t = np.array([1.0, 0.2, 0.02, 0.5, 0.1, 0.05, 0.0])
    cls, stage, ratio = label_of(savings(t, SHARP))
    assert (cls, stage) == (Bottleneck.IO, READ)
    assert 0.0 <= ratio < 0.8
    t = np.array([0.05, 0.1, 0.02, 0.5, 0.2, 0.6, 0.0])
    assert label_of(savings(t, SHARP))[:2] == (Bottleneck.INTERCONNECT, COMM)


def test_shaping_hits_the_drawn_strength_and_mix() -> None:
    base = np.array([0.2, 0.3, 0.02, 1.0, 0.3, 0.1, 0.0])
    t = shape_stages(base, SHARP, DECODE, 1.5, None, 0.0)
    assert abs(speedup(t, SHARP, DECODE) - 1.5) < 1e-3
    t = shape_stages(base, SHARP, MATH, 1.3, HBM, 0.9)
    saved = savings(t, SHARP)
    cls, stage, _ = label_of(saved)
    assert (cls, stage) == (Bottleneck.GPU, MATH)
    assert abs(saved[HBM] / saved[MATH] - 0.9) < 0.02


def test_counters_are_monotone_between_resets_and_rate_back() -> None:
    sc = Scraper(start=1000.0, step=30.0, n=40, interval=15.0, phase=4.0)
    rate = np.linspace(5.0, 50.0, 40)
    raw = sc.counter(rate, 1e7, resets=(1600.0,))
    times = sc.times()
    before, after = raw[times < 1600.0], raw[times >= 1600.0]
    assert (np.diff(before) >= 0).all() and (np.diff(after) >= 0).all()
    assert after[0] < before[-1]  # the reset is there
    read = sc.rate(raw)
    assert (read[np.isfinite(read)] >= 0).all()
    np.testing.assert_allclose(read[2:], rate[2:], rtol=0.05)


def test_slow_scrapes_hold_gauges_and_smooth_counters() -> None:
    sc = Scraper(start=0.0, step=30.0, n=20, interval=60.0, phase=10.0)
    values = np.arange(20, dtype=float)
    held = sc.gauge(values)
    assert (np.diff(held) >= 0).all() and len(np.unique(held)) <= 11
    read = sc.rate(sc.counter(np.full(20, 3.0), 0.0))
    np.testing.assert_allclose(read, 3.0)


def _mean(job: FamilyQJob, name: str) -> float | None:
    rows = [p.signals[name] for p in job.window.pods if name in p.signals]
    if not rows or not np.isfinite(np.stack(rows)).any():
        return None
    return float(np.nanmean(np.stack(rows)))


def _median(family: list[FamilyQJob], name: str, pick: Callable[[FamilyQJob], bool]) -> float:
    seen = [v for j in family if pick(j) and (v := _mean(j, name)) is not None]
    assert seen
    return float(np.median(seen))


def test_input_bound_gpus_wait(family: list[FamilyQJob]) -> None:
    gpu = _median(family, "gpu_util", lambda j: j.label is Bottleneck.GPU)
    assert _median(family, "gpu_util", lambda j: j.label is Bottleneck.IO) < gpu - 0.1
    assert _median(family, "gpu_util", lambda j: j.label is Bottleneck.CPU) < gpu - 0.1


def test_host_memory_pressure_shows_as_pressure(family: list[FamilyQJob]) -> None:
    pressed = [j for j in family if j.mechanism in ("host-swap-in", "page-cache-reclaim")]
    assert pressed
    for job in pressed:
        psi = [v for name in ("sc_psi_mem_some", "node_psi_mem_some") if (v := _mean(job, name)) is not None]
        assert not psi or max(psi) > 0.02, job.name
        faults = [v for name in ("sc_majfault_ps", "node_majfault_ps") if (v := _mean(job, name)) is not None]
        assert not faults or max(faults) > 10.0, job.name
    calm = [v for j in family if j.label is Bottleneck.GPU and (v := _mean(j, "sc_psi_mem_some")) is not None]
    assert max(calm) < 0.02


def test_hbm_bound_kernels_busy_dram_not_tensor(family: list[FamilyQJob]) -> None:
    hbm = [j for j in family if j.mechanism == "hbm-bound-kernels"]
    compute = [j for j in family if j.mechanism == "dense-compute"]
    dram = [v for j in hbm if (v := _mean(j, "dram_active")) is not None]
    tensor_h = [v for j in hbm if (v := _mean(j, "tensor_active")) is not None]
    tensor_c = [v for j in compute if (v := _mean(j, "tensor_active")) is not None]
    assert dram and tensor_h and tensor_c
    assert np.median(dram) > 0.4
    assert np.median(tensor_h) < np.median(tensor_c)


def test_rdma_traffic_shows_on_port_counters_not_netdev(family: list[FamilyQJob]) -> None:
    rdma = [j for j in family if j.mechanism == "rdma-allreduce" and _mean(j, "ib_rx_bps") is not None]
    eth = [j for j in family if j.mechanism == "ethernet-allreduce" and _mean(j, "node_net_rx_bps") is not None]
    assert rdma or eth
    for job in rdma:
        assert (_mean(job, "ib_rx_bps") or 0.0) > 1e9
    for job in eth:
        assert (_mean(job, "node_net_tx_bps") or 0.0) > 1e8
        assert _mean(job, "ib_rx_bps") is None


def test_quota_bound_jobs_are_throttled(family: list[FamilyQJob]) -> None:
    quota = [
        v for j in family if j.mechanism == "cfs-quota-throttling" and (v := _mean(j, "cpu_throttled_frac")) is not None
    ]
    free = [v for j in family if j.label is Bottleneck.GPU and (v := _mean(j, "cpu_throttled_frac")) is not None]
    assert quota
    assert min(quota) > (max(free) if free else 0.0)
