"""A simulated job's signals (analysis/signals.py) computed straight from its state, as PromQL would.

At each window timestamp ``T`` (``start``, ``start + step``, ... up to ``end``):

- a gauge is its latest successful sample in ``(T - max(step, scrape interval), T]`` (what
  ``last_over_time(x[w])`` returns), NaN when there is none;
- a counter's rate is ``(last - first) / (t_last - t_first)`` over its samples in
  ``(T - max(step, 2 x scrape interval), T]`` with counter resets undone (``rate(x[w])`` without the
  edge extrapolation), NaN with fewer than two samples;
- GPU signals are the mean over the pod's GPUs (``fb_used_frac``: the max), cAdvisor signals the sum
  over the pod's containers except the collector (and the pod-level ``container=""`` series),
  ``cpu_limit_cores`` the trainer's limit, node signals those of the pod's node (network without
  ``lo``, disk busy the busiest device), ``node_cpu_*_frac`` shares of all modes' CPU time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from bottleneck_operator.analysis.signals import Family
from bottleneck_operator.analysis.window import DataQuality, JobWindow, PodWindow
from bottleneck_operator.simulation.exporters import dcgm_fields
from bottleneck_operator.simulation.state import CPU_MODES, B, F

if TYPE_CHECKING:
    from bottleneck_operator.simulation.jobs import SimulatedJob

_PROF = {"gr_engine_active", "tensor_active", "dram_active", "pcie_tx", "pcie_rx"}
_PROF_SM = {"sm_active", "sm_occupancy"}
_PROF_NVL = {"nvlink_tx", "nvlink_rx"}
_GPU_SIGNAL = {
    "gpu_util": ("gpu_util", 0.01), "mem_copy_util": ("mem_copy_util", 0.01), "power": ("power_w", 1.0),
    "sm_clock": ("sm_clock_mhz", 1.0), "gr_engine_active": ("gr_engine_active", 1.0),
    "tensor_active": ("tensor_active", 1.0), "dram_active": ("dram_active", 1.0), "pcie_tx": ("pcie_tx_bps", 1.0),
    "pcie_rx": ("pcie_rx_bps", 1.0), "sm_active": ("sm_active", 1.0), "sm_occupancy": ("sm_occupancy", 1.0),
    "nvlink_tx": ("nvlink_tx_bps", 1.0), "nvlink_rx": ("nvlink_rx_bps", 1.0),
}  # fmt: skip


class _Sampler:
    """Gauge lookups and counter rates of one exporter's samples at the window timestamps."""

    def __init__(self, times: F, up: B, ts: F, step: float, si: float) -> None:
        self.tu = times[up]
        self.up = up
        self.ts = ts
        last = np.searchsorted(self.tu, ts + 1e-9, side="right") - 1
        self.g_ok = (last >= 0) & (self.tu[np.maximum(last, 0)] > ts - max(step, si) + 1e-9)
        self.g_idx = np.maximum(last, 0)
        first = np.searchsorted(self.tu, ts - max(step, 2 * si) + 1e-9, side="right")
        self.r_ok = (last - first) >= 1
        self.r_first = np.minimum(first, max(len(self.tu) - 1, 0))
        self.r_last = self.g_idx
        dt = self.tu[self.r_last] - self.tu[self.r_first]
        self.dt = np.where(self.r_ok, dt, 1.0)

    def gauge(self, values: F) -> F:
        v = values[..., self.up]
        if v.shape[-1] == 0:
            return np.full((*values.shape[:-1], self.ts.size), np.nan)
        return np.where(self.g_ok, v[..., self.g_idx], np.nan)

    def rate(self, counter: F) -> F:
        v = counter[..., self.up]
        if v.shape[-1] == 0:
            return np.full((*counter.shape[:-1], self.ts.size), np.nan)
        # Undo resets as Prometheus does: a drop means the counter restarted from zero.
        drops = np.diff(v, axis=-1) < 0
        if drops.any():
            prev = np.concatenate([np.zeros_like(v[..., :1]), np.where(drops, v[..., :-1], 0.0)], axis=-1)
            v = v + np.cumsum(prev, axis=-1)
        r = (v[..., self.r_last] - v[..., self.r_first]) / self.dt
        return np.where(self.r_ok, r, np.nan)


