"""Job-level totals in physical units (bytes/s, cores), for evidence sentences and capacity planning.

Features are ratios and statistics; a user wants "reads 0.9 GB/s for 8 GPUs". Totals add pods up,
counting node-level signals once per node (pods of one job on one node share the node's disk and NIC).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from bottleneck_operator.analysis.features.hardware import spec_for
from bottleneck_operator.contract.window import JobWindow, PodWindow


def _mean(pod: PodWindow, name: str) -> float | None:
    values = pod.signals.get(name)
    if values is None or len(values) == 0:
        return None
    finite = values[~np.isnan(values)]
    return float(finite.mean()) if len(finite) else None


def _job_total(window: JobWindow, name: str, *, per_gpu: bool = False, node_level: bool = False) -> float | None:
    """Sum over pods of a signal's mean (GPU means times GPU count; node signals once per node)."""
    total = 0.0
    seen_nodes: set[str] = set()
    found = False
    for pod in window.pods:
        if node_level and pod.node:
            if pod.node in seen_nodes:
                continue
            seen_nodes.add(pod.node)
        m = _mean(pod, name)
        if m is None:
            continue
        found = True
        total += m * max(pod.gpu_count, 1) if per_gpu else m
    return total if found else None


def _first(*values: float | None) -> float | None:
    for v in values:
        if v is not None:
            return v
    return None


@dataclass(frozen=True)
class JobSummary:
    """Whole-job figures over the window, None where the signals are missing.

    Attributes:
        gpus: GPUs of the job.
        gpu_active: mean GPU activity (sm_active > gr_engine_active > gpu_util per pod), 0..1.
        activity_signal: which signal ``gpu_active`` comes from.
        read_bps: block reads of the job (sidecar, else cAdvisor, else the nodes' disks).
        net_rx_bps / net_tx_bps: the job's network bytes: its pods' own (the collector's count of each
            pod's network namespace) where counted, else its nodes' (neighbours included).
        net_own: whether ``net_rx_bps`` and ``net_tx_bps`` are the pods' own count.
        pcie_rx_bps: host-to-device bytes over all the job's GPUs; pcie_capacity_bps their link total.
        nvlink_bps: NVLink bytes over all GPUs; nvlink_capacity_bps their total capacity (0: none).
        cpu_cores / cpu_limit_cores: CPU used and allowed (sum over pods).
        tensor_active: mean tensor-pipe activity.
        gpu_model: the GPU model name of the first pod that reports one.
    """

    gpus: int
    gpu_active: float | None
    activity_signal: str | None
    read_bps: float | None
    net_rx_bps: float | None
    net_tx_bps: float | None
    pcie_rx_bps: float | None
    pcie_capacity_bps: float
    nvlink_bps: float | None
    nvlink_capacity_bps: float
    cpu_cores: float | None
    cpu_limit_cores: float | None
    tensor_active: float | None
    gpu_model: str | None
    net_own: bool = False


def _activity(window: JobWindow) -> tuple[float | None, str | None]:
    for name in ("sm_active", "gr_engine_active", "gpu_util"):
        means = [m for p in window.pods if (m := _mean(p, name)) is not None]
        if means:
            return float(np.mean(means)), name
    return None, None


def summarize(window: JobWindow) -> JobSummary:
    """Whole-job totals of one window.

    Args:
        window: the job window.

    Returns:
        The summary (fields None where the data is missing).
    """
    gpus = max(window.gpu_count, 0)
    active, signal = _activity(window)
    pcie_cap = sum(spec_for(p.gpu_model).pcie_bps * max(p.gpu_count, 1) for p in window.pods)
    nv_cap = sum(spec_for(p.gpu_model).nvlink_bps * max(p.gpu_count, 1) for p in window.pods)
    nv_prof_tx = _job_total(window, "nvlink_tx_bps", per_gpu=True)
    nv_prof_rx = _job_total(window, "nvlink_rx_bps", per_gpu=True)
    nv_prof = None if nv_prof_tx is None and nv_prof_rx is None else (nv_prof_tx or 0.0) + (nv_prof_rx or 0.0)
    tensor = [m for p in window.pods if (m := _mean(p, "tensor_active")) is not None]
    model = next((p.gpu_model for p in window.pods if p.gpu_model), None)
    # a node's interfaces carry its neighbours' bytes too: the pods' own count says what the job moved
    own_rx, own_tx = _job_total(window, "sc_net_rx_bps"), _job_total(window, "sc_net_tx_bps")
    net_own = own_rx is not None
    return JobSummary(
        gpus=gpus,
        gpu_active=active,
        activity_signal=signal,
        read_bps=_first(
            _job_total(window, "sc_io_read_bps"),
            _job_total(window, "fs_read_bps"),
            _job_total(window, "node_disk_read_bps", node_level=True),
        ),
        net_rx_bps=own_rx if net_own else _job_total(window, "node_net_rx_bps", node_level=True),
        net_tx_bps=own_tx if net_own else _job_total(window, "node_net_tx_bps", node_level=True),
        pcie_rx_bps=_job_total(window, "pcie_rx_bps", per_gpu=True),
        pcie_capacity_bps=pcie_cap,
        nvlink_bps=_first(nv_prof, _job_total(window, "nvlink_total_bps", per_gpu=True)),
        nvlink_capacity_bps=nv_cap,
        cpu_cores=_first(_job_total(window, "sc_cpu_cores"), _job_total(window, "cpu_cores")),
        cpu_limit_cores=_job_total(window, "cpu_limit_cores"),
        tensor_active=float(np.mean(tensor)) if tensor else None,
        gpu_model=model,
        net_own=net_own,
    )


def human_bytes(bps: float) -> str:
    """A byte rate for a sentence: '1.9 GB/s', '240 MB/s'."""
    if not math.isfinite(bps):
        return "n/a"
    for unit, scale in (("TB/s", 1e12), ("GB/s", 1e9), ("MB/s", 1e6), ("kB/s", 1e3)):
        if abs(bps) >= scale:
            return f"{bps / scale:.3g} {unit}"
    return f"{bps:.0f} B/s"


def pct(x: float) -> str:
    """A ratio as a percentage for a sentence."""
    return f"{100 * x:.0f} %"
