"""What the exporters show of a drawn job: busy time per unit, integrated and scraped as Prometheus would.

Each unit's rate on a tick is its busy time per step over the step time (:mod:`.rates`), times the
phase (training, checkpoint pause, evaluation) and per-step noise; :mod:`.scrape` turns those into
scrapes, and the window is made from the scrapes with the contract's own
:class:`~bottleneck_operator.contract.sampling.Sampler`, exactly as the data layer queries them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.sampling import Sampler, gauge_window, rate_range
from bottleneck_operator.contract.signals import SIGNALS
from bottleneck_operator.contract.window import FloatArray, PodWindow
from bottleneck_operator_dev.familyt.draw import JobSpec, idle_power
from bottleneck_operator_dev.familyt.rates import GB, pod_rates
from bottleneck_operator_dev.familyt.scrape import TICK, Cluster, counters, dcgm_cached, gauge, phases, scrapes

DEV = ("gpu_util", "mem_copy_util", "fb_used_frac", "power_w", "sm_clock_mhz", "nvlink_total_bps")
PROF = ("gr_engine_active", "tensor_active", "dram_active", "pcie_tx_bps", "pcie_rx_bps")
FULL = ("sm_active", "sm_occupancy", "fp32_active", "fp16_active", "nvlink_tx_bps", "nvlink_rx_bps")
POWER = ("power_limit_w", "clock_slowdown_frac")
NOT_AVERAGED = ("fb_used_frac", "power_limit_w", "nvlink_total_bps", "clock_slowdown_frac", "power_w", "sm_clock_mhz")


@dataclass(frozen=True)
class _Pod:
    """One pod's tick series and how its exporters are scraped."""

    spec: JobSpec
    cl: Cluster
    rng: np.random.Generator
    node_index: int
    timestamps: FloatArray
    ticks: FloatArray
    rr: float  # rate() range
    gw: float  # gauge window
    train: FloatArray
    evals: FloatArray
    ckpt: FloatArray
    noise: FloatArray
    gauges: dict[str, float]
    rates: dict[str, float]

    @property
    def busy(self) -> FloatArray:
        """The GPU's busy multiplier per tick: half busy in evaluation (forward only), idle in checkpoints."""
        cap = 1.0 / max(self.gauges["gpu_util"], 1e-3)
        return np.asarray((self.train + 0.5 * self.evals) * np.minimum(self.noise, cap), dtype=np.float64)

    @property
    def host(self) -> FloatArray:
        """The host side's multiplier: the loader rests in checkpoints and reads less in evaluation."""
        return np.asarray(self.train + 0.3 * self.evals + 0.15 * self.ckpt, dtype=np.float64)

    def sample(self, exporter: str, ctr: dict[str, FloatArray], gauges: dict[str, FloatArray]) -> dict[str, FloatArray]:
        """One exporter's series scraped, then read on the window's grid as the data layer does."""
        t0, t1 = float(self.ticks[0]), float(self.timestamps[-1])
        times = scrapes(self.rng, t0, t1, self.cl.scrape, self.cl.miss)
        sampler = Sampler(times, self.timestamps, range_seconds=self.rr, window=self.gw)
        reset = float(self.rng.uniform(self.timestamps[0], t1)) if exporter in self.cl.restarts else None
        out: dict[str, FloatArray] = {}
        if ctr:
            names = tuple(ctr)
            r = sampler.rate(counters(self.ticks, np.stack([ctr[k] for k in names]), times, reset))
            out.update({k: r[i] for i, k in enumerate(names)})
        if gauges:
            names = tuple(gauges)
            v = sampler.last(np.stack([gauge(self.ticks, gauges[k], times) for k in names]))
            out.update({k: v[i] for i, k in enumerate(names)})
        return out


