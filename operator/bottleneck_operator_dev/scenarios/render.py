"""From ticks to the window the analysis reads: each exporter's own sampling, noise and gaps.

- dcgm-exporter collects every 30 s by default (TELEMETRY.md, "Reading the profiling metrics"):
  each window sample is the last collection before the last scrape, so 15 s scrapes repeat values;
  ``GPU_UTIL`` comes in whole percent; ``NVLINK_BANDWIDTH_TOTAL`` is an instantaneous rate (read as
  a gauge). Under MIG there is no ``GPU_UTIL``; with time-slicing every sharing pod gets the same values.
- node-exporter and cAdvisor counters become rates over ``rate_range(step, scrape interval)``:
  the mean of the ticks in that range, plus counter jitter; gauges are the last scrape.
- a scrape fails now and then (NaN), and whole families are absent on some clusters.
- ``clock_slowdown_frac`` is the share of a pod's GPUs with a slowdown bit among their clock-event
  reasons; ``ib_*_bps`` the node's InfiniBand/RoCE ports summed, where it has adapters and the
  infiniband collector reads them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from bottleneck_operator.contract.sampling import rate_range
from bottleneck_operator_dev.scenarios.ticks import F

DCGM_COLLECT = 30.0


@dataclass(frozen=True)
class Exporters:
    """Which families a cluster has and how it scrapes them."""

    scrape: float  # seconds
    fieldset: str  # "dev", "shipped" (PROF), "full" (PROF + SM + NVLink PROF)
    psi: bool
    sidecar: bool
    ksm: bool
    dcgm_phase: float  # seconds: offset of dcgm-exporter's collection clock
    busy_processes: bool = True  # the collector is recent enough to count processes at a full core
    pipes: bool = False  # FP32/FP16 pipe activity (a custom counters file, with the full field set)
    power_clocks: bool = False  # the enforced power limit and the clock-event reasons
    ib: bool = False  # node-exporter's infiniband collector reads the nodes' adapters (where they have any)
    swapins: bool = False  # the collector's kernel counts swap-ins per cgroup (memory.stat pswpin, >= 6.15)


def draw_exporters(rng: np.random.Generator) -> Exporters:
    return Exporters(
        scrape=float(rng.choice([15.0, 30.0, 60.0], p=[0.45, 0.45, 0.1])),
        fieldset=str(rng.choice(["dev", "shipped", "full"], p=[0.25, 0.45, 0.3])),
        psi=bool(rng.random() < 0.8),
        sidecar=bool(rng.random() < 0.5),
        ksm=bool(rng.random() < 0.85),
        dcgm_phase=float(rng.uniform(0.0, DCGM_COLLECT)),
    )


def draw_extra_exporters(exp: Exporters, side: np.random.Generator) -> Exporters:
    """The families added after the first ones, from a generator of their own (``side``): the pipes
    where a custom counters file is on, the power limit and clock reasons mostly with one, the
    infiniband collector (a node-exporter default) and kernels that count swap-ins per cgroup."""
    return replace(
        exp,
        pipes=exp.fieldset == "full" and bool(side.random() < 0.6),
        power_clocks=bool(side.random() < (0.7 if exp.fieldset == "full" else 0.12)),
        ib=bool(side.random() < 0.85),
        swapins=bool(side.random() < 0.4),
    )


class Sampling:
    """Window timestamps and the index arithmetic of each exporter's samples."""

    def __init__(
        self,
        ticks: F,
        ts: F,
        step: float,
        exp: Exporters,
        rng: np.random.Generator,
        side: np.random.Generator,
        *,
        own: np.random.Generator,
    ) -> None:
        # ``side``: the noise of the signals added after the first ones (so ``rng``'s draws stay put);
        # ``own``: that of the pods' own network bytes, added after those (so ``side``'s stay put too)
        self.ticks, self.ts, self.exp, self.rng, self.side, self.own = ticks, ts, exp, rng, side, own
        scrape_at = ts - rng.uniform(0.0, exp.scrape, ts.size)  # the last scrape at or before each T
        collect_at = exp.dcgm_phase + np.floor((scrape_at - exp.dcgm_phase) / DCGM_COLLECT) * DCGM_COLLECT
        self.dcgm_idx = self._index(collect_at)
        self.gauge_idx = self._index(scrape_at)
        span = rate_range(step, exp.scrape)
        self.rate_lo = self._index(scrape_at - span) + 1
        self.rate_hi = self.gauge_idx + 1
        self.drop = rng.random(ts.size) < 0.01

    def _index(self, at: F) -> np.ndarray:  # type: ignore[type-arg]
        return np.clip(np.searchsorted(self.ticks, at, side="right") - 1, 0, self.ticks.size - 1)

    def dcgm(self, x: F, noise: float = 0.0, *, later: bool = False) -> F:
        """The last dcgm-exporter collection before each scrape (``later``: noise from ``side``)."""
        v = x[..., self.dcgm_idx]
        if noise:
            v = v * (1.0 + (self.side if later else self.rng).normal(0.0, noise, v.shape))
        return self._gaps(v)

    def gauge(self, x: F) -> F:
        return self._gaps(x[..., self.gauge_idx])

    def rate(self, x: F, noise: float = 0.02, *, later: bool = False, own: bool = False) -> F:
        """A counter's rate over the rate range (``later``: noise from ``side``; ``own``: from ``own``)."""
        c = np.concatenate([np.zeros((*x.shape[:-1], 1)), np.cumsum(x, axis=-1)], axis=-1)
        width = np.maximum(self.rate_hi - self.rate_lo, 1)
        v = (c[..., self.rate_hi] - c[..., self.rate_hi - width]) / width
        gen = self.own if own else self.side if later else self.rng
        return self._gaps(v * (1.0 + gen.normal(0.0, noise, v.shape)))

    def _gaps(self, v: F) -> F:
        out = np.array(v, dtype=np.float64)
        out[..., self.drop] = np.nan
        return out