def render_window(
    job: SimulatedJob, *, step: float = 30.0, start: float | None = None, end: float | None = None
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
    smp = {e: _Sampler(st.times(e), st.up[e], ts, step, si) for e in ("dcgm", "cadvisor", "ksm", "sidecar")}
    nsmp = [_Sampler(st.times("node"), st.up["node"][j], ts, step, si) for j in range(len(job.nodes))]
    fields = {key for key, _ in dcgm_fields(sc.env.dcgm_fieldset, sc.env.prof_missing).values()}
    node_sig = [_node_signals(job, j, nsmp[j]) for j in range(len(job.nodes))]
    pods = []
    for p, pod in enumerate(job.pods):
        sig: dict[str, F] = {}
        d = smp["dcgm"]
        for key in fields - {"fb_used", "fb_free"}:
            name, scale = _GPU_SIGNAL[key]
            sig[name] = d.gauge(st.gpu[key][p]).mean(axis=0) * scale
        used, free = d.gauge(st.gpu["fb_used"][p]), d.gauge(st.gpu["fb_free"][p])
        sig["fb_used_frac"] = (used / (used + free)).max(axis=0)
        sig["nvlink_total_bps"] = d.rate(st.gpu["nvlink_total"][p]).mean(axis=0)
        c = smp["cadvisor"]
        sig["cpu_cores"] = c.rate(st.pod["cpu_c"][p])
        sig["mem_working_set_bytes"] = c.gauge(st.pod["ws"][p])
        limit = c.gauge(st.pod["mem_limit"][p])
        sig["mem_limit_bytes"] = np.where(limit > 0, limit, np.nan)
        sig["fs_read_bps"] = c.rate(st.pod["fs_read_c"][p])
        if sc.cpu_limit is not None:
            sig["cpu_throttled_frac"] = c.rate(st.pod["cfs_throttled_c"][p]) / c.rate(st.pod["cfs_periods_c"][p])
            if sc.env.ksm:
                sig["cpu_limit_cores"] = smp["ksm"].gauge(np.full(st.t.size, sc.cpu_limit))
        j = st.pod_node[p]
        sig.update(node_sig[j])
        if sc.env.sidecar:
            sig.update(_sidecar_signals(job, p, smp["sidecar"]))
        pods.append(
            PodWindow(
                pod=pod.pod,
                node=pod.node,
                gpu_model=pod.gpu_model,
                gpu_count=pod.gpu_count,
                signals=sig,
                co_located_pods=len(job.neighbours[j]) if job.neighbours else 0,
            )
        )
    return JobWindow(job.namespace, job.name, ws, we, step, ts, tuple(pods), _quality(job, pods, si))


def _node_signals(job: SimulatedJob, j: int, s: _Sampler) -> dict[str, F]:
    st = job.state
    sc = job.params
    modes = s.rate(st.node["cpu_c"][j])  # (modes, T)
    total = modes.sum(axis=0)
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
    if sc.env.node_psi:
        for name, key in (("cpu_some", "cpu_some"), ("io_some", "io_some"), ("io_full", "io_full"),
                          ("mem_some", "mem_some"), ("mem_full", "mem_full")):  # fmt: skip
            out[f"node_psi_{name}"] = s.rate(st.node[f"psi_{key}_c"][j])
    return out


def _sidecar_signals(job: SimulatedJob, p: int, s: _Sampler) -> dict[str, F]:
    st = job.state
    out = {
        f"sc_psi_{k}": s.rate(st.pod[f"psi_{k}_c"][p])
        for k in ("cpu_some", "io_some", "io_full", "mem_some", "mem_full")
    }
    out["sc_cpu_cores"] = s.rate(st.pod["cpu_c"][p] + st.pod["cpu_sc_c"][p])
    if job.params.cpu_limit is not None:
        out["sc_throttled_frac"] = s.rate(st.pod["cfs_throttled_c"][p]) / s.rate(st.pod["cfs_periods_c"][p])
    out["sc_io_read_bps"] = s.rate(st.pod["fs_read_c"][p])
    out["sc_majfault_ps"] = s.rate(st.pod["majfault_c"][p])
    out["sc_procs_running"] = s.gauge(st.pod["procs_running"][p])
    out["sc_procs_iowait"] = s.gauge(st.pod["procs_iowait"][p])
    return out


def _quality(job: SimulatedJob, pods: list[PodWindow], si: float) -> DataQuality:
    from bottleneck_operator.analysis.signals import SIGNALS

    families: set[Family] = set()
    coverage = []
    for pw in pods:
        for name, values in pw.signals.items():
            if name in SIGNALS and np.isfinite(values).any():
                families.add(SIGNALS[name].family)
        core = pw.signals.get("gpu_util", pw.signals.get("gr_engine_active"))
        coverage.append(float(np.isfinite(core).mean()) if core is not None and core.size else 0.0)
    notes: list[str] = []
    if Family.DCGM_PROF not in families:
        notes.append("no PROF fields")
    if Family.DCGM_PROF_SM not in families:
        notes.append("no SM activity (custom dcgm counters file needed)")
    return DataQuality(
        families=frozenset(families),
        coverage=float(np.mean(coverage)) if coverage else 0.0,
        scrape_interval=si,
        notes=tuple(notes),
    )
