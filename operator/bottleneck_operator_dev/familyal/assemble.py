"""The window: the exporters' series read the way the data contract says (contract.sampling).

Counters become ``rate()`` over ``rate_range(step, si)``, gauges ``last_over_time`` over
``gauge_window(step, si)``, each with its own exporter's scrape interval; the ratios (throttled
periods, node CPU modes, memory, FB use, clock-event bits) are formed from those reads, and GPU
signals are averaged over the pod's GPUs unless the contract combines them otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.sampling import Sampler, gauge_window, rate_range
from bottleneck_operator_dev.familyal.exporters import D, P, Series

F = npt.NDArray[np.float64]
SC = "bottleneck_sidecar_"
# The clock-event reason bits the contract counts as a slowdown: power cap, HW slowdown, thermal, brake.
SLOWDOWN_BITS = 0x4 | 0x8 | 0x20 | 0x40 | 0x80


class Reader:
    """Reads one exporter's series at the window's timestamps."""

    def __init__(self, series: Series, at: F, step: float, si: float) -> None:
        self.s = series
        self.sampler = Sampler(series.times, at, range_seconds=rate_range(step, si), window=gauge_window(step, si))

    def last(self, key: str) -> F:
        return self.sampler.last(self.s.gauges[key])

    def rate(self, key: str) -> F:
        return self.sampler.rate(self.s.counters[key])

    def has(self, key: str) -> bool:
        return key in self.s.gauges or key in self.s.counters


def _ratio(a: F, b: F) -> F:
    with np.errstate(divide="ignore", invalid="ignore"):
        out: F = np.where(b > 0, a / b, np.nan)
    return out


def dcgm_signals(r: Reader) -> dict[str, F]:
    """dcgm-exporter's signals: GPU means, FB use as the fullest GPU, the share of slowed GPUs."""
    mean = {
        "gpu_util": (f"{D}GPU_UTIL", 0.01),
        "mem_copy_util": (f"{D}MEM_COPY_UTIL", 0.01),
        "power_w": (f"{D}POWER_USAGE", 1.0),
        "sm_clock_mhz": (f"{D}SM_CLOCK", 1.0),
        "nvlink_total_bps": (f"{D}NVLINK_BANDWIDTH_TOTAL", 1e3),
        "gr_engine_active": (f"{P}GR_ENGINE_ACTIVE", 1.0),
        "tensor_active": (f"{P}PIPE_TENSOR_ACTIVE", 1.0),
        "dram_active": (f"{P}DRAM_ACTIVE", 1.0),
        "pcie_tx_bps": (f"{P}PCIE_TX_BYTES", 1.0),
        "pcie_rx_bps": (f"{P}PCIE_RX_BYTES", 1.0),
        "sm_active": (f"{P}SM_ACTIVE", 1.0),
        "sm_occupancy": (f"{P}SM_OCCUPANCY", 1.0),
        "fp32_active": (f"{P}PIPE_FP32_ACTIVE", 1.0),
        "fp16_active": (f"{P}PIPE_FP16_ACTIVE", 1.0),
        "nvlink_tx_bps": (f"{P}NVLINK_TX_BYTES", 1.0),
        "nvlink_rx_bps": (f"{P}NVLINK_RX_BYTES", 1.0),
        "power_limit_w": (f"{D}POWER_MGMT_LIMIT", 1.0),
    }
    out = {name: r.last(key).mean(axis=0) * scale for name, (key, scale) in mean.items() if r.has(key)}
    used, free = r.last(f"{D}FB_USED"), r.last(f"{D}FB_FREE")
    out["fb_used_frac"] = _ratio(used, used + free).max(axis=0)
    out["xid_code"] = r.last(f"{D}XID_ERRORS").max(axis=0)
    if r.has(f"{D}CLOCKS_EVENT_REASONS"):
        bits = r.last(f"{D}CLOCKS_EVENT_REASONS")
        slowed = np.where(np.isfinite(bits), (np.nan_to_num(bits).astype(np.int64) & SLOWDOWN_BITS) > 0, np.nan)
        out["clock_slowdown_frac"] = slowed.mean(axis=0)
    return out