def gpu_signals(s: Sampling, gpu: dict[str, F], exp: Exporters, *, mig: bool) -> dict[str, F]:
    """DCGM signals of one pod from its GPUs' tick arrays (already the mean over its GPUs)."""
    out: dict[str, F] = {}
    if not mig:
        out["gpu_util"] = np.clip(np.round(s.dcgm(gpu["util"], 0.03) * 100.0), 0, 100) / 100.0
        out["mem_copy_util"] = np.clip(np.round(s.dcgm(gpu["copy"], 0.05) * 100.0), 0, 100) / 100.0
        out["nvlink_total_bps"] = s.dcgm(gpu["nvlink"], 0.1)
    out["fb_used_frac"] = s.dcgm(gpu["fb"])
    out["power_w"] = s.dcgm(gpu["power"], 0.02)
    out["sm_clock_mhz"] = np.round(s.dcgm(gpu["clock"]) / 15.0) * 15.0
    if exp.fieldset in ("shipped", "full"):
        for name, key in (("gr_engine_active", "gr"), ("tensor_active", "tensor"), ("dram_active", "dram")):
            out[name] = np.clip(s.dcgm(gpu[key], 0.04), 0.0, 1.0)
        out["pcie_rx_bps"] = s.dcgm(gpu["pcie_rx"], 0.08)
        out["pcie_tx_bps"] = s.dcgm(gpu["pcie_tx"], 0.08)
    if exp.fieldset == "full":
        out["sm_active"] = np.clip(s.dcgm(gpu["sm"], 0.04), 0.0, 1.0)
        out["sm_occupancy"] = np.clip(s.dcgm(gpu["occupancy"], 0.05), 0.0, 1.0)
        if not mig:
            out["nvlink_tx_bps"] = s.dcgm(gpu["nvlink"] / 2, 0.05)
            out["nvlink_rx_bps"] = s.dcgm(gpu["nvlink"] / 2, 0.05)
        if exp.pipes:
            out["fp32_active"] = np.clip(s.dcgm(gpu["fp32"], 0.04, later=True), 0.0, 1.0)
            out["fp16_active"] = np.clip(s.dcgm(gpu["fp16"], 0.04, later=True), 0.0, 1.0)
    if exp.power_clocks:
        out["power_limit_w"] = s.dcgm(gpu["power_limit"])
        out["clock_slowdown_frac"] = s.dcgm(gpu["slowdown"])
    return out


