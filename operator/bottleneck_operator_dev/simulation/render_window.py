"""A simulated job's signals (contract/signals.py) computed straight from its state, as PromQL would.

At each window timestamp ``T`` (``start``, ``start + step``, ... up to ``end``), with the sampling
rules of :mod:`bottleneck_operator.contract.sampling` (the ones the data layer's queries use, with
the scrape interval rounded to the second as the data layer's estimate is):

- a gauge is its latest successful sample within ``gauge_window(step, si)`` (``last_over_time``),
  NaN when there is none;
- a counter's rate is Prometheus's ``rate(x[rate_range(step, si)])``: resets undone, extrapolated
  towards the range's edges, NaN with fewer than two samples; ratios of counters (CPU throttling,
  node CPU mode shares) are ratios of such rates, as in the queries;
- GPU signals are the mean over the pod's GPUs (``fb_used_frac``: the max), cAdvisor signals the sum
  over the pod's containers except the collector (and the pod-level ``container=""`` series),
  ``cpu_limit_cores`` the trainer's limit, node signals those of the pod's node (network without
  ``lo``, disk busy the busiest device, RDMA bytes summed over the adapters' ports),
  ``node_cpu_*_frac`` shares of all modes' CPU time;
- ``clock_slowdown_frac`` is the share of the pod's GPUs whose latest clock-event reasons carry a
  slowdown bit (0x4, 0x8, 0x20, 0x40 or 0x80), as the catalog's PromQL tests them;
- ``xid_code``, where a scenario injects XID errors (state key ``xid``), the highest of the pod's GPUs'
  last XID codes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from bottleneck_operator.contract.sampling import (
    DEFAULT_SCRAPE_INTERVAL,
    Sampler,
    gauge_window,
    rate_range,
)
from bottleneck_operator.contract.signals import Family
from bottleneck_operator.contract.window import DataQuality, JobWindow, PodWindow, SignalBlock, families_and_coverage
from bottleneck_operator_dev.simulation import catalog as cat
from bottleneck_operator_dev.simulation.exporters import counts_busy_processes, dcgm_fields
from bottleneck_operator_dev.simulation.state import CPU_MODES, B, F

if TYPE_CHECKING:
    from bottleneck_operator_dev.simulation.record import JobRecord

_PROF = {"gr_engine_active", "tensor_active", "dram_active", "pcie_tx", "pcie_rx"}
_PROF_SM = {"sm_active", "sm_occupancy"}
_PROF_NVL = {"nvlink_tx", "nvlink_rx"}
_GPU_SIGNAL = {
    "gpu_util": ("gpu_util", 0.01), "mem_copy_util": ("mem_copy_util", 0.01), "power": ("power_w", 1.0),
    "sm_clock": ("sm_clock_mhz", 1.0), "gr_engine_active": ("gr_engine_active", 1.0),
    "tensor_active": ("tensor_active", 1.0), "dram_active": ("dram_active", 1.0), "pcie_tx": ("pcie_tx_bps", 1.0),
    "pcie_rx": ("pcie_rx_bps", 1.0), "sm_active": ("sm_active", 1.0), "sm_occupancy": ("sm_occupancy", 1.0),
    "nvlink_tx": ("nvlink_tx_bps", 1.0), "nvlink_rx": ("nvlink_rx_bps", 1.0),
    "fp32_active": ("fp32_active", 1.0), "fp16_active": ("fp16_active", 1.0), "power_limit": ("power_limit_w", 1.0),
}  # fmt: skip


class _Sampler:
    """Gauge lookups and counter rates of one exporter's samples at the window timestamps."""

    def __init__(self, times: F, up: B, ts: F, step: float, si: float) -> None:
        self.up = up
        self.s = Sampler(times[up], ts, range_seconds=rate_range(step, si), window=gauge_window(step, si))

    def gauge(self, values: F) -> F:
        return self.s.last(values[..., self.up])

    def rate(self, counter: F) -> F:
        return self.s.rate(counter[..., self.up])


