"""Small hand-built job windows with a class's textbook signature, for unit tests of the analysis.

They are deliberately simple (independent of the simulator): each class sets the few signals that
DESIGN.md names as its signature and leaves the rest at calm values.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from bottleneck_operator.analysis.explain.advice import Facts
from bottleneck_operator.analysis.features.extract import extract_features
from bottleneck_operator.analysis.features.summary import summarize
from bottleneck_operator.contract.signals import SIGNAL_NAMES, Family, signals_of
from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator.contract.window import DataQuality, JobWindow, PodWindow

A100 = "NVIDIA A100-SXM4-80GB"
GB = 1e9

CALM: dict[str, float] = {
    "gpu_util": 0.9,
    "mem_copy_util": 0.2,
    "fb_used_frac": 0.6,
    "power_w": 300.0,
    "sm_clock_mhz": 1400.0,
    "nvlink_total_bps": 5 * GB,
    "gr_engine_active": 0.85,
    "tensor_active": 0.35,
    "dram_active": 0.3,
    "pcie_tx_bps": 0.5 * GB,
    "pcie_rx_bps": 1.5 * GB,
    "sm_active": 0.8,
    "sm_occupancy": 0.4,
    "nvlink_tx_bps": 2 * GB,
    "nvlink_rx_bps": 2 * GB,
    "cpu_cores": 12.0,
    "mem_working_set_bytes": 60 * GB,
    "mem_limit_bytes": 200 * GB,
    "fs_read_bps": 0.3 * GB,
    "cpu_throttled_frac": 0.01,
    "cpu_limit_cores": 32.0,
    "node_cpus": 96.0,
    "node_cpu_busy_frac": 0.25,
    "node_cpu_iowait_frac": 0.01,
    "node_cpu_system_frac": 0.03,
    "node_disk_read_bps": 0.3 * GB,
    "node_disk_reads_ps": 2000.0,
    "node_disk_busy_frac": 0.2,
    "node_mem_avail_frac": 0.6,
    "node_swap_used_frac": 0.0,
    "node_majfault_ps": 2.0,
    "node_net_rx_bps": 0.1 * GB,
    "node_net_tx_bps": 0.05 * GB,
    "node_psi_cpu_some": 0.02,
    "node_psi_io_some": 0.01,
    "node_psi_io_full": 0.005,
    "node_psi_mem_some": 0.0,
    "node_psi_mem_full": 0.0,
    "sc_psi_cpu_some": 0.02,
    "sc_psi_io_some": 0.01,
    "sc_psi_io_full": 0.0,
    "sc_psi_mem_some": 0.0,
    "sc_psi_mem_full": 0.0,
    "sc_cpu_cores": 12.0,
    "sc_throttled_frac": 0.01,
    "sc_io_read_bps": 0.3 * GB,
    "sc_majfault_ps": 1.0,
    "sc_procs_running": 10.0,
    "sc_procs_iowait": 0.2,
    "sc_procs_busy": 1.0,
    "fp32_active": 0.05,
    "fp16_active": 0.02,
    "power_limit_w": 400.0,
    "clock_slowdown_frac": 0.0,
    "ib_rx_bps": 0.0,
    "ib_tx_bps": 0.0,
    "sc_swapin_ps": 0.0,
    "sc_oom_kills": 0.0,
    "sc_net_rx_bps": 0.08 * GB,
    "sc_net_tx_bps": 0.04 * GB,
}

SIGNATURE: dict[Bottleneck, dict[str, float]] = {
    Bottleneck.IO: {
        "gpu_util": 0.35,
        "gr_engine_active": 0.3,
        "sm_active": 0.28,
        "tensor_active": 0.1,
        "node_cpu_iowait_frac": 0.35,
        "node_psi_io_some": 0.6,
        "node_psi_io_full": 0.4,
        "sc_psi_io_some": 0.6,
        "node_disk_busy_frac": 0.97,
        "cpu_cores": 5.0,
        "sc_cpu_cores": 5.0,
        "sc_procs_iowait": 8.0,
        "sc_procs_running": 2.0,
        "pcie_rx_bps": 0.4 * GB,
        "node_disk_read_bps": 1.9 * GB,
        "fs_read_bps": 1.9 * GB,
        "sc_io_read_bps": 1.9 * GB,
    },
    Bottleneck.CPU: {
        "gpu_util": 0.4,
        "gr_engine_active": 0.35,
        "sm_active": 0.33,
        "tensor_active": 0.12,
        "cpu_cores": 15.9,
        "sc_cpu_cores": 15.9,
        "cpu_limit_cores": 16.0,
        "cpu_throttled_frac": 0.7,
        "sc_throttled_frac": 0.7,
        "sc_psi_cpu_some": 0.6,
        "node_cpu_busy_frac": 0.3,
        "pcie_rx_bps": 0.5 * GB,
    },
    Bottleneck.INTERCONNECT: {
        "gpu_util": 0.97,
        "gr_engine_active": 0.4,
        "sm_active": 0.35,
        "tensor_active": 0.12,
        "node_net_rx_bps": 11 * GB,
        "node_net_tx_bps": 11 * GB,
        "sc_net_rx_bps": 10 * GB,
        "sc_net_tx_bps": 10 * GB,
        "nvlink_total_bps": 200 * GB,
        "nvlink_tx_bps": 200 * GB,
        "nvlink_rx_bps": 200 * GB,
        "pcie_rx_bps": 3 * GB,
    },
    Bottleneck.GPU: {"gpu_util": 0.99, "gr_engine_active": 0.95, "sm_active": 0.92, "tensor_active": 0.45},
    Bottleneck.MEMORY: {
        "gpu_util": 0.98,
        "gr_engine_active": 0.9,
        "sm_active": 0.85,
        "tensor_active": 0.08,
        "dram_active": 0.82,
        "mem_copy_util": 0.85,  # NVML's memory utilization follows DRAM activity (gpu-hbm read 1.00)
        "fb_used_frac": 0.97,
    },
}


def make_window(
    cls: Bottleneck,
    *,
    pods: int = 1,
    samples: int = 30,
    step: float = 30.0,
    drop: Iterable[Family] = (),
    seed: int = 0,
    noise: float = 0.03,
    coverage: float = 1.0,
    gpu_model: str = A100,
    overrides: dict[str, float] | None = None,
) -> JobWindow:
    """A window of ``pods`` pods with the signature of ``cls`` plus a little noise.

    Args:
        cls: the class whose signature to draw.
        pods: pods in the job (one node each).
        samples: samples per series.
        step: seconds between samples.
        drop: families left out, as a cluster without them would.
        seed: noise seed.
        noise: relative noise.
        coverage: quality coverage to report.
        gpu_model: the dcgm modelName.
        overrides: signal values set on top of the class's signature (to mix signatures).

    Returns:
        The window.
    """
    rng = np.random.default_rng(seed)
    dropped = {n for f in drop for n in signals_of(f)}
    values = {**CALM, **SIGNATURE[cls], **(overrides or {})}
    pod_windows = []
    for p in range(pods):
        signals = {}
        for name in SIGNAL_NAMES:
            if name in dropped:
                continue
            base = values[name]
            series = base * (1.0 + noise * rng.standard_normal(samples))
            if (
                name.endswith("_frac")
                or name
                in (
                    "gpu_util",
                    "gr_engine_active",
                    "sm_active",
                    "tensor_active",
                    "dram_active",
                    "sm_occupancy",
                    "mem_copy_util",
                )
                or name.startswith(("node_psi", "sc_psi"))
            ):
                series = np.clip(series, 0.0, 1.0)
            signals[name] = np.maximum(series, 0.0)
        pod_windows.append(PodWindow(f"job-{cls.value.lower()}-{p}", f"node-{p}", gpu_model, 8, signals))
    families = frozenset(f for f in Family if f not in set(drop))
    start = 1_767_225_600.0
    return JobWindow(
        namespace="ml",
        job=f"job-{cls.value.lower()}",
        start=start,
        end=start + samples * step,
        step=step,
        timestamps=start + step * np.arange(samples, dtype=np.float64),
        pods=tuple(pod_windows),
        quality=DataQuality(families=families, coverage=coverage, scrape_interval=15.0),
    )


# The CPU class's own-cgroup signals: with these on an IO window, both classes' evidence holds. The
# loader's bursts are throttled while its average leaves a quarter of the limit: were it at the limit,
# the CPU would bind as soon as IO were fixed, and IO's stall could gain nothing (headroom's ceiling).
CPU_STARVED: dict[str, float] = {
    **{
        k: SIGNATURE[Bottleneck.CPU][k]
        for k in ("cpu_limit_cores", "cpu_throttled_frac", "sc_throttled_frac", "sc_psi_cpu_some")
    },
    "cpu_cores": 12.0,
    "sc_cpu_cores": 12.0,
}


# Eight loader processes at a full core each (num_workers=0 with 8 GPUs, or 8 workers at their ceiling):
# 8 cores busy, far from the 64-core limit and the node's size, nothing throttled.
LOADERS_AT_CEILING: dict[str, float] = {
    "gpu_util": 0.3,
    "gr_engine_active": 0.25,
    "sm_active": 0.22,
    "cpu_cores": 8.0,
    "sc_cpu_cores": 8.0,
    "cpu_limit_cores": 64.0,
    "cpu_throttled_frac": 0.0,
    "sc_throttled_frac": 0.0,
    "sc_psi_cpu_some": 0.02,
    "node_cpu_busy_frac": 0.1,
    "sc_procs_busy": 8.0,  # each of the eight trainer processes at a full core
}


def facts(w: JobWindow) -> Facts:
    """What the advice rules read of one window."""
    return Facts(summarize(w), extract_features([w])[0])