def pod_signals(
    s: Sampling, pod: dict[str, F], exp: Exporters, *, cpu_limit: float | None, mem_limit: float | None
) -> dict[str, F]:
    """cAdvisor, kube-state-metrics and sidecar signals of one pod."""
    n = s.ts.size
    out = {
        "cpu_cores": s.rate(pod["cpu"]),
        "mem_working_set_bytes": s.gauge(pod["ws"]),
        "mem_limit_bytes": np.full(n, np.nan if mem_limit is None else mem_limit),
        "fs_read_bps": s.rate(pod["fs_read"], 0.05),
    }
    if cpu_limit is not None:
        out["cpu_throttled_frac"] = np.clip(s.rate(pod["throttled"]), 0.0, 1.0)
        if exp.ksm:
            out["cpu_limit_cores"] = np.full(n, cpu_limit)
    if exp.sidecar:
        for k in ("cpu_some", "io_some", "io_full", "mem_some", "mem_full"):
            out[f"sc_psi_{k}"] = np.clip(s.rate(pod[f"psi_{k}"], 0.05), 0.0, 1.0)
        out["sc_cpu_cores"] = s.rate(pod["cpu"] + 0.02)
        if cpu_limit is not None:
            out["sc_throttled_frac"] = out["cpu_throttled_frac"]
        out["sc_io_read_bps"] = s.rate(pod["fs_read"], 0.05)
        # the pod's network namespace, as noisy as the node's interfaces
        out["sc_net_rx_bps"] = s.rate(pod["net_rx"], 0.03, own=True)
        out["sc_net_tx_bps"] = s.rate(pod["net_tx"], 0.03, own=True)
        out["sc_majfault_ps"] = s.rate(pod["majfault"], 0.05)
        if exp.swapins:
            out["sc_swapin_ps"] = s.rate(pod["swapin"], 0.05, later=True)
        out["sc_oom_kills"] = s.rate(pod["oom"], 0.0, later=True)
        out["sc_procs_running"] = s.gauge(pod["running"])
        out["sc_procs_iowait"] = s.gauge(pod["dstate"])
        if exp.busy_processes:
            out["sc_procs_busy"] = s.gauge(pod["pinned"])
    return out


def node_signals(
    s: Sampling, load: dict[str, F], exp: Exporters, *, cpus: int, mem: float, swap: bool, adapters: bool
) -> dict[str, F]:
    """node-exporter signals of one node from the summed load of everything on it (``adapters``: the
    node has InfiniBand/RoCE adapters; the infiniband collector, where on, reads their ports)."""
    n = s.ts.size
    busy = np.clip(load["cpu"] + load["system"] * 0.3, 0.0, cpus)
    iowait = np.minimum(load["iowait"], cpus - busy)
    disk = load["disk_read"]
    # NVMe runs deep parallel queues: io_time reaches 100 % far below the device's bandwidth
    disk_busy = np.clip(1.0 - np.exp(-disk / (0.15 * load["disk_ceiling"])), 0.0, 1.0)
    mem_used = np.clip(load["mem"] / mem, 0.0, 0.995)
    out = {
        "node_cpus": np.full(n, float(cpus)),
        "node_cpu_busy_frac": np.clip(s.rate(busy / cpus), 0.0, 1.0),
        "node_cpu_iowait_frac": np.clip(s.rate(iowait / cpus, 0.1), 0.0, 1.0),
        "node_cpu_system_frac": np.clip(s.rate(load["system"] / cpus), 0.0, 1.0),
        "node_disk_read_bps": s.rate(disk, 0.05),
        "node_disk_reads_ps": s.rate(load["disk_reqs"], 0.05),
        "node_disk_busy_frac": np.clip(s.rate(disk_busy, 0.02), 0.0, 1.0),
        "node_mem_avail_frac": 1.0 - s.gauge(mem_used),
        "node_swap_used_frac": s.gauge(np.clip(load["swap"] * 3.0, 0.0, 0.95)) if swap else np.zeros(n),
        "node_majfault_ps": s.rate(load["majfault"], 0.05),
        "node_net_rx_bps": s.rate(load["net_rx"], 0.03),
        "node_net_tx_bps": s.rate(load["net_tx"], 0.03),
    }
    if exp.ib and adapters:  # RDMA bytes over the ports, on top of the fabric's management traffic
        out["ib_rx_bps"] = s.rate(load["ib"] + 3e4, 0.03, later=True)
        out["ib_tx_bps"] = s.rate(load["ib"] + 3e4, 0.03, later=True)
    if exp.psi:
        over = np.clip((load["runnable"] - cpus) / cpus, 0.0, 1.0)
        out["node_psi_cpu_some"] = np.clip(s.rate(over * 2.0 + 0.01 * busy / cpus), 0.0, 1.0)
        out["node_psi_io_some"] = np.clip(s.rate(np.minimum(load["io_some"], 1.0), 0.05), 0.0, 1.0)
        out["node_psi_io_full"] = np.clip(s.rate(np.minimum(load["io_full"], 1.0), 0.05), 0.0, 1.0)
        out["node_psi_mem_some"] = np.clip(s.rate(np.minimum(load["mem_stall"] * 1.1, 1.0), 0.05), 0.0, 1.0)
        out["node_psi_mem_full"] = np.clip(s.rate(np.minimum(load["mem_stall"] * 0.75, 1.0), 0.05), 0.0, 1.0)
    return out
