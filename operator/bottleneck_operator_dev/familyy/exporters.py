"""How the exporters read the pods' rates, and how the data layer reads the exporters.

- dcgm-exporter: fields are time shares averaged over its collection interval; a scrape returns the
  latest collection; power and clocks are read at the collection instant.
- counters (cAdvisor, node-exporter, the collector, the infiniband collector) integrate bytes, seconds
  and events; the collector's count from its own start, so a restart resets them.
- gauges are read at the scrape instant.
- Prometheus scrapes each exporter at its own phase, with jitter and misses, and the window holds
  ``rate()`` and ``last_over_time()`` at the step grid, computed with the contract's own Sampler.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.sampling import Sampler, gauge_window, rate_range
from bottleneck_operator.contract.signals import SIGNALS, Family

from .hardware import PAGE
from .truth import DT, Looks
from .workload import Setup

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Exporters:
    """What this cluster's exporters publish and how often.

    Attributes:
        scrape: Prometheus's scrape interval, seconds (one setting for every ServiceMonitor).
        collect: dcgm-exporter's collection interval, seconds.
        families: the families this cluster publishes.
        miss: probability that one scrape is lost.
        collector_restart: seconds into the window the collector restarts (its counters reset), or None.
        oom_at: seconds into the window a loader worker is OOM-killed, or None.
        prometheus_major: 2 or 3.
    """

    scrape: float
    collect: float
    families: frozenset[Family]
    miss: float
    collector_restart: float | None
    oom_at: float | None
    prometheus_major: int


def draw_exporters(rng: np.random.Generator, setup: Setup, duration: float) -> Exporters:
    fams = {Family.DCGM_DEV}
    field_set = str(rng.choice(["dev-only", "default", "full", "full"]))
    if field_set != "dev-only":
        fams.add(Family.DCGM_PROF)
        if field_set == "full" and setup.gpu.prof:
            fams |= {Family.DCGM_PROF_SM, Family.DCGM_PROF_PIPES}
            if setup.gpu.nvlink_bps > 0:
                fams.add(Family.DCGM_PROF_NVLINK)
    if field_set == "full" or rng.random() < 0.3:
        fams.add(Family.DCGM_POWER_CLOCKS)
    for fam, p in (
        (Family.CADVISOR, 0.97),
        (Family.KSM, 0.95),
        (Family.NODE, 0.97),
        (Family.NODE_PSI, 0.9),
        (Family.SIDECAR, 0.8),
    ):
        if rng.random() < p:
            fams.add(fam)
    if Family.CADVISOR in fams and setup.cpu_quota is not None:
        fams.add(Family.CADVISOR_CFS)
    if Family.NODE in fams and setup.fabric is not None and setup.fabric.rdma:
        fams.add(Family.NODE_IB)
    if Family.NODE not in fams:
        fams.discard(Family.NODE_PSI)
    if Family.SIDECAR in fams and rng.random() < 0.7:
        fams.add(Family.SIDECAR_NET)
    short = setup.demand.shortfall(setup.caps(neighbour=False)["host_mem"])
    return Exporters(
        scrape=float(rng.choice([10.0, 15.0, 15.0, 30.0, 30.0, 60.0])),
        collect=float(rng.choice([1.0, 5.0, 10.0, 30.0, 30.0])),
        families=frozenset(fams),
        miss=float(rng.uniform(0.0, 0.03)),
        collector_restart=float(rng.uniform(0.2, 0.8) * duration) if rng.random() < 0.15 else None,
        oom_at=float(rng.uniform(0.1, 0.9) * duration) if short > 0.15 and rng.random() < 0.4 else None,
        prometheus_major=int(rng.choice([2, 3])),
    )


def _scrapes(rng: np.random.Generator, ex: Exporters, t_from: float, t_to: float) -> FloatArray:
    """Scrape times of one exporter: its own phase, millisecond-scale jitter, lost scrapes."""
    si = ex.scrape
    t = np.arange(t_from + rng.uniform(0, si), t_to, si)
    t = t + rng.normal(0.0, 0.002 * si, t.size)
    keep = rng.random(t.size) >= ex.miss
    t = np.sort(t[keep])
    return t[np.concatenate([[True], np.diff(t) > 0.01])] if t.size else t


class _Reader:
    """Reads one pod's fine-grid rates at one exporter's scrape times, into the window's step grid."""

    def __init__(
        self, grid: FloatArray, times: FloatArray, at: FloatArray, step: float, ex: Exporters, start: float
    ) -> None:
        self.grid, self.times = grid, times
        self.sampler = Sampler(
            start + times,
            start + at,
            range_seconds=rate_range(step, ex.scrape),
            window=gauge_window(step, ex.scrape),
            prometheus_major=ex.prometheus_major,
        )

    def gauge(self, values: FloatArray) -> FloatArray:
        return self.sampler.last(np.interp(self.times, self.grid, values))

    def averaged(self, values: FloatArray, collect: float, phase: float) -> FloatArray:
        """dcgm-exporter: the mean over the latest collection interval before each scrape."""
        integral = np.concatenate([[0.0], np.cumsum(values[:-1] * DT)])
        tc = np.floor((self.times - phase) / collect) * collect + phase
        lo = np.interp(tc - collect, self.grid, integral)
        hi = np.interp(tc, self.grid, integral)
        return self.sampler.last((hi - lo) / collect)

    def raw_counter(self, rate: FloatArray, reset: float | None = None, offset: float = 0.0) -> FloatArray:
        """The counter's value at each scrape: the integral of its rate, from zero again after a reset."""
        integral = np.concatenate([[0.0], np.cumsum(rate[:-1] * DT)])
        raw = np.interp(self.times, self.grid, integral) + offset
        if reset is not None:
            raw = np.where(self.times >= reset, raw - np.interp(reset, self.grid, integral) - offset, raw)
        clipped: FloatArray = np.maximum(raw, 0.0)
        return clipped

    def counters(self, rates: dict[str, FloatArray], reset: float | None = None) -> dict[str, FloatArray]:
        """``rate()`` of several counters scraped together, in one pass of the contract's Sampler."""
        names = list(rates)
        raw = np.stack([self.raw_counter(rates[k], reset) for k in names])
        out = self.sampler.rate(raw)
        return {k: out[i] for i, k in enumerate(names)}


