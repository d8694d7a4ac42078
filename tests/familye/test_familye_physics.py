"""Family E's own stage model: labels follow it, and each class's telemetry shows its mechanism.

Every expectation here comes from the generator's step model and the exporters' definitions,
never from the project's analysis.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from bottleneck_operator.contract.sampling import Sampler
from bottleneck_operator.contract.signals import Family
from bottleneck_operator.contract.verdict import CLASSES, Bottleneck
from bottleneck_operator_dev.familye import FamilyEJob, generate_family_e
from bottleneck_operator_dev.familye.exporters import _reset, _totals
from bottleneck_operator_dev.familye.family import MECHANISMS
from bottleneck_operator_dev.familye.hardware import FABRIC_BY_KEY
from bottleneck_operator_dev.familye.phases import Timeline
from bottleneck_operator_dev.familye.stepmodel import (
    interconnect_parts,
    label_of,
    memory_parts,
    pod_times,
    speedups,
    step_time,
)
from bottleneck_operator_dev.familye.workloads import MIN_LEAD, draw_plan

START = 1_767_225_600.0


@pytest.fixture(scope="module")
def family() -> list[FamilyEJob]:
    return generate_family_e(77, 60, start=START)


def _pod_medians(job: FamilyEJob, name: str, reduce: Callable[[list[float]], float] = min) -> float | None:
    vals = [
        float(np.nanmedian(p.signals[name]))
        for p in job.window.pods
        if name in p.signals and np.isfinite(p.signals[name]).any()
    ]
    return reduce(vals) if vals else None


def _mechanisms() -> list[tuple[Bottleneck, str]]:
    pairs = [(c, m) for c, (names, _) in MECHANISMS.items() for m in names]
    return [*pairs, (Bottleneck.MEMORY, "host-memory-pressure"), (Bottleneck.MEMORY, "hbm-bandwidth")]


@pytest.mark.parametrize(("cls", "mech"), _mechanisms())
def test_every_drawn_label_is_the_stage_whose_removal_helps_most(cls: Bottleneck, mech: str) -> None:
    kept = 0
    for i in range(40):
        plan = draw_plan(np.random.default_rng([5, i]), cls, mech, 1800.0, hard=False)
        if plan is None:
            continue
        kept += 1
        ups = speedups(plan.step)
        best = max(ups, key=ups.__getitem__)
        assert best is cls
        label, lead = label_of(plan.step)
        assert label is cls and lead >= MIN_LEAD
        # removing the label's stages really gives that speed-up
        assert step_time(plan.step) / step_time(plan.step, frozenset({cls})) == pytest.approx(ups[cls])
        if cls is Bottleneck.MEMORY:
            host, hbm = memory_parts(plan.step)
            assert (host > hbm) == (mech == "host-memory-pressure")
        if cls is Bottleneck.INTERCONNECT:
            parts = interconnect_parts(plan.step)
            assert max(parts, key=parts.__getitem__) == mech
        if cls in (Bottleneck.IO, Bottleneck.CPU):  # the input pipeline is slower than the GPUs on the slowest pod
            t = pod_times(plan.step)
            slowest = int(np.argmax(np.maximum(t.gpu_side, t.input)))
            assert t.input[slowest] > t.gpu_side[slowest]
    assert kept >= 3


def test_jobs_carry_their_step_account(family: list[FamilyEJob]) -> None:
    for job in family:
        ups = dict(job.speedups)
        assert set(ups) == set(CLASSES)
        assert min(ups.values()) >= 1.0 - 1e-9
        assert max(ups, key=ups.__getitem__) is job.label


def test_input_bound_jobs_leave_their_gpus_waiting(family: list[FamilyEJob]) -> None:
    waiting, computing = [], []
    for job in family:
        v = _pod_medians(job, "gr_engine_active")
        if v is None:
            continue
        ups = dict(job.speedups)
        if job.label in (Bottleneck.IO, Bottleneck.CPU):
            # the slowest pod's GPUs work at most the share of the step left once the input is free
            assert v <= 1.0 / ups[job.label] + 0.08
            waiting.append(v)
        elif job.label is Bottleneck.GPU:
            computing.append(v)
    assert waiting and computing
    assert np.median(waiting) < np.median(computing)


def test_host_memory_pressure_shows_as_pressure_and_faults(family: list[FamilyEJob]) -> None:
    seen = 0
    for job in family:
        if job.mechanism != "host-memory-pressure" or Family.SIDECAR not in job.window.quality.families:
            continue
        seen += 1
        assert (_pod_medians(job, "sc_psi_mem_some", max) or 0) > 0.1
        assert (_pod_medians(job, "sc_majfault_ps", max) or 0) > 500
        if "swap" in job.tags:
            assert (_pod_medians(job, "sc_swapin_ps", max) or 0) > 100
    assert seen > 0


def test_hbm_bound_jobs_read_dram_not_tensor(family: list[FamilyEJob]) -> None:
    seen = 0
    for job in family:
        if job.mechanism == "hbm-bandwidth" and Family.DCGM_PROF in job.window.quality.families:
            dram, tensor = _pod_medians(job, "dram_active", max), _pod_medians(job, "tensor_active", max)
            assert dram is not None and tensor is not None and dram > tensor + 0.2
            seen += 1
    assert seen > 0


def test_throttled_jobs_are_throttled_and_compute_jobs_fill_their_sms(family: list[FamilyEJob]) -> None:
    for job in family:
        if job.mechanism == "throttled":
            frac = _pod_medians(job, "cpu_throttled_frac", max)
            assert frac is None or frac > 0.2
        if job.mechanism == "compute":
            sm = _pod_medians(job, "sm_active", max)
            assert sm is None or sm > 0.6


def test_network_bound_jobs_fill_their_rdma_ports() -> None:
    seen = 0
    for i in range(60):
        plan = draw_plan(np.random.default_rng([9, i]), Bottleneck.INTERCONNECT, "network", 1800.0, hard=False)
        if plan is None or plan.env.fabric is None:
            continue
        f = plan.env.fabric
        t = step_time(plan.step)
        used = plan.step.nic_bytes / t / (plan.env.ports * f.port_bps * f.efficiency)
        assert 0.3 < used <= 1.0 + 1e-9  # bytes against the ports' capacity: the links are what the step waits on
        seen += 1
    assert seen > 3
    assert FABRIC_BY_KEY["ib-ndr"].rdma and not FABRIC_BY_KEY["eth-25"].rdma


def test_counters_are_monotone_between_resets_and_rates_survive_them() -> None:
    rng = np.random.default_rng(0)
    n, dt = 400, 5.0
    times_f = np.asarray(START + dt * np.arange(n), dtype=np.float64)
    zero = np.zeros(n)
    tl = Timeline(float(times_f[0]), dt, times_f, np.ones(n), zero, zero, zero, -1)
    rates = np.abs(rng.normal(100.0, 10.0, (1, 2, n)))
    scrapes = np.asarray(START + 15.0 + 15.0 * np.arange(120), dtype=np.float64)
    totals = _totals(rng, rates, tl, scrapes)
    assert (np.diff(totals, axis=-1) > 0).all()
    _reset(totals, scrapes, START + 900.0, np.array([0]), np.array([1]))
    drops = np.diff(totals, axis=-1) < 0
    assert drops[0, 0].sum() == 0 and drops[0, 1].sum() == 1
    at = START + 600.0 + 30.0 * np.arange(40)
    got = Sampler(scrapes, at, range_seconds=60.0, window=33.0).rate(totals)
    assert (got[np.isfinite(got)] >= 0).all()
    np.testing.assert_allclose(np.nanmedian(got, axis=-1), 100.0, rtol=0.1)