def _ratio(num: F, den: F) -> F:
    """``num / den`` as PromQL divides (0/0 is NaN, x/0 infinite), without numpy's warnings."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(num / den, dtype=np.float64)


def render_window(
    job: JobRecord, *, step: float = 30.0, start: float | None = None, end: float | None = None
) -> JobWindow:
    """Build the job's :class:`JobWindow` directly from its simulated state.

    Args:
        job: the job.
        step: seconds between window timestamps.
        start / end: window bounds (default: the job's).

    Returns:
        The window; pods are absent when the window misses the job entirely.
    """
    ws = job.start if start is None else float(start)
    we = job.end if end is None else float(end)
    if step <= 0 or we < ws:
        raise ValueError("need step > 0 and end >= start")
    ts = np.asarray(ws + np.arange(int(np.floor((we - ws) / step + 1e-6)) + 1) * step, dtype=np.float64)
    st = job.state
    sc = job.params
    si = sc.scrape_interval
    if ws > job.end + si or we < job.start:
        return JobWindow(job.namespace, job.name, ws, we, step, ts, (), DataQuality(scrape_interval=si))
    # The data layer buckets pods by their estimated interval rounded to the second.
    qsi = max(1.0, float(round(si)))
    smp = {e: _Sampler(st.times(e), st.up[e], ts, step, qsi) for e in ("dcgm", "cadvisor", "ksm", "sidecar")}
    # The data layer learns the nodes' intervals only for nodes kube-state-metrics places; without
    # it the nodes are found later (from pod labels) and their queries use the default interval.
    nsi = qsi if sc.env.ksm else DEFAULT_SCRAPE_INTERVAL
    nsmp = [_Sampler(st.times("node"), st.up["node"][j], ts, step, nsi) for j in range(len(job.nodes))]
    fields = {key for key, _ in dcgm_fields(sc.env).values()}
    node_sig = [_node_signals(job, j, nsmp[j]) for j in range(len(job.nodes))]
    pods = []
    for p, pod in enumerate(job.pods):
        j = st.pod_node[p]
        pods.append(
            PodWindow(
                pod=pod.pod,
                node=pod.node,
                gpu_model=pod.gpu_model,
                gpu_count=pod.gpu_count,
                signals=SignalBlock.of(
                    {**_pod_signals(job, p, smp, fields), **node_sig[j]} | _sidecar_of(job, p, smp), len(ts)
                ),
                co_located_pods=len(job.neighbours[j]) if job.neighbours else 0,
            )
        )
    return JobWindow(job.namespace, job.name, ws, we, step, ts, tuple(pods), _quality(job, pods, si))


def _pod_signals(job: JobRecord, p: int, smp: dict[str, _Sampler], fields: set[str]) -> dict[str, F]:
    """Pod ``p``'s GPU (dcgm), container (cAdvisor) and limit (kube-state-metrics) signals."""
    st = job.state
    sc = job.params
    sig: dict[str, F] = {}
    d = smp["dcgm"]
    for key in fields - {"fb_used", "fb_free", "clock_reasons"}:
        name, scale = _GPU_SIGNAL[key]
        sig[name] = d.gauge(st.gpu[key][p]).mean(axis=0) * scale
    if "clock_reasons" in fields:
        sig["clock_slowdown_frac"] = _slowed_share(d.gauge(st.gpu["clock_reasons"][p]))
    if "xid" in st.gpu:
        sig["xid_code"] = d.gauge(st.gpu["xid"][p]).max(axis=0)
    used, free = d.gauge(st.gpu["fb_used"][p]), d.gauge(st.gpu["fb_free"][p])
    sig["fb_used_frac"] = _ratio(used, used + free).max(axis=0)
    sig["nvlink_total_bps"] = d.gauge(st.gpu["nvlink_total"][p]).mean(axis=0) * cat.NVLINK_TOTAL_UNIT_BYTES
    c = smp["cadvisor"]
    sig["cpu_cores"] = c.rate(st.pod["cpu_c"][p])
    sig["mem_working_set_bytes"] = c.gauge(st.pod["ws"][p])
    limit = c.gauge(st.pod["mem_limit"][p])
    sig["mem_limit_bytes"] = np.where(limit > 0, limit, np.nan)
    sig["fs_read_bps"] = c.rate(st.pod["fs_read_c"][p])
    if sc.cpu_limit is not None:
        sig["cpu_throttled_frac"] = _ratio(c.rate(st.pod["cfs_throttled_c"][p]), c.rate(st.pod["cfs_periods_c"][p]))
        if sc.env.ksm:
            sig["cpu_limit_cores"] = smp["ksm"].gauge(np.full(st.t.size, sc.cpu_limit))
    return sig


def _slowed_share(reasons: F) -> F:
    """The share of GPUs (axis 0) whose reasons bitmask has a slowdown bit; NaN where a sample is missing."""
    finite = np.isfinite(reasons)
    bits = np.where(finite, reasons, 0.0).astype(np.int64) & cat.CLOCK_SLOWDOWN_BITS
    return np.asarray(np.where(finite, (bits > 0).astype(np.float64), np.nan).mean(axis=0), dtype=np.float64)


def _sidecar_of(job: JobRecord, p: int, smp: dict[str, _Sampler]) -> dict[str, F]:
    """The collector's signals of pod ``p``; none when the job runs without it."""
    return _sidecar_signals(job, p, smp["sidecar"]) if job.params.env.sidecar else {}


def _node_signals(job: JobRecord, j: int, s: _Sampler) -> dict[str, F]:
    st = job.state
    sc = job.params
    modes = s.rate(st.node["cpu_c"][j])  # (modes, T)
    total = modes.sum(axis=0)
    total = np.where(total > 0, total, np.nan)  # as the data layer: no CPU time at all is no share
    share = {m: modes[i] / total for i, m in enumerate(CPU_MODES)}
    out = {
        "node_cpus": s.gauge(np.full(st.t.size, float(job.nodes[j].cpus))),
        "node_cpu_busy_frac": 1 - share["idle"] - share["iowait"],
        "node_cpu_iowait_frac": share["iowait"],
        "node_cpu_system_frac": share["system"],
        "node_disk_read_bps": s.rate(st.node["disk_read_c"][j]).sum(axis=0),
        "node_disk_reads_ps": s.rate(st.node["disk_reads_c"][j]).sum(axis=0),
        "node_disk_busy_frac": s.rate(st.node["disk_io_time_c"][j]).max(axis=0),
        "node_mem_avail_frac": s.gauge(st.node["mem_avail"][j]) / s.gauge(st.node["mem_total"][j]),
        "node_majfault_ps": s.rate(st.node["majfault_c"][j]),
        "node_net_rx_bps": s.rate(st.node["net_rx_c"][j]),
        "node_net_tx_bps": s.rate(st.node["net_tx_c"][j]),
    }
    swap_total = s.gauge(st.node["swap_total"][j])
    swap_free = s.gauge(st.node["swap_free"][j])
    out["node_swap_used_frac"] = np.where(swap_total > 0, 1 - swap_free / np.where(swap_total > 0, swap_total, 1), 0.0)
    out["node_swap_used_frac"] = np.where(np.isnan(swap_total), np.nan, out["node_swap_used_frac"])
    if sc.env.ib_ports:
        out["ib_rx_bps"] = s.rate(st.node["ib_rx_c"][j]).sum(axis=0)
        out["ib_tx_bps"] = s.rate(st.node["ib_tx_c"][j]).sum(axis=0)
    if sc.env.node_psi:
        for name, key in (("cpu_some", "cpu_some"), ("io_some", "io_some"), ("io_full", "io_full"),
                          ("mem_some", "mem_some"), ("mem_full", "mem_full")):  # fmt: skip
            out[f"node_psi_{name}"] = s.rate(st.node[f"psi_{key}_c"][j])
    return out


def _sidecar_signals(job: JobRecord, p: int, s: _Sampler) -> dict[str, F]:
    st = job.state
    out = {
        f"sc_psi_{k}": s.rate(st.pod[f"psi_{k}_c"][p])
        for k in ("cpu_some", "io_some", "io_full", "mem_some", "mem_full")
    }
    out["sc_cpu_cores"] = s.rate(st.pod["cpu_c"][p] + st.pod["cpu_sc_c"][p])
    if job.params.cpu_limit is not None:
        out["sc_throttled_frac"] = _ratio(s.rate(st.pod["cfs_throttled_c"][p]), s.rate(st.pod["cfs_periods_c"][p]))
    out["sc_io_read_bps"] = s.rate(st.pod["fs_read_c"][p])
    out["sc_net_rx_bps"] = s.rate(st.pod["net_rx_c"][p])
    out["sc_net_tx_bps"] = s.rate(st.pod["net_tx_c"][p])
    out["sc_majfault_ps"] = s.rate(st.pod["majfault_c"][p])
    if job.params.env.swapins_counted:
        out["sc_swapin_ps"] = s.rate(st.pod["swapin_c"][p])
    out["sc_oom_kills"] = s.rate(st.pod["oom_c"][p])
    out["sc_procs_running"] = s.gauge(st.pod["procs_running"][p])
    out["sc_procs_iowait"] = s.gauge(st.pod["procs_iowait"][p])
    if counts_busy_processes(job.name):
        out["sc_procs_busy"] = s.gauge(st.pod["procs_busy"][p])
    return out


def _quality(job: JobRecord, pods: list[PodWindow], si: float) -> DataQuality:
    families, coverage = families_and_coverage(pods)
    notes: list[str] = []
    if Family.DCGM_PROF not in families:
        notes.append("no PROF fields")
    if Family.DCGM_PROF_SM not in families:
        notes.append("no SM activity (custom dcgm counters file needed)")
    return DataQuality(
        families=families,
        coverage=coverage,
        scrape_interval=si,
        notes=tuple(notes),
    )
