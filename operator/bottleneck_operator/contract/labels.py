"""Plain names for the signals of :mod:`.signals`, for people: plot axes, legends, captions.

The signal names are ids for code (``gr_engine_active``, ``sc_io_read_bps``); a reader of a report
wants "GPU graphics engine busy" and a unit. One table, beside the signal contract whose units it
pairs with, so every page and table names a signal the same way; a test keeps it complete.
"""

from __future__ import annotations

from typing import Final

from bottleneck_operator.contract.signals import SIGNALS

SIGNAL_LABELS: Final[dict[str, str]] = {
    # dcgm-exporter, DEV fields
    "gpu_util": "GPU busy (any kernel running)",
    "mem_copy_util": "GPU memory copy engine busy",
    "fb_used_frac": "GPU memory in use",
    "power_w": "GPU power draw",
    "sm_clock_mhz": "GPU SM clock",
    "nvlink_total_bps": "NVLink traffic",
    # dcgm-exporter, PROF fields
    "gr_engine_active": "GPU graphics engine busy",
    "tensor_active": "tensor cores busy",
    "dram_active": "GPU memory bandwidth in use",
    "pcie_tx_bps": "PCIe GPU to host",
    "pcie_rx_bps": "PCIe host to GPU",
    "sm_active": "SMs busy",
    "sm_occupancy": "SM occupancy",
    "nvlink_tx_bps": "NVLink sent",
    "nvlink_rx_bps": "NVLink received",
    "fp32_active": "FP32 pipes busy",
    "fp16_active": "FP16 pipes busy",
    "power_limit_w": "GPU power limit",
    "clock_slowdown_frac": "GPUs with clocks slowed (power, heat)",
    # kubelet / cAdvisor, kube-state-metrics
    "cpu_cores": "CPU used by the pod",
    "mem_working_set_bytes": "pod memory working set",
    "mem_limit_bytes": "pod memory limit",
    "fs_read_bps": "pod disk reads",
    "cpu_throttled_frac": "CPU throttled periods",
    "cpu_limit_cores": "pod CPU limit",
    # node-exporter
    "node_cpus": "node CPUs",
    "node_cpu_busy_frac": "node CPU busy",
    "node_cpu_iowait_frac": "node CPU waiting for I/O",
    "node_cpu_system_frac": "node CPU in the kernel",
    "node_disk_read_bps": "node disk reads",
    "node_disk_reads_ps": "node disk read operations",
    "node_disk_busy_frac": "node disk busy",
    "node_mem_avail_frac": "node memory available",
    "node_swap_used_frac": "node swap in use",
    "node_majfault_ps": "node major page faults",
    "node_net_rx_bps": "node network received",
    "node_net_tx_bps": "node network sent",
    "node_psi_cpu_some": "node CPU pressure",
    "node_psi_io_some": "node I/O pressure",
    "node_psi_io_full": "node I/O pressure (all tasks)",
    "node_psi_mem_some": "node memory pressure",
    "node_psi_mem_full": "node memory pressure (all tasks)",
    "ib_rx_bps": "InfiniBand/RoCE received",
    "ib_tx_bps": "InfiniBand/RoCE sent",
    # the collector: the pod's own cgroup
    "sc_psi_cpu_some": "pod waiting for CPU",
    "sc_psi_io_some": "pod waiting for I/O",
    "sc_psi_io_full": "pod stalled on I/O (all tasks)",
    "sc_psi_mem_some": "pod waiting for memory",
    "sc_psi_mem_full": "pod stalled on memory (all tasks)",
    "sc_cpu_cores": "CPU used by the pod",
    "sc_throttled_frac": "pod CPU throttled periods",
    "sc_io_read_bps": "pod storage reads",
    "sc_net_rx_bps": "pod network received",
    "sc_net_tx_bps": "pod network sent",
    "sc_majfault_ps": "pod major page faults",
    "sc_swapin_ps": "pod pages swapped in",
    "sc_oom_kills": "pod out-of-memory kills",
    "sc_procs_running": "trainer processes running",
    "sc_procs_iowait": "trainer processes waiting on I/O",
    "sc_procs_busy": "trainer processes at a full core",
    # context
    "xid_code": "last GPU XID error code",
}

# Units as a reader writes them; "ratio" signals are shown as percentages.
UNIT_NAMES: Final[dict[str, str]] = {"1/s": "per second", "procs": "processes", "ratio": "%"}


def signal_label(signal: str) -> str:
    """The plain name of a signal; an unknown id is returned as it is rather than hidden."""
    return SIGNAL_LABELS.get(signal, signal)


def signal_unit(signal: str) -> str:
    """The unit of a signal as the contract declares it ("" for an unknown id)."""
    spec = SIGNALS.get(signal)
    return spec.unit if spec else ""