def pod_signals(
    setup: Setup,
    looks: Looks,
    ex: Exporters,
    cols: dict[str, FloatArray],
    pod: int,
    grid: FloatArray,
    at: FloatArray,
    step: float,
    start: float,
    rng: np.random.Generator,
) -> dict[str, FloatArray]:
    """The pod's signals, in the contract's names and units, at the window's timestamps."""
    p = _Pod(setup, looks, ex, cols, grid, at, step, start, rng)
    out = p.dcgm(pod) | p.cgroup() | p.node() | p.collector()
    # rate() extrapolates over the range's edges: a share can read a hair above 1, which the data
    # layer's ratio signals are held to (they are shares of time or of periods).
    for name, values in out.items():
        if SIGNALS[name].unit == "ratio":
            out[name] = np.clip(values, 0.0, 1.0)
    return out


class _Pod:
    """One pod's rates, what its cgroup makes of them, and one reader per exporter."""

    def __init__(
        self,
        setup: Setup,
        looks: Looks,
        ex: Exporters,
        cols: dict[str, FloatArray],
        grid: FloatArray,
        at: FloatArray,
        step: float,
        start: float,
        rng: np.random.Generator,
    ) -> None:
        self.setup, self.looks, self.ex, self.cols, self.grid = setup, looks, ex, cols, grid
        self.at, self.step, self.start, self.rng = at, step, start, rng
        self.zero = np.zeros(grid.size)
        self.nb = cols["neighbour"]
        self.cores = cols["cores"]
        quota = setup.cpu_quota
        # CFS: a container near its quota is throttled in nearly every 100 ms period
        self.throttled = self.zero if quota is None else np.clip(0.95 * np.minimum(self.cores / quota, 1) ** 6, 0, 0.99)
        limit = setup.mem_limit
        self.ws = min(setup.resident, limit if limit is not None else setup.node_mem) * 0.98
        self.swap_on = setup.swap_total > 0
        self.majfault = cols["mmap_faults"] + cols["swapin_ps"] + 20.0
        # PSI: the share of wall time some task waited, steep as a row nears its limit
        self.psi_cpu = np.clip(looks.psi_cpu * cols["cpu_rho"] ** 8 + 0.5 * self.throttled, 0.0, 0.98)
        self.psi_io = np.clip(looks.psi_io * cols["io_rho"] ** 6, 0.0, 0.98)
        self.psi_mem = cols["mem_stall"]
        self.readers = setup.workers * setup.gpus_per_node

    def reader(self) -> _Reader:
        times = _scrapes(self.rng, self.ex, float(self.grid[0]), float(self.grid[-1]))
        return _Reader(self.grid, times, self.at, self.step, self.ex, self.start)

    def jitter(self, v: FloatArray, sd: float) -> FloatArray:
        return v + self.rng.normal(0.0, sd, v.size)

    def full(self, value: float) -> FloatArray:
        return np.full(self.grid.size, value)

    def dcgm(self, pod: int) -> dict[str, FloatArray]:
        setup, cols, fams, ex, gpu = self.setup, self.cols, self.ex.families, self.ex, self.setup.gpu
        r = self.reader()
        phase = float(self.rng.uniform(0, ex.collect))

        def avg(v: FloatArray) -> FloatArray:
            return r.averaged(v, ex.collect, phase)

        def share(v: FloatArray) -> FloatArray:
            return np.clip(self.jitter(avg(v), 0.004), 0.0, 1.0)

        out = {"gpu_util": share(cols["busy"]), "mem_copy_util": share(np.clip(cols["dram"] * 1.05, 0.0, 1.0))}
        out["fb_used_frac"] = r.gauge(self.full(self.looks.fb_frac))
        power = np.minimum(self.jitter(cols["power"], 0.01 * gpu.tdp_w), setup.power_limit_w)
        out["power_w"] = r.gauge(np.maximum(power, gpu.idle_w * 0.8))
        spread = self.looks.board[pod] * self.rng.uniform(0.98, 1.0, self.grid.size)
        out["sm_clock_mhz"] = r.gauge(np.minimum(gpu.max_clock_mhz * spread * cols["clock_factor"], gpu.max_clock_mhz))
        out["nvlink_total_bps"] = r.gauge(2.0 * cols["nvlink"])
        out["xid_code"] = r.gauge(self.zero)
        if Family.DCGM_PROF in fams:
            out["gr_engine_active"] = share(cols["busy"] * 0.99)
            if gpu.prof:
                out["tensor_active"] = share(cols["tensor"])
                out["dram_active"] = share(cols["dram"])
                out["pcie_tx_bps"] = np.maximum(self.jitter(avg(cols["pcie_tx"]), 1e5), 0.0)
                out["pcie_rx_bps"] = np.maximum(self.jitter(avg(cols["pcie_rx"]), 1e5), 0.0)
        if Family.DCGM_PROF_SM in fams:
            out["sm_active"], out["sm_occupancy"] = share(cols["sm"]), share(cols["occ"])
        if Family.DCGM_PROF_NVLINK in fams:
            out["nvlink_tx_bps"] = out["nvlink_rx_bps"] = avg(cols["nvlink"])
        if Family.DCGM_PROF_PIPES in fams:
            out["fp32_active"], out["fp16_active"] = share(cols["fp32"]), share(cols["fp16"])
        if Family.DCGM_POWER_CLOCKS in fams:
            out["power_limit_w"] = r.gauge(self.full(setup.power_limit_w))
            out["clock_slowdown_frac"] = r.gauge(cols["slowdown"])
        return out

    def cgroup(self) -> dict[str, FloatArray]:
        """cAdvisor and kube-state-metrics: the pod's own cgroup and limits."""
        setup, fams = self.setup, self.ex.families
        out: dict[str, FloatArray] = {}
        if Family.CADVISOR in fams:
            r = self.reader()
            c = {"cpu_cores": self.cores, "fs_read_bps": self.cols["storage_bps"] if setup.storage.block else self.zero}
            if Family.CADVISOR_CFS in fams:
                c |= {"periods": self.full(10.0), "throttled": 10.0 * self.throttled}
            rated = r.counters(c)
            out["cpu_cores"], out["fs_read_bps"] = rated["cpu_cores"], rated["fs_read_bps"]
            if Family.CADVISOR_CFS in fams:
                with np.errstate(invalid="ignore", divide="ignore"):
                    out["cpu_throttled_frac"] = rated["throttled"] / rated["periods"]
            out["mem_working_set_bytes"] = r.gauge(self.jitter(self.full(self.ws), self.ws * 0.003))
            limit = setup.mem_limit
            out["mem_limit_bytes"] = r.gauge(self.full(limit if limit is not None else np.nan))
        if Family.KSM in fams and setup.cpu_quota is not None:
            out["cpu_limit_cores"] = self.reader().gauge(self.full(setup.cpu_quota))
        return out

    def node(self) -> dict[str, FloatArray]:
        """node-exporter on the pod's node: a neighbour's load shows here, never in the pod's own signals."""
        setup, cols, nb, fams = self.setup, self.cols, self.nb, self.ex.families
        out: dict[str, FloatArray] = {}
        ncpu = float(setup.node_cpus)
        busy = np.clip((self.cores + nb * setup.neighbour_cores + 0.5) / ncpu, 0.0, 1.0)
        iowait = (1.0 - busy) * np.clip(self.psi_io * self.readers / ncpu, 0.0, 1.0)
        system = (0.15 * self.cores + cols["reclaim_cores"] + 0.05 * nb * setup.neighbour_cores) / ncpu + 0.005
        disk = (cols["storage_bps"] if setup.storage.block else 0.0) + nb * setup.neighbour_disk_bps + self.zero
        req_size = np.clip(setup.demand.read_bytes / max(setup.demand.read_reqs, 1e-9), PAGE, 256e3)
        nb_net = nb * setup.neighbour_net_bps
        if Family.NODE in fams:
            r = self.reader()
            # io_time: the share of time with a request in flight; deep NVMe queues reach 1 unsaturated
            device_busy = 1.0 - np.exp(-3.0 * disk / setup.storage.bps) if setup.storage.block else self.full(0.002)
            out |= r.counters(
                {
                    "node_cpu_busy_frac": busy,
                    "node_cpu_iowait_frac": iowait,
                    "node_cpu_system_frac": np.clip(system, 0.0, 1.0),
                    "node_disk_read_bps": disk,
                    "node_disk_reads_ps": disk / req_size,
                    "node_disk_busy_frac": device_busy,
                    "node_majfault_ps": self.majfault + nb * 50.0,
                    "node_net_rx_bps": cols["remote_bps"] + cols["net_coll"] + 0.6 * nb_net + 2e5,
                    "node_net_tx_bps": cols["net_coll"] + cols["ckpt_tx"] + 0.4 * nb_net + 2e5,
                }
            )
            out["node_cpus"] = r.gauge(self.full(ncpu))
            used = self.ws + nb * setup.neighbour_mem + 0.05 * setup.node_mem
            out["node_mem_avail_frac"] = r.gauge(np.clip(1.0 - used / setup.node_mem, 0.02, 1.0))
            swap = setup.resident * cols["short"] / setup.swap_total + 0.01 if self.swap_on else self.zero
            out["node_swap_used_frac"] = r.gauge(np.clip(swap, 0.0, 1.0))
        if Family.NODE_PSI in fams:
            nb_io = nb * np.clip(setup.neighbour_disk_bps / setup.storage.bps, 0, 1) ** 3 * 0.6
            io = np.maximum(self.psi_io, nb_io)
            out |= self.reader().counters(
                {
                    "node_psi_cpu_some": np.maximum(self.psi_cpu, 0.8 * busy**8),
                    "node_psi_io_some": io,
                    "node_psi_io_full": io * self.looks.full_share * 0.5,
                    "node_psi_mem_some": self.psi_mem + self.zero,
                    "node_psi_mem_full": self.psi_mem * self.looks.full_share,
                }
            )
        if Family.NODE_IB in fams:
            rdma = cols["rdma_coll"] + nb * setup.neighbour_rdma_bps
            out |= self.reader().counters({"ib_rx_bps": rdma, "ib_tx_bps": rdma})
        return out

    def collector(self) -> dict[str, FloatArray]:
        """The collector in the pod: its counters count from its own start, so a restart resets them."""
        setup, cols, fams, ex = self.setup, self.cols, self.ex.families, self.ex
        out: dict[str, FloatArray] = {}
        n, full = setup.gpus_per_node, self.looks.full_share
        if Family.SIDECAR in fams:
            r = self.reader()
            oom = np.zeros(self.grid.size)
            if ex.oom_at is not None:
                oom[np.argmin(np.abs(self.grid - ex.oom_at))] = 1.0 / DT
            c = {
                "sc_psi_cpu_some": self.psi_cpu,
                "sc_psi_io_some": self.psi_io,
                "sc_psi_io_full": self.psi_io * full,
                "sc_psi_mem_some": self.psi_mem + self.zero,
                "sc_psi_mem_full": self.psi_mem * full,
                "sc_cpu_cores": self.cores + 0.02,
                "sc_io_read_bps": cols["storage_bps"] if setup.storage.block else self.zero,
                "sc_majfault_ps": self.majfault,
                "sc_swapin_ps": cols["swapin_ps"] if self.swap_on else self.zero,
                "sc_oom_kills": oom,
            }
            if setup.cpu_quota is not None:
                c |= {"periods": self.full(10.0), "throttled": 10.0 * self.throttled}
            rated = r.counters(c, ex.collector_restart)
            if setup.cpu_quota is not None:
                with np.errstate(invalid="ignore", divide="ignore"):
                    out["sc_throttled_frac"] = rated.pop("throttled") / rated.pop("periods")
            out |= rated
            running = n * (cols["thread_rho"] > 0.3) + self.readers * np.clip(cols["workers_rho"], 0, 1)
            out["sc_procs_running"] = r.gauge(np.round(running))
            d_state = self.readers * cols["io_rho"] ** 3 if setup.storage.d_state else self.zero
            out["sc_procs_iowait"] = r.gauge(np.round(d_state))
            busy = n * (cols["thread_rho"] > 0.9) + self.readers * (cols["workers_rho"] > 0.95)
            out["sc_procs_busy"] = r.gauge(busy.astype(np.float64))
        if Family.SIDECAR_NET in fams:
            own = {
                "sc_net_rx_bps": cols["remote_bps"] + cols["net_coll"] + 5e4,
                "sc_net_tx_bps": cols["net_coll"] + cols["ckpt_tx"] + 5e4,
            }
            out |= self.reader().counters(own, ex.collector_restart)
        return out