def pod_window(
    spec: JobSpec,
    cl: Cluster,
    rng: np.random.Generator,
    *,
    pod: str,
    node: str,
    node_index: int,
    timestamps: FloatArray,
    step: float,
) -> PodWindow:
    """One pod's signals on the window's grid."""
    rr, gw = rate_range(step, cl.scrape), gauge_window(step, cl.scrape)
    ticks = np.arange(float(timestamps[0]) - rr - 2 * cl.scrape, float(timestamps[-1]) + TICK, TICK)
    train, evals, ckpt = phases(rng, ticks)
    noise = np.exp(rng.normal(0.0, rng.uniform(0.02, 0.08), size=ticks.size))
    gauges, rates = pod_rates(spec, rng)
    c = _Pod(spec, cl, rng, node_index, timestamps, ticks, rr, gw, train, evals, ckpt, noise, gauges, rates)
    signals = _dcgm_signals(c)
    cores, reads, faults = _cadvisor_signals(c, signals)
    psi = _node_signals(c, signals, cores, reads, faults)
    if cl.sidecar:
        _sidecar_signals(c, signals, cores, faults, psi)
    signals["xid_code"] = np.where(np.isfinite(signals["gpu_util"]), 0.0, np.nan)
    unknown = set(signals) - set(SIGNALS)
    if unknown:
        raise AssertionError(f"not contract signals: {sorted(unknown)}")
    return PodWindow(pod, node, spec.gpu.model, spec.gpus_per_node, signals, cl.neighbours)


def _gpu_series(c: _Pod, name: str) -> FloatArray:
    v = c.gauges[name]
    if name.endswith("_bps") and name.startswith(("nvlink", "pcie")):
        comm = c.train * c.noise  # no gradients in evaluation
        copy = (c.train + 0.3 * c.evals) * c.noise
        return np.asarray(v * (comm if name.startswith("nvlink") else copy), dtype=np.float64)
    return np.asarray(np.clip(v * c.busy, 0.0, 1.0), dtype=np.float64)


def _dcgm_signals(c: _Pod) -> dict[str, FloatArray]:
    """dcgm-exporter's fields of the cluster's field set, as scraped from its cache."""
    spec, cl, rng, ticks, gpu = c.spec, c.cl, c.rng, c.ticks, c.spec.gpu
    fields = DEV + (PROF if cl.fields != "dev" else ()) + (FULL if cl.fields == "full" else ())
    fields += POWER if cl.power_fields or cl.fields == "full" else ()
    at = scrapes(rng, float(ticks[0]), float(c.timestamps[-1]), cl.scrape, cl.miss)
    raw: dict[str, FloatArray] = {}
    averaged = [n for n in fields if n not in NOT_AVERAGED]
    if averaged:
        avg = dcgm_cached(ticks, np.stack([_gpu_series(c, n) for n in averaged]), at, cl.collect)
        # an average of busy shares is a share: clip the float error of the integral
        raw.update({n: avg[i] if n.endswith("_bps") else np.clip(avg[i], 0.0, 1.0) for i, n in enumerate(averaged)})
    dyn = c.gauges["power_w"] - idle_power(gpu)
    p = idle_power(gpu) * rng.uniform(0.8, 1.0) + dyn * c.busy / max(c.gauges["gpu_util"], 1e-3)
    raw["power_w"] = gauge(ticks, np.minimum(p, spec.power_limit_w), at)  # POWER_USAGE is instantaneous
    under_load = float(spec.clock_factor[c.node_index].mean())
    # out of training the power cap no longer binds: the boards run at their own clocks
    idle_clock = min(1.0, under_load * (rng.uniform(1.0, 1.1) if spec.capped[c.node_index].any() else 1.0))
    jitter = np.clip(rng.normal(1.0, 0.01, size=ticks.size), 0.95, 1.0)
    clock = np.where(c.train > 0, under_load, idle_clock) * gpu.max_clock_mhz * jitter
    raw["sm_clock_mhz"] = gauge(ticks, clock, at)
    raw["fb_used_frac"] = np.full(at.size, rng.uniform(0.85, 0.99))
    nv = _gpu_series(c, "nvlink_tx_bps") * 2.0
    raw["nvlink_total_bps"] = dcgm_cached(ticks, nv[None, :], at, cl.collect)[0]  # a gauge of the current rate
    if "power_limit_w" in fields:
        raw["power_limit_w"] = np.full(at.size, spec.power_limit_w)
        capped = float(spec.capped[c.node_index].mean())
        raw["clock_slowdown_frac"] = gauge(ticks, np.where(c.train > 0, capped, 0.0), at)
    names = tuple(raw)
    block = Sampler(at, c.timestamps, range_seconds=c.rr, window=c.gw).last(np.stack([raw[n] for n in names]))
    return {n: block[i] for i, n in enumerate(names)}


