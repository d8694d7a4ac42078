"""The catalogue of per-pod signals: the contract between the data layer, the simulator and the analysis.

A signal is one time series per pod, aligned on the window's timestamps, in the unit given here.
The data layer (``telemetry/``) builds them from the exporters' metrics with PromQL; the simulator
(``simulation/``) can build the same signals directly for fast training; the analysis only ever sees
signals. GPU signals are the mean over the pod's GPUs unless the description says otherwise.

Families group signals by the exporter (and exporter configuration) that provides them; any family
may be absent on a given cluster, and the analysis must degrade gracefully.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Family(StrEnum):
    """Where a signal comes from; a cluster may lack any of them."""

    DCGM_DEV = "dcgm_dev"  # dcgm-exporter DEV fields: present on every NVIDIA GPU
    DCGM_PROF = "dcgm_prof"  # PROF fields of dcgm-exporter's shipped counters files
    DCGM_PROF_SM = "dcgm_prof_sm"  # SM activity/occupancy: only with a custom counters file
    DCGM_PROF_NVLINK = "dcgm_prof_nvlink"  # NVLink PROF bytes: in neither shipped file
    DCGM_PROF_PIPES = "dcgm_prof_pipes"  # FP32/FP16 pipe activity: only with a custom counters file
    DCGM_POWER_CLOCKS = "dcgm_power_clocks"  # enforced power limit and clock-event reasons, where exported
    CADVISOR = "cadvisor"  # kubelet/cAdvisor container metrics
    CADVISOR_CFS = "cadvisor_cfs"  # CFS throttling: only for containers with a CPU limit
    KSM = "ksm"  # kube-state-metrics resource limits
    NODE = "node"  # node-exporter cpu/disk/memory/network
    NODE_PSI = "node_psi"  # node-exporter pressure (kernel >= 4.20)
    NODE_IB = "node_ib"  # node-exporter infiniband collector: RDMA traffic (InfiniBand, RoCE) netdev never sees
    SIDECAR = "sidecar"  # the collector injected into the pod


@dataclass(frozen=True)
class SignalSpec:
    name: str
    family: Family
    unit: str
    description: str


_SPECS: tuple[SignalSpec, ...] = (
    # --- dcgm-exporter, DEV fields
    SignalSpec("gpu_util", Family.DCGM_DEV, "ratio", "DCGM_FI_DEV_GPU_UTIL / 100: time any kernel ran"),
    SignalSpec("mem_copy_util", Family.DCGM_DEV, "ratio", "DCGM_FI_DEV_MEM_COPY_UTIL / 100"),
    SignalSpec("fb_used_frac", Family.DCGM_DEV, "ratio", "FB_USED / (FB_USED + FB_FREE), max over GPUs"),
    SignalSpec("power_w", Family.DCGM_DEV, "W", "DCGM_FI_DEV_POWER_USAGE"),
    SignalSpec("sm_clock_mhz", Family.DCGM_DEV, "MHz", "DCGM_FI_DEV_SM_CLOCK"),
    SignalSpec("nvlink_total_bps", Family.DCGM_DEV, "B/s", "rate of DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"),
    # --- dcgm-exporter, PROF fields in the shipped counters files
    SignalSpec("gr_engine_active", Family.DCGM_PROF, "ratio", "DCGM_FI_PROF_GR_ENGINE_ACTIVE"),
    SignalSpec("tensor_active", Family.DCGM_PROF, "ratio", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"),
    SignalSpec("dram_active", Family.DCGM_PROF, "ratio", "DCGM_FI_PROF_DRAM_ACTIVE"),
    SignalSpec("pcie_tx_bps", Family.DCGM_PROF, "B/s", "DCGM_FI_PROF_PCIE_TX_BYTES (device to host)"),
    SignalSpec("pcie_rx_bps", Family.DCGM_PROF, "B/s", "DCGM_FI_PROF_PCIE_RX_BYTES (host to device)"),
    # --- dcgm-exporter, PROF fields that need a custom counters file
    SignalSpec("sm_active", Family.DCGM_PROF_SM, "ratio", "DCGM_FI_PROF_SM_ACTIVE"),
    SignalSpec("sm_occupancy", Family.DCGM_PROF_SM, "ratio", "DCGM_FI_PROF_SM_OCCUPANCY"),
    SignalSpec("nvlink_tx_bps", Family.DCGM_PROF_NVLINK, "B/s", "DCGM_FI_PROF_NVLINK_TX_BYTES"),
    SignalSpec("nvlink_rx_bps", Family.DCGM_PROF_NVLINK, "B/s", "DCGM_FI_PROF_NVLINK_RX_BYTES"),
    SignalSpec("fp32_active", Family.DCGM_PROF_PIPES, "ratio", "DCGM_FI_PROF_PIPE_FP32_ACTIVE"),
    SignalSpec("fp16_active", Family.DCGM_PROF_PIPES, "ratio", "DCGM_FI_PROF_PIPE_FP16_ACTIVE"),
    # --- dcgm-exporter, where a counters file exports them
    SignalSpec("power_limit_w", Family.DCGM_POWER_CLOCKS, "W", "DCGM_FI_DEV_POWER_MGMT_LIMIT (the enforced limit)"),
    SignalSpec(
        "clock_slowdown_frac",
        Family.DCGM_POWER_CLOCKS,
        "ratio",
        "share of the pod's GPUs whose DCGM_FI_DEV_CLOCKS_EVENT_REASONS (older: _CLOCK_THROTTLE_REASONS) has a "
        "power-cap, thermal or hardware-slowdown bit set (0x4, 0x8, 0x20, 0x40, 0x80)",
    ),
    # --- kubelet / cAdvisor, summed over the pod's containers except the collector sidecar
    SignalSpec("cpu_cores", Family.CADVISOR, "cores", "rate of container_cpu_usage_seconds_total"),
    SignalSpec("mem_working_set_bytes", Family.CADVISOR, "B", "container_memory_working_set_bytes"),
    SignalSpec("mem_limit_bytes", Family.CADVISOR, "B", "container_spec_memory_limit_bytes (NaN: none)"),
    SignalSpec("fs_read_bps", Family.CADVISOR, "B/s", "rate of container_fs_reads_bytes_total (block only)"),
    SignalSpec("cpu_throttled_frac", Family.CADVISOR_CFS, "ratio", "throttled / total CFS periods"),
    # --- kube-state-metrics
    SignalSpec("cpu_limit_cores", Family.KSM, "cores", "kube_pod_container_resource_limits{resource=cpu}"),
    # --- node-exporter on the pod's node
    SignalSpec("node_cpus", Family.NODE, "cores", "number of CPUs of the node"),
    SignalSpec("node_cpu_busy_frac", Family.NODE, "ratio", "1 - idle - iowait share of node CPU time"),
    SignalSpec("node_cpu_iowait_frac", Family.NODE, "ratio", "iowait share of node CPU time"),
    SignalSpec("node_cpu_system_frac", Family.NODE, "ratio", "system share of node CPU time"),
    SignalSpec("node_disk_read_bps", Family.NODE, "B/s", "rate of node_disk_read_bytes_total, all devices"),
    SignalSpec("node_disk_reads_ps", Family.NODE, "1/s", "rate of node_disk_reads_completed_total"),
    SignalSpec("node_disk_busy_frac", Family.NODE, "ratio", "rate of node_disk_io_time_seconds_total, max device"),
    SignalSpec("node_mem_avail_frac", Family.NODE, "ratio", "MemAvailable / MemTotal"),
    SignalSpec("node_swap_used_frac", Family.NODE, "ratio", "1 - SwapFree / SwapTotal (0 without swap)"),
    SignalSpec("node_majfault_ps", Family.NODE, "1/s", "rate of node_vmstat_pgmajfault"),
    SignalSpec("node_net_rx_bps", Family.NODE, "B/s", "rate of node_network_receive_bytes_total (no lo)"),
    SignalSpec("node_net_tx_bps", Family.NODE, "B/s", "rate of node_network_transmit_bytes_total (no lo)"),
    SignalSpec("node_psi_cpu_some", Family.NODE_PSI, "ratio", "rate of node_pressure_cpu_waiting_seconds_total"),
    SignalSpec("node_psi_io_some", Family.NODE_PSI, "ratio", "rate of node_pressure_io_waiting_seconds_total"),
    SignalSpec("node_psi_io_full", Family.NODE_PSI, "ratio", "rate of node_pressure_io_stalled_seconds_total"),
    SignalSpec("node_psi_mem_some", Family.NODE_PSI, "ratio", "rate of node_pressure_memory_waiting_seconds_total"),
    SignalSpec("node_psi_mem_full", Family.NODE_PSI, "ratio", "rate of node_pressure_memory_stalled_seconds_total"),
    SignalSpec("ib_rx_bps", Family.NODE_IB, "B/s", "rate of node_infiniband_port_data_received_bytes_total, all ports"),
    SignalSpec(
        "ib_tx_bps", Family.NODE_IB, "B/s", "rate of node_infiniband_port_data_transmitted_bytes_total, all ports"
    ),
    # --- the collector sidecar (the pod's own cgroup, so neighbours do not leak in)
    SignalSpec("sc_psi_cpu_some", Family.SIDECAR, "ratio", "pod cgroup cpu.pressure some, as a fraction of time"),
    SignalSpec("sc_psi_io_some", Family.SIDECAR, "ratio", "pod cgroup io.pressure some"),
    SignalSpec("sc_psi_io_full", Family.SIDECAR, "ratio", "pod cgroup io.pressure full"),
    SignalSpec("sc_psi_mem_some", Family.SIDECAR, "ratio", "pod cgroup memory.pressure some"),
    SignalSpec("sc_psi_mem_full", Family.SIDECAR, "ratio", "pod cgroup memory.pressure full"),
    SignalSpec("sc_cpu_cores", Family.SIDECAR, "cores", "pod cgroup cpu.stat usage rate"),
    SignalSpec("sc_throttled_frac", Family.SIDECAR, "ratio", "pod cgroup nr_throttled / nr_periods"),
    SignalSpec("sc_io_read_bps", Family.SIDECAR, "B/s", "pod cgroup io.stat rbytes rate"),
    SignalSpec("sc_majfault_ps", Family.SIDECAR, "1/s", "pod cgroup memory.stat pgmajfault rate"),
    SignalSpec("sc_swapin_ps", Family.SIDECAR, "1/s", "pod cgroup memory.stat pswpin rate (pages back from swap)"),
    SignalSpec("sc_oom_kills", Family.SIDECAR, "1/s", "pod cgroup memory.events oom_kill rate"),
    SignalSpec("sc_procs_running", Family.SIDECAR, "procs", "trainer processes in state R"),
    SignalSpec("sc_procs_iowait", Family.SIDECAR, "procs", "trainer processes in state D"),
    SignalSpec("sc_procs_busy", Family.SIDECAR, "procs", "trainer processes using 0.9 of a core or more"),
)

SIGNALS: dict[str, SignalSpec] = {s.name: s for s in _SPECS}
SIGNAL_NAMES: tuple[str, ...] = tuple(SIGNALS)


def signals_of(family: Family) -> tuple[str, ...]:
    """Names of the signals that one family provides."""
    return tuple(s.name for s in _SPECS if s.family is family)
