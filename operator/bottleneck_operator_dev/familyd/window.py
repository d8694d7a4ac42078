"""From stored samples to the window the analysis reads, made as the data layer makes it.

Counters become ``rate(counter[R])`` and gauges ``last_over_time(gauge[W])`` at each window
timestamp, with R and W from the exporter's scrape interval (contract/sampling.py); signals that
are ratios of counters (throttled periods over periods, CPU modes over all modes) are ratios of
those rates. Only the families the cluster publishes are kept, and only names of the contract's
signal table are emitted.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from bottleneck_operator.contract.sampling import Sampler, gauge_window, rate_range
from bottleneck_operator.contract.signals import SIGNALS, Family
from bottleneck_operator_dev.familyd.scrapes import Scrapes
from bottleneck_operator_dev.familyd.stages import FloatArray

Rows = dict[str, FloatArray]


def _sampler(s: Scrapes, at: FloatArray, step: float, interval: float, major: int) -> Sampler:
    return Sampler(
        s.times,
        at,
        range_seconds=rate_range(step, interval),
        window=gauge_window(step, interval),
        prometheus_major=major,
    )


def _ratio(num: FloatArray, den: FloatArray) -> FloatArray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(np.clip(num / den, 0.0, 1.0), dtype=np.float64)


def dcgm_signals(s: Scrapes, smp: Sampler) -> Rows:
    """Signal rows (pods, T) from dcgm-exporter's fields."""
    g = {k: smp.last(v) for k, v in s.gauges.items()}
    used, free = g["DCGM_FI_DEV_FB_USED"], g["DCGM_FI_DEV_FB_FREE"]
    out = {
        "gpu_util": g["DCGM_FI_DEV_GPU_UTIL"] / 100.0,
        "mem_copy_util": g["DCGM_FI_DEV_MEM_COPY_UTIL"] / 100.0,
        "fb_used_frac": _ratio(used, used + free),
        "power_w": g["DCGM_FI_DEV_POWER_USAGE"],
        "sm_clock_mhz": g["DCGM_FI_DEV_SM_CLOCK"],
        "xid_code": g["DCGM_FI_DEV_XID_ERRORS"],
        "gr_engine_active": g["DCGM_FI_PROF_GR_ENGINE_ACTIVE"],
        "tensor_active": g["DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"],
        "dram_active": g["DCGM_FI_PROF_DRAM_ACTIVE"],
        "pcie_tx_bps": g["DCGM_FI_PROF_PCIE_TX_BYTES"],
        "pcie_rx_bps": g["DCGM_FI_PROF_PCIE_RX_BYTES"],
        "sm_active": g["DCGM_FI_PROF_SM_ACTIVE"],
        "sm_occupancy": g["DCGM_FI_PROF_SM_OCCUPANCY"],
        "fp32_active": g["DCGM_FI_PROF_PIPE_FP32_ACTIVE"],
        "fp16_active": g["DCGM_FI_PROF_PIPE_FP16_ACTIVE"],
        "power_limit_w": g["DCGM_FI_DEV_POWER_MGMT_LIMIT"],
        "clock_slowdown_frac": g["clock_slowdown_frac"],
    }
    if "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL" in g:
        out["nvlink_total_bps"] = g["DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"]
        out["nvlink_tx_bps"] = g["DCGM_FI_PROF_NVLINK_TX_BYTES"]
        out["nvlink_rx_bps"] = g["DCGM_FI_PROF_NVLINK_RX_BYTES"]
    return out


def cadvisor_signals(s: Scrapes, smp: Sampler) -> Rows:
    r = {k: smp.rate(v) for k, v in s.counters.items()}
    out = {
        "cpu_cores": r["container_cpu_usage_seconds_total"],
        "fs_read_bps": r["container_fs_reads_bytes_total"],
        "mem_working_set_bytes": smp.last(s.gauges["container_memory_working_set_bytes"]),
    }
    if "container_cpu_cfs_periods_total" in r:
        out["cpu_throttled_frac"] = _ratio(
            r["container_cpu_cfs_throttled_periods_total"], r["container_cpu_cfs_periods_total"]
        )
    return out


def ksm_signals(s: Scrapes, smp: Sampler) -> Rows:
    out = {}
    if "cpu_limit" in s.gauges:
        out["cpu_limit_cores"] = smp.last(s.gauges["cpu_limit"])
    if "memory_limit" in s.gauges:
        out["mem_limit_bytes"] = smp.last(s.gauges["memory_limit"])
    return out


