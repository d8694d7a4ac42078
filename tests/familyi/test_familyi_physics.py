"""Per class, the telemetry says what family I's own step model put into it.

Each check follows from the stage model in ``familyi/stages.py`` and the exporters' definitions, not
from any reading of the project's analysis: a job whose GPUs wait for input shows idle GPUs, a job
stalled on host memory shows the kernel's pressure accounting, and so on.
"""

from __future__ import annotations

import numpy as np
import pytest

from bottleneck_operator.contract.signals import Family
from bottleneck_operator.contract.verdict import Bottleneck, Mechanism
from bottleneck_operator_dev.familyi import FamilyIJob, generate_family_i

START = 1_760_000_000.0


@pytest.fixture(scope="module")
def family() -> list[FamilyIJob]:
    return generate_family_i(23, 200, start=START, step=30.0)


def _median(job: FamilyIJob, name: str) -> float | None:
    rows = [p.signals[name] for p in job.window.pods if name in p.signals and np.isfinite(p.signals[name]).any()]
    return float(np.median([np.nanmedian(r) for r in rows])) if rows else None


def _of(family: list[FamilyIJob], label: Bottleneck, mechanism: str | None = None) -> list[FamilyIJob]:
    return [j for j in family if j.label is label and (mechanism is None or j.mechanism == mechanism)]


def _medians(jobs: list[FamilyIJob], name: str) -> np.ndarray:
    values = [_median(j, name) for j in jobs]
    return np.asarray([v for v in values if v is not None])


def test_gpus_wait_when_input_bounds_the_step(family: list[FamilyIJob]) -> None:
    waiting = np.concatenate([_medians(_of(family, c), "gpu_util") for c in (Bottleneck.IO, Bottleneck.CPU)])
    busy = _medians(_of(family, Bottleneck.GPU, Mechanism.COMPUTE.value), "gpu_util")
    assert waiting.size >= 40 and busy.size >= 20
    assert np.median(waiting) < np.median(busy) - 0.15
    assert (busy > 0.5).all()


def test_io_bound_jobs_read_where_their_storage_lives(family: list[FamilyIJob]) -> None:
    local = _of(family, Bottleneck.IO, Mechanism.LOCAL_DISK.value)
    remote = _of(family, Bottleneck.IO, Mechanism.NETWORK_STORAGE.value)
    assert local and remote
    assert (_medians(local, "node_disk_read_bps") > 5e7).all()
    assert (_medians(remote, "node_net_rx_bps") > 5e7).all()
    assert (_medians(remote, "fs_read_bps") == 0.0).all()  # cAdvisor counts block devices only
    blocked = [j for j in local if _median(j, "sc_psi_io_some") is not None]
    assert blocked and (_medians(blocked, "sc_psi_io_some") > 0.2).all()


def test_cpu_bound_jobs_show_their_cap(family: list[FamilyIJob]) -> None:
    throttled = [j for j in _of(family, Bottleneck.CPU, Mechanism.THROTTLED.value) if _median(j, "cpu_throttled_frac")]
    assert throttled and (_medians(throttled, "cpu_throttled_frac") > 0.3).all()
    saturated = _of(family, Bottleneck.CPU, Mechanism.SATURATED.value)
    assert saturated and (_medians(saturated, "node_cpu_busy_frac") > 0.85).all()
    few = _of(family, Bottleneck.CPU, Mechanism.TOO_FEW_WORKERS.value)
    assert few
    for job in few:  # at most 3 workers and a trainer per GPU, a few cores of reclaim and HTTP reads
        cores, gpus = _median(job, "cpu_cores"), job.window.pods[0].gpu_count
        assert cores is None or cores < 1.1 * (5.05 * gpus + 6.25)


def test_interconnect_jobs_move_bytes_on_their_link(family: list[FamilyIJob]) -> None:
    network = _of(family, Bottleneck.INTERCONNECT, Mechanism.NETWORK.value)
    assert network and all(len(j.window.pods) >= 2 for j in network)
    for job in network:
        rdma = any(t.startswith(("ib-", "roce-")) for t in job.tags)
        port, netdev = _median(job, "ib_rx_bps"), _median(job, "node_net_rx_bps")
        if rdma and port is not None:
            assert port > 5e8
        elif rdma and netdev is not None:
            assert netdev < 5e8  # RDMA bypasses the netdev counters: without port counters nothing shows
        elif netdev is not None:
            assert netdev > 5e8
    nvlink = _of(family, Bottleneck.INTERCONNECT, Mechanism.NVLINK.value)
    assert nvlink and (_medians(nvlink, "nvlink_total_bps") > 1e10).all()
    pcie = [j for j in _of(family, Bottleneck.INTERCONNECT, Mechanism.PCIE.value) if _median(j, "pcie_rx_bps")]
    assert pcie and np.median(_medians(pcie, "pcie_rx_bps")) > 3e9


def test_hbm_bound_jobs_keep_dram_busy_and_tensor_pipes_light(family: list[FamilyIJob]) -> None:
    hbm = [j for j in _of(family, Bottleneck.MEMORY, Mechanism.HBM_BANDWIDTH.value) if _median(j, "dram_active")]
    compute = [j for j in _of(family, Bottleneck.GPU, Mechanism.COMPUTE.value) if _median(j, "dram_active")]
    assert hbm and compute
    assert (_medians(hbm, "dram_active") > _medians(hbm, "tensor_active")).all()
    assert np.median(_medians(hbm, "dram_active")) > np.median(_medians(compute, "dram_active"))
    assert np.median(_medians(hbm, "tensor_active")) < np.median(_medians(compute, "tensor_active"))


def test_host_memory_pressure_shows_in_the_kernel_s_accounting(family: list[FamilyIJob]) -> None:
    host = _of(family, Bottleneck.MEMORY, Mechanism.HOST_MEMORY_PRESSURE.value)
    with_sidecar = [j for j in host if Family.SIDECAR in j.window.quality.families]
    assert with_sidecar
    assert (_medians(with_sidecar, "sc_psi_mem_some") > 0.02).all()
    assert (_medians(with_sidecar, "sc_majfault_ps") > 100.0).all()
    swapping = [j for j in with_sidecar if "swap" in j.tags]
    assert swapping and (_medians(swapping, "sc_swapin_ps") > 100.0).all()
    others = [j for j in family if j.label is not Bottleneck.MEMORY and Family.SIDECAR in j.window.quality.families]
    assert np.median(_medians(others, "sc_psi_mem_some")) < 0.02


def test_a_full_framebuffer_is_no_class_of_its_own(family: list[FamilyIJob]) -> None:
    full = {j.label for j in family if (_median(j, "fb_used_frac") or 0.0) > 0.9}
    assert len(full) >= 4  # the caching allocator fills memory in healthy and stalled jobs alike