def _cadvisor_signals(c: _Pod, signals: dict[str, FloatArray]) -> tuple[FloatArray, FloatArray, FloatArray]:
    """cAdvisor's and kube-state-metrics' series of the pod; returns its cores, block reads and faults per tick."""
    spec, g, host = c.spec, c.spec.gpus_per_node, c.host
    cores = c.rates["cpu_seconds"] * host * np.clip(c.noise, 0.8, 1.2) + 0.5 * c.ckpt * g
    if spec.cpu_limit is not None:
        cores = np.minimum(cores, spec.cpu_limit)
    reads = c.rates["fs_reads"] * host * c.noise
    faults = c.rates["majfault"] * host
    ten = np.full_like(c.ticks, 10.0)
    s = c.sample(
        "cadvisor",
        {"cpu": cores, "reads": reads, "periods": ten, "thr": c.rates["cfs_throttled"] * host},
        {"ws": np.full_like(c.ticks, c.gauges["ws"])},
    )
    signals["cpu_cores"], signals["fs_read_bps"] = s["cpu"], s["reads"]
    signals["mem_working_set_bytes"] = s["ws"]
    if spec.cpu_limit is not None:
        with np.errstate(invalid="ignore", divide="ignore"):
            signals["cpu_throttled_frac"] = np.clip(s["thr"] / s["periods"], 0.0, 1.0)
    size = c.timestamps.size
    if c.cl.ksm:
        signals["mem_limit_bytes"] = np.full(size, spec.mem_limit_gb * GB if spec.mem_limit_gb else np.nan)
        if spec.cpu_limit is not None:
            signals["cpu_limit_cores"] = np.full(size, spec.cpu_limit)
    return cores, reads, faults


