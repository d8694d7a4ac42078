"""Family U's model: fair sharing, the step's composition, the label, and the exporters' physics."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bottleneck_operator.contract.sampling import counter_rate
from bottleneck_operator.contract.signals import SIGNALS
from bottleneck_operator.contract.verdict import Bottleneck, Mechanism
from bottleneck_operator_dev.familyu import FamilyUJob, generate_family_u
from bottleneck_operator_dev.familyu.exporters import TICK, counter_samples
from bottleneck_operator_dev.familyu.fairshare import Flow, progressive_fill
from bottleneck_operator_dev.familyu.hardware import GPUS
from bottleneck_operator_dev.familyu.step import HostMemory, PodStep, Roofline, Stage, gains, label_resource, step_time

START = 1_700_000_000.0


@pytest.fixture(scope="module")
def jobs() -> list[FamilyUJob]:
    return generate_family_u(seed=7, n=60, start=START)


def _median(job: FamilyUJob, name: str) -> float | None:
    vals = [v for p in job.window.pods if name in p.signals for v in p.signals[name] if np.isfinite(v)]
    return float(np.median(vals)) if vals else None


def test_progressive_filling_is_max_min_fair_and_names_the_bound() -> None:
    alloc = progressive_fill(
        {"storage/a": 10.0, "network/b": 4.0},
        [
            Flow("x", ("storage/a",)),
            Flow("y", ("storage/a", "network/b")),
            Flow("z", ("network/b",), cap=1.0, cap_kind="cpu/limit"),
        ],
    )
    # z stops at its cap, y takes the rest of b, x the rest of a
    assert alloc.rates == pytest.approx({"x": 7.0, "y": 3.0, "z": 1.0})
    assert alloc.bound_by == {"x": "storage/a", "y": "network/b", "z": "cpu/limit"}
    # doubling the network for y alone: it grows until the storage it also crosses is full
    y = Flow("y", ("storage/a", "network/b"))
    assert alloc.doubled_rate(y, "network") == pytest.approx(3.0)  # storage/a has no room left
    assert alloc.doubled_rate(y, "storage") == pytest.approx(3.0)  # not bound by storage: no gain


def _pod(io: float = 0.0, cpu: float = 0.0, h2d: float = 0.0, sm: float = 0.1, hbm: float = 0.0) -> PodStep:
    # work in seconds at unit share, so each stage takes exactly its number
    return PodStep(
        io=Stage(io, 1.0, {"storage": 2.0}),
        cpu=Stage(cpu, 1.0, {"cpu": 2.0}),
        mem=HostMemory(0.0, 1.0, 0.0, 1.0),
        h2d=Stage(h2d, 1.0, {"pcie": 2.0}),
        dev=Roofline(sm, hbm, 0.0, 0.0, 1.0, 1.0),
        intra=Stage(0.0, 1.0),
        inter=Stage(0.0, 1.0),
        io_cpu_overlap=True,
        h2d_overlap=False,
        overhead_s=0.0,
    )


@pytest.mark.parametrize(
    ("pod", "expected"),
    [
        (_pod(io=0.5, cpu=0.3, sm=0.2), "storage"),
        (_pod(io=0.2, cpu=0.6, sm=0.3), "cpu"),
        (_pod(io=0.1, sm=0.4, h2d=0.05), "sm"),
        (_pod(io=0.1, sm=0.2, hbm=0.35), "hbm"),
        (_pod(io=0.1, sm=0.1, h2d=0.3), "pcie"),
    ],
)
def test_the_label_is_the_stage_whose_doubling_shortens_the_step_most(pod: PodStep, expected: str) -> None:
    phases = [(1.0, [pod])]
    label, g = label_resource(phases)
    assert label == expected
    base = step_time([pod])
    assert g[expected] == pytest.approx(1.0 - step_time([pod], expected) / base)
    assert all(g[expected] >= v for v in g.values())


def test_serial_input_adds_and_overlapped_input_does_not() -> None:
    overlapped = _pod(io=0.3, cpu=0.3, sm=0.1)
    serial = PodStep(**{**overlapped.__dict__, "io_cpu_overlap": False})
    assert step_time([overlapped]) == pytest.approx(0.3)
    assert step_time([serial]) == pytest.approx(0.6)
    # in the overlapped pipeline doubling one of two equal stages gains nothing; in the serial one it does
    assert gains([(1.0, [overlapped])])["storage"] == pytest.approx(0.0)
    assert gains([(1.0, [serial])])["storage"] == pytest.approx(0.25)


def test_host_memory_deficit_stalls_and_doubling_the_allocation_removes_it() -> None:
    mem = HostMemory(working_set=100e9, allocation=80e9, touched=10e9, refault_bps=1e9, fault_s_per_gb=0.0)
    assert mem.refault_bytes() == pytest.approx(2e9) and mem.time() == pytest.approx(2.0)
    assert mem.time("hostmem") == 0.0 and mem.time("cpu") == pytest.approx(2.0)


def test_counters_are_monotone_between_resets_and_rate_recovers_the_rate() -> None:
    rng = np.random.default_rng(0)
    per_tick = np.full((2, 200), 3.0)
    idx = np.arange(0, 200, 4)
    seen_reset = False
    for _ in range(20):
        values, cut = counter_samples(rng, per_tick, idx, reset_p=0.5)
        steps = np.diff(values, axis=1)
        drops = np.flatnonzero((steps < 0).any(axis=0))
        if cut is None:
            assert drops.size == 0
        else:
            seen_reset = True
            assert set(drops) <= {cut - 1}
        t = idx * TICK
        rates = counter_rate(t, values, t[4:], 4 * 4 * TICK)
        if cut is None:
            assert np.allclose(rates, 3.0)
        else:
            # what ran between the last scrape and the restart is lost, as on a real exporter; never more
            assert ((rates <= 3.0 + 1e-9) & (rates >= 1.5)).all()
    assert seen_reset


def test_exported_values_keep_their_units(jobs: list[FamilyUJob]) -> None:
    max_clock = {g.model: g.max_clock_mhz for g in GPUS}
    for job in jobs:
        for pod in job.window.pods:
            s = pod.signals
            for name, values in s.items():
                finite = values[np.isfinite(values)]
                if SIGNALS[name].unit == "ratio":
                    assert ((finite >= 0) & (finite <= 1)).all(), name
                if SIGNALS[name].unit in ("B/s", "cores", "1/s", "B", "W", "MHz"):
                    assert (finite >= 0).all(), name
            if "power_limit_w" in s:
                ok = np.isfinite(s["power_w"]) & np.isfinite(s["power_limit_w"])
                assert (s["power_w"][ok] <= s["power_limit_w"][ok] + 1e-9).all()
            assert pod.gpu_model is not None
            clock = s["sm_clock_mhz"]
            assert (clock[np.isfinite(clock)] <= max_clock[pod.gpu_model] + 1e-9).all()


def _mean_of(jobs: list[FamilyUJob], label: Bottleneck, name: str, mechanism: str | None = None) -> float:
    vals = [
        m
        for j in jobs
        if j.label is label and (mechanism is None or j.mechanism == mechanism)
        for m in [_median(j, name)]
        if m is not None
    ]
    return float(np.mean(vals)) if vals else math.nan


def test_gpu_bound_jobs_keep_their_gpus_busier_than_input_bound_ones(jobs: list[FamilyUJob]) -> None:
    gpu = _mean_of(jobs, Bottleneck.GPU, "gpu_util")
    assert gpu > 0.8
    assert gpu > _mean_of(jobs, Bottleneck.IO, "gpu_util") + 0.15
    assert gpu > _mean_of(jobs, Bottleneck.CPU, "gpu_util") + 0.15


def test_hbm_bound_jobs_read_more_dram_than_compute_bound_ones(jobs: list[FamilyUJob]) -> None:
    hbm = _mean_of(jobs, Bottleneck.MEMORY, "dram_active", Mechanism.HBM_BANDWIDTH.value)
    assert hbm > _mean_of(jobs, Bottleneck.GPU, "dram_active")
    assert hbm > 0.5


def test_host_memory_jobs_stall_on_memory_and_others_do_not(jobs: list[FamilyUJob]) -> None:
    host = [j for j in jobs if j.mechanism == Mechanism.HOST_MEMORY_PRESSURE.value]
    assert host
    for j in host:
        psi = _median(j, "sc_psi_mem_some")
        if psi is not None:
            assert psi > 0.05
    gpu_psi = [m for j in jobs if j.label is Bottleneck.GPU for m in [_median(j, "sc_psi_mem_some")] if m is not None]
    assert max(gpu_psi, default=0.0) < 0.05


def test_throttled_cpu_jobs_show_cfs_throttling(jobs: list[FamilyUJob]) -> None:
    throttled = [_median(j, "cpu_throttled_frac") for j in jobs if j.mechanism == Mechanism.THROTTLED.value]
    shown = [t for t in throttled if t is not None]
    assert all(t > 0.5 for t in shown)


def test_network_bound_jobs_move_bytes_on_the_fabric(jobs: list[FamilyUJob]) -> None:
    net = [j for j in jobs if j.mechanism == Mechanism.NETWORK.value]
    assert net
    for j in net:
        assert len(j.window.pods) > 1
        fabric = next(t for t in j.tags if t.startswith("fabric:"))
        signal = "node_net_tx_bps" if fabric == "fabric:ethernet" else "ib_tx_bps"
        m = _median(j, signal)
        if m is not None:
            assert m > 1e8  # at least ~1 Gb/s of collective traffic per node