def sidecar_signals(s: Scrapes, smp: Sampler) -> Rows:
    r = {k: smp.rate(v) for k, v in s.counters.items()}
    out = {
        "sc_psi_cpu_some": r["psi_cpu_some"],
        "sc_psi_io_some": r["psi_io_some"],
        "sc_psi_io_full": r["psi_io_full"],
        "sc_psi_mem_some": r["psi_memory_some"],
        "sc_psi_mem_full": r["psi_memory_full"],
        "sc_cpu_cores": r["cpu_usage"],
        "sc_io_read_bps": r["io_read_bytes"],
        "sc_majfault_ps": r["major_faults"],
        "sc_swapin_ps": r["swapins"],
        "sc_oom_kills": r["oom_kills"],
        "sc_procs_running": smp.last(s.gauges["procs_running"]),
        "sc_procs_iowait": smp.last(s.gauges["procs_iowait"]),
        "sc_procs_busy": smp.last(s.gauges["procs_busy"]),
    }
    if "periods" in r:
        out["sc_throttled_frac"] = _ratio(r["throttled_periods"], r["periods"])
    if "memory_max" in s.gauges:
        out["mem_limit_bytes"] = smp.last(s.gauges["memory_max"])
    if "network_receive_bytes" in r:
        out["sc_net_rx_bps"] = r["network_receive_bytes"]
        out["sc_net_tx_bps"] = r["network_transmit_bytes"]
    return out


def node_signals(s: Scrapes, smp: Sampler) -> Rows:
    r = {k: smp.rate(v) for k, v in s.counters.items()}
    g = {k: smp.last(v) for k, v in s.gauges.items()}
    modes = r["cpu_user"] + r["cpu_system"] + r["cpu_iowait"] + r["cpu_idle"]
    swap_total = g["node_memory_SwapTotal_bytes"]
    with np.errstate(divide="ignore", invalid="ignore"):
        swap = np.where(swap_total > 0, 1.0 - g["node_memory_SwapFree_bytes"] / swap_total, 0.0)
    return {
        "node_cpus": g["node_cpus"],
        "node_cpu_busy_frac": np.clip(1.0 - _ratio(r["cpu_idle"] + r["cpu_iowait"], modes), 0.0, 1.0),
        "node_cpu_iowait_frac": _ratio(r["cpu_iowait"], modes),
        "node_cpu_system_frac": _ratio(r["cpu_system"], modes),
        "node_disk_read_bps": r["node_disk_read_bytes_total"],
        "node_disk_reads_ps": r["node_disk_reads_completed_total"],
        "node_disk_busy_frac": np.clip(r["node_disk_io_time_seconds_total"], 0.0, 1.0),
        "node_mem_avail_frac": _ratio(g["node_memory_MemAvailable_bytes"], g["node_memory_MemTotal_bytes"]),
        "node_swap_used_frac": np.asarray(np.where(np.isnan(swap_total), np.nan, swap), dtype=np.float64),
        "node_majfault_ps": r["node_vmstat_pgmajfault"],
        "node_net_rx_bps": r["node_network_receive_bytes_total"],
        "node_net_tx_bps": r["node_network_transmit_bytes_total"],
        "node_psi_cpu_some": r["node_pressure_cpu_waiting_seconds_total"],
        "node_psi_io_some": r["node_pressure_io_waiting_seconds_total"],
        "node_psi_io_full": r["node_pressure_io_stalled_seconds_total"],
        "node_psi_mem_some": r["node_pressure_memory_waiting_seconds_total"],
        "node_psi_mem_full": r["node_pressure_memory_stalled_seconds_total"],
        "ib_rx_bps": r["node_infiniband_port_data_received_bytes_total"],
        "ib_tx_bps": r["node_infiniband_port_data_transmitted_bytes_total"],
    }


def keep(rows: Rows, families: frozenset[Family]) -> Rows:
    """Only the signals of the families the cluster publishes."""
    return {k: v for k, v in rows.items() if k in SIGNALS and SIGNALS[k].family in families}


def sample(
    scrapes: Mapping[str, Scrapes], at: FloatArray, step: float, intervals: Mapping[str, float], major: int
) -> dict[str, Rows]:
    """Each exporter's signal rows at the window's timestamps."""
    readers = {
        "dcgm": dcgm_signals,
        "cadvisor": cadvisor_signals,
        "ksm": ksm_signals,
        "sidecar": sidecar_signals,
        "node": node_signals,
    }
    return {e: readers[e](s, _sampler(s, at, step, intervals[e], major)) for e, s in scrapes.items()}