def _node_signals(
    c: _Pod, signals: dict[str, FloatArray], cores: FloatArray, reads: FloatArray, faults: FloatArray
) -> dict[str, FloatArray]:
    """node-exporter's series of the pod's node: the job's share plus its neighbours'. Returns the pod's PSI."""
    spec, cl, rng, rates, host, noise = c.spec, c.cl, c.rng, c.rates, c.host, c.noise
    neigh_cores = cl.neighbours * rng.uniform(0.5, 4.0)
    neigh_read = cl.neighbours * rng.uniform(0, 100e6)
    neigh_net = cl.neighbours * rng.uniform(0, 200e6)
    node_mem_gb = spec.node_cpus * rng.uniform(4, 16)
    ncpu = float(spec.node_cpus)
    node_busy = np.minimum(cores + neigh_cores, ncpu)
    disk = reads + neigh_read
    ctr = {
        "busy": node_busy,
        "iowait": np.minimum(ncpu - node_busy, c.gauges["procs_iowait"] * 0.5 * host),
        "system": 0.08 * node_busy + rates["swap_sys"] * host,
        "disk_read": disk,
        "disk_ops": disk / rng.uniform(128e3, 512e3),
        "disk_busy": np.minimum(1.0, disk / (spec.storage.read_bps if spec.storage.local else 2e9) * 1.2),
        "majfault": faults + cl.neighbours * rng.uniform(0, 20),
        "net_rx": (rates["net_rx"] * noise + neigh_net) * host,
        "net_tx": (rates["net_tx"] * noise + neigh_net * 0.5) * host,
        "ib_rx": rates["ib"] * c.train * noise,
        "ib_tx": rates["ib"] * c.train * noise,
    }
    psi = {
        "cpu_some": np.minimum(0.95, rates["psi_cpu_some"] * host),
        "io_some": np.minimum(0.95, rates["psi_io_some"] * host),
        "io_full": rates["psi_io_full"] * host,
        "mem_some": rates["psi_mem_some"] * host,
        "mem_full": rates["psi_mem_full"] * host,
    }
    node_psi = {f"psi_{k}": np.minimum(0.95, v + 0.02 * cl.neighbours * (k != "io_full")) for k, v in psi.items()}
    used = (spec.working_set_gb + cl.neighbours * rng.uniform(2, 30)) / node_mem_gb
    nd = c.sample("node", {**ctr, **node_psi}, {"avail": np.full_like(c.ticks, max(0.02, 1.0 - used))})
    signals["node_cpus"] = np.full(c.timestamps.size, ncpu)
    for mode in ("busy", "iowait", "system"):
        signals[f"node_cpu_{mode}_frac"] = np.clip(nd[mode] / ncpu, 0, 1)
    signals["node_disk_read_bps"], signals["node_disk_reads_ps"] = nd["disk_read"], nd["disk_ops"]
    signals["node_disk_busy_frac"] = np.clip(nd["disk_busy"], 0, 1)
    signals["node_mem_avail_frac"] = nd["avail"]
    swapped = 0.0
    if spec.swap != "none" and spec.mem_limit_gb is not None:
        swapped = max(0.0, spec.working_set_gb - spec.mem_limit_gb) / max(16.0, node_mem_gb / 8)
    signals["node_swap_used_frac"] = np.where(np.isfinite(nd["avail"]), min(1.0, swapped), np.nan)
    signals["node_majfault_ps"] = nd["majfault"]
    signals["node_net_rx_bps"], signals["node_net_tx_bps"] = nd["net_rx"], nd["net_tx"]
    if cl.psi:
        for k in psi:
            signals[f"node_psi_{k}"] = np.clip(nd[f"psi_{k}"], 0, 1)
    if cl.ib and spec.fabric is not None and spec.fabric.rdma:
        signals["ib_rx_bps"], signals["ib_tx_bps"] = nd["ib_rx"], nd["ib_tx"]
    return psi


def _sidecar_signals(
    c: _Pod, signals: dict[str, FloatArray], cores: FloatArray, faults: FloatArray, psi: dict[str, FloatArray]
) -> None:
    """The collector's series of the pod's own cgroup: no neighbour leaks in."""
    rates, host, g = c.rates, c.host, c.gauges
    sc = c.sample(
        "sidecar",
        {
            "cpu": cores * 1.01,
            "periods": np.full_like(c.ticks, 10.0),
            "thr": rates["cfs_throttled"] * host,
            "io": rates["io_read"] * host * c.noise,
            "majfault": faults,
            "swapin": rates["swapin"] * host,
            "oom": np.full_like(c.ticks, rates["oom"]),
            **{f"psi_{k}": np.clip(v, 0, 1) for k, v in psi.items()},
        },
        {
            "running": g["procs_running"] * host,
            "iowait": np.round(g["procs_iowait"] * host),
            "busy": np.round(g["procs_busy"] * host),
        },
    )
    signals["sc_cpu_cores"], signals["sc_io_read_bps"] = sc["cpu"], sc["io"]
    with np.errstate(invalid="ignore", divide="ignore"):
        signals["sc_throttled_frac"] = np.clip(sc["thr"] / sc["periods"], 0.0, 1.0)
    signals["sc_majfault_ps"], signals["sc_swapin_ps"], signals["sc_oom_kills"] = (
        sc["majfault"],
        sc["swapin"],
        sc["oom"],
    )
    for k in psi:
        signals[f"sc_psi_{k}"] = np.clip(sc[f"psi_{k}"], 0, 1)
    signals["sc_procs_running"], signals["sc_procs_iowait"] = sc["running"], sc["iowait"]
    signals["sc_procs_busy"] = sc["busy"]
