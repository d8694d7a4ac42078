"""Each class's telemetry shows its physics (on average over a class, not as a rule for each job)."""

from __future__ import annotations

import time

import numpy as np

from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator_dev.familys import FamilySJob, generate_family_s

from .conftest import START


def _mean(jobs: list[FamilySJob], label: Bottleneck, signal: str, mechanism: str | None = None) -> float:
    vals = [
        float(np.nanmean(p.signals[signal]))
        for j in jobs
        if j.label is label and (mechanism is None or j.mechanism == mechanism)
        for p in j.window.pods
        if signal in p.signals and np.isfinite(p.signals[signal]).any()
    ]
    return float(np.mean(vals)) if vals else float("nan")


def test_gpu_jobs_keep_the_gpu_busier_than_input_bound_jobs(jobs: list[FamilySJob]) -> None:
    gpu = _mean(jobs, Bottleneck.GPU, "gpu_util")
    assert gpu > _mean(jobs, Bottleneck.IO, "gpu_util") and gpu > _mean(jobs, Bottleneck.CPU, "gpu_util")
    assert gpu > 0.6


def test_hbm_bound_jobs_run_dram_near_its_peak(jobs: list[FamilySJob]) -> None:
    hbm = _mean(jobs, Bottleneck.MEMORY, "dram_active", "hbm-bandwidth")
    assert hbm > _mean(jobs, Bottleneck.GPU, "dram_active") and hbm > 0.4


def test_host_memory_pressure_swaps(jobs: list[FamilySJob]) -> None:
    host = _mean(jobs, Bottleneck.MEMORY, "node_psi_mem_some", "host-memory-pressure")
    assert host > 0.1 > _mean(jobs, Bottleneck.GPU, "node_psi_mem_some")
    assert _mean(jobs, Bottleneck.MEMORY, "node_swap_used_frac", "host-memory-pressure") > 0.1


def test_input_bound_jobs_wait_on_their_stage(jobs: list[FamilySJob]) -> None:
    # CPU-bound loaders keep more cores busy per GPU than IO-bound ones, which read more
    cpu = [j for j in jobs if j.label is Bottleneck.CPU]
    assert any(
        np.nanmax(p.signals.get("cpu_throttled_frac", np.zeros(1))) > 0.2 for j in cpu for p in j.window.pods
    ) or any(j.mechanism != "throttled" for j in cpu)
    io_psi = _mean(jobs, Bottleneck.IO, "node_psi_io_some")
    assert io_psi > _mean(jobs, Bottleneck.GPU, "node_psi_io_some")


def test_interconnect_jobs_move_bytes(jobs: list[FamilySJob]) -> None:
    for j in jobs:
        if j.label is Bottleneck.INTERCONNECT and j.mechanism == "network" and "fabric:ib" in j.tags:
            p = j.window.pods[0]
            if "ib_rx_bps" in p.signals:
                assert np.nanmean(p.signals["ib_rx_bps"]) > 1e8


def test_600_jobs_are_quick_enough() -> None:
    t = time.perf_counter()
    generate_family_s(5, 60, start=START)
    assert time.perf_counter() - t < 6.0  # 600 in well under a minute even on a slow CI core