def node_signals(r: Reader, cores: int, psi: bool, ib: bool) -> dict[str, F]:
    """node-exporter's signals of the pod's node."""
    mode = {m: r.rate(f'node_cpu_seconds_total{{mode="{m}"}}') for m in ("user", "system", "idle", "iowait")}
    total = mode["user"] + mode["system"] + mode["idle"] + mode["iowait"]
    mem_total = r.last("node_memory_MemTotal_bytes")
    swap_total = r.last("node_memory_SwapTotal_bytes")
    swap_used = np.where(swap_total > 0, 1.0 - _ratio(r.last("node_memory_SwapFree_bytes"), swap_total), 0.0)
    out = {
        "node_cpus": np.where(np.isfinite(mem_total), float(cores), np.nan),
        "node_cpu_busy_frac": 1.0 - _ratio(mode["idle"] + mode["iowait"], total),
        "node_cpu_iowait_frac": _ratio(mode["iowait"], total),
        "node_cpu_system_frac": _ratio(mode["system"], total),
        "node_disk_read_bps": r.rate("node_disk_read_bytes_total"),
        "node_disk_reads_ps": r.rate("node_disk_reads_completed_total"),
        "node_disk_busy_frac": r.rate("node_disk_io_time_seconds_total"),
        "node_mem_avail_frac": _ratio(r.last("node_memory_MemAvailable_bytes"), mem_total),
        "node_swap_used_frac": np.where(np.isfinite(swap_total), swap_used, np.nan),
        "node_majfault_ps": r.rate("node_vmstat_pgmajfault"),
        "node_net_rx_bps": r.rate('node_network_receive_bytes_total{device="eth0"}'),
        "node_net_tx_bps": r.rate('node_network_transmit_bytes_total{device="eth0"}'),
    }
    if psi:
        for name, res, kind in (
            ("node_psi_cpu_some", "cpu", "waiting"),
            ("node_psi_io_some", "io", "waiting"),
            ("node_psi_io_full", "io", "stalled"),
            ("node_psi_mem_some", "memory", "waiting"),
            ("node_psi_mem_full", "memory", "stalled"),
        ):
            out[name] = r.rate(f"node_pressure_{res}_{kind}_seconds_total")
    if ib:
        out["ib_rx_bps"] = r.rate('node_infiniband_port_data_received_bytes_total{device="mlx5_0",port="1"}')
        out["ib_tx_bps"] = r.rate('node_infiniband_port_data_transmitted_bytes_total{device="mlx5_0",port="1"}')
    return out


def cadvisor_signals(r: Reader, limit_sources: Mapping[str, F]) -> dict[str, F]:
    """cAdvisor's signals; the memory limit from cAdvisor, else kube-state-metrics, else the sidecar."""
    out = {
        "cpu_cores": r.rate("container_cpu_usage_seconds_total"),
        "mem_working_set_bytes": r.last("container_memory_working_set_bytes"),
        "fs_read_bps": r.rate("container_fs_reads_bytes_total"),
    }
    limit = r.last("container_spec_memory_limit_bytes") if r.has("container_spec_memory_limit_bytes") else None
    for other in limit_sources.values():
        limit = other if limit is None else np.where(np.isfinite(limit), limit, other)
    out["mem_limit_bytes"] = limit if limit is not None else np.full(out["cpu_cores"].shape, np.nan)
    if r.has("container_cpu_cfs_periods_total"):
        out["cpu_throttled_frac"] = _ratio(
            r.rate("container_cpu_cfs_throttled_periods_total"), r.rate("container_cpu_cfs_periods_total")
        )
    return out


def sidecar_signals(r: Reader, net: bool) -> dict[str, F]:
    """The collector's signals of the pod's own cgroup."""
    pw, ps = f"{SC}pressure_waiting_seconds_total", f"{SC}pressure_stalled_seconds_total"
    out = {
        "sc_psi_cpu_some": r.rate(f'{pw}{{resource="cpu"}}'),
        "sc_psi_io_some": r.rate(f'{pw}{{resource="io"}}'),
        "sc_psi_io_full": r.rate(f'{ps}{{resource="io"}}'),
        "sc_psi_mem_some": r.rate(f'{pw}{{resource="memory"}}'),
        "sc_psi_mem_full": r.rate(f'{ps}{{resource="memory"}}'),
        "sc_cpu_cores": r.rate(f"{SC}cpu_usage_seconds_total"),
        "sc_io_read_bps": r.rate(f"{SC}io_read_bytes_total"),
        "sc_majfault_ps": r.rate(f"{SC}memory_major_faults_total"),
        "sc_swapin_ps": r.rate(f"{SC}memory_swapins_total"),
        "sc_oom_kills": r.rate(f"{SC}memory_oom_kills_total"),
        "sc_procs_running": r.last(f'{SC}processes{{state="running"}}'),
        "sc_procs_iowait": r.last(f'{SC}processes{{state="iowait"}}'),
        "sc_procs_busy": r.last(f"{SC}busy_processes"),
    }
    if r.has(f"{SC}cpu_periods_total"):
        out["sc_throttled_frac"] = _ratio(r.rate(f"{SC}cpu_throttled_periods_total"), r.rate(f"{SC}cpu_periods_total"))
    if net:
        out["sc_net_rx_bps"] = r.rate(f"{SC}network_receive_bytes_total")
        out["sc_net_tx_bps"] = r.rate(f"{SC}network_transmit_bytes_total")
    return out
