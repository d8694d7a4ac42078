"""A family F job's pods as windows: its timeline, its truth, and each exporter's reading of it."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.sampling import rate_range
from bottleneck_operator.contract.signals import SIGNALS, Family
from bottleneck_operator.contract.verdict import Mechanism
from bottleneck_operator_dev.familyf.design import Design
from bottleneck_operator_dev.familyf.gpu import gpu_truth
from bottleneck_operator_dev.familyf.host import neighbour_load, pod_truth
from bottleneck_operator_dev.familyf.node import node_truth
from bottleneck_operator_dev.familyf.scrape import Grid, Scrapes, scrape_times
from bottleneck_operator_dev.familyf.setup import Watch

FloatArray = npt.NDArray[np.float64]
Signals = dict[str, FloatArray]  # name -> shape (pods, T)

_DCGM_MEAN = (
    "gpu_util",
    "mem_copy_util",
    "power_w",
    "sm_clock_mhz",
    "nvlink_total_bps",
    "gr_engine_active",
    "tensor_active",
    "dram_active",
    "pcie_tx_bps",
    "pcie_rx_bps",
    "sm_active",
    "sm_occupancy",
    "nvlink_tx_bps",
    "nvlink_rx_bps",
    "fp32_active",
    "fp16_active",
    "power_limit_w",
)


def timeline(rng: np.random.Generator, d: Design, grid: Grid, watch: Watch) -> tuple[FloatArray, FloatArray, list[str]]:
    """Whether each pod steps at each grid time (checkpoints, restarts), and its step-rate noise."""
    t = grid.t0 + grid.dt * np.arange(grid.size)
    active = np.ones((d.pods, grid.size))
    tags = []
    if rng.random() < 0.5:  # synchronous checkpoints: every rank stops stepping while state is written
        period, length = rng.uniform(300.0, 2400.0), rng.uniform(15.0, 180.0)
        active[:, ((t - rng.uniform(0.0, period)) % period) < length] = 0.0
        tags.append("checkpoint-pauses")
    if watch.container_restart is not None:  # every rank waits while one restarts and rejoins
        when = watch.container_restart[1]
        active[:, (t >= when) & (t < when + rng.uniform(40.0, 150.0))] = 0.0
        tags.append("container-restart")
    phi, sigma = rng.uniform(0.8, 0.95), rng.uniform(0.02, 0.08)
    shocks = rng.normal(0.0, sigma * np.sqrt(1 - phi**2), (d.pods, grid.size))
    ar = np.zeros_like(shocks)
    for k in range(1, grid.size):
        ar[:, k] = phi * ar[:, k - 1] + shocks[:, k]
    slow = np.ones((d.pods, 1))
    if d.pods > 1 and rng.random() < 0.2:  # one rank's host is a little slower: all ranks wait for it
        slow[int(rng.integers(d.pods))] = rng.uniform(0.9, 0.97)
        tags.append("slow-rank")
    return active, np.exp(ar) * slow, tags


def _origin(rng: np.random.Generator, rate: FloatArray) -> FloatArray:
    """Counter values when the grid starts: the counter has been counting for a while."""
    return np.asarray(rate.mean(axis=1) * rng.uniform(1e3, 1e6, rate.shape[0]), dtype=np.float64)


def _counters(
    s: Scrapes, rng: np.random.Generator, rates: dict[str, FloatArray], resets: dict[int, float] | None = None
) -> Signals:
    return {k: s.rate(s.counter_values(v, _origin(rng, v), resets)) for k, v in rates.items()}


def _ratio(num: FloatArray, den: FloatArray) -> FloatArray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(np.where(den > 0, num / den, np.nan), dtype=np.float64)


def _dcgm(s: Scrapes, gpu: dict[str, FloatArray], watch: Watch) -> Signals:
    if watch.stuck_engine:
        gpu = {**gpu, "gr_engine_active": gpu["gr_engine_active"].copy()}
        gpu["gr_engine_active"][0] = 0.0
    out = {name: s.gauge(gpu[name]).mean(axis=1) for name in _DCGM_MEAN}
    out["fb_used_frac"] = s.gauge(gpu["fb_used_frac"]).max(axis=1)
    out["clock_slowdown_frac"] = s.gauge(gpu["clock_slowdown"]).mean(axis=1)
    out["xid_code"] = s.gauge(np.zeros_like(gpu["gpu_util"])).max(axis=1)
    return out


def _cadvisor(s: Scrapes, rng: np.random.Generator, pod: Signals, watch: Watch) -> Signals:
    resets = dict([watch.container_restart]) if watch.container_restart else None
    periods = np.full_like(pod["cpu_cores"], 10.0) * rng.uniform(0.9, 1.0)  # 100 ms CFS periods
    c = _counters(
        s,
        rng,
        {
            "cpu_cores": pod["cpu_cores"],
            "fs_read_bps": pod["fs_read_bps"],
            "periods": periods,
            "throttled": periods * pod["cfs_throttled"],
        },
        resets,
    )
    return {
        "cpu_cores": c["cpu_cores"],
        "fs_read_bps": c["fs_read_bps"],
        "cpu_throttled_frac": _ratio(c["throttled"], c["periods"]),
        "mem_working_set_bytes": s.gauge(pod["mem_working_set_bytes"]),
    }


def _node(s: Scrapes, rng: np.random.Generator, node: Signals) -> Signals:
    modes = ("cpu_user", "cpu_system", "cpu_iowait", "cpu_idle")
    counter_names = (
        "node_disk_read_bps",
        "node_disk_reads_ps",
        "node_disk_busy_frac",
        "node_majfault_ps",
        "node_net_rx_bps",
        "node_net_tx_bps",
        "ib_rx_bps",
        "ib_tx_bps",
        "node_psi_cpu_some",
        "node_psi_io_some",
        "node_psi_io_full",
        "node_psi_mem_some",
        "node_psi_mem_full",
        *modes,
    )
    c = _counters(s, rng, {k: node[k] for k in counter_names})
    total = c["cpu_user"] + c["cpu_system"] + c["cpu_iowait"] + c["cpu_idle"]
    out = {k: c[k] for k in counter_names if k not in modes}
    out["node_cpu_busy_frac"] = 1.0 - _ratio(c["cpu_idle"] + c["cpu_iowait"], total)
    out["node_cpu_iowait_frac"] = _ratio(c["cpu_iowait"], total)
    out["node_cpu_system_frac"] = _ratio(c["cpu_system"], total)
    for k in ("node_cpus", "node_mem_avail_frac", "node_swap_used_frac"):
        out[k] = s.gauge(node[k])
    return out


def _sidecar(s: Scrapes, rng: np.random.Generator, pod: Signals, d: Design) -> Signals:
    periods = np.full_like(pod["cpu_cores"], 10.0)
    names = (
        "sc_psi_cpu_some",
        "sc_psi_io_some",
        "sc_psi_io_full",
        "sc_psi_mem_some",
        "sc_psi_mem_full",
        "sc_cpu_cores",
        "sc_io_read_bps",
        "sc_majfault_ps",
        "sc_swapin_ps",
        "sc_oom_kills",
    )
    c = _counters(
        s, rng, {**{k: pod[k] for k in names}, "periods": periods, "throttled": periods * pod["sc_throttled"]}
    )
    out = {k: c[k] for k in names}
    if d.cpu_limit is not None:  # without a quota nr_periods never moves: 0/0
        out["sc_throttled_frac"] = _ratio(c["throttled"], c["periods"])
    for k in ("sc_procs_running", "sc_procs_iowait", "sc_procs_busy"):
        out[k] = s.gauge(pod[k])
    return out


def _sidecar_net(s: Scrapes, net_rng: np.random.Generator, node: Signals) -> Signals:
    """The pod's own network bytes, counted in its namespace by the same sidecar (same scrapes)."""
    own = {"sc_net_rx_bps": node["own_net_rx"], "sc_net_tx_bps": node["own_net_tx"]}
    return _counters(s, net_rng, own)


def _oom(rng: np.random.Generator, d: Design, pod: Signals, grid: Grid) -> list[str]:
    """A loader worker OOM-killed in some memory-pressured jobs without swap (the kernel's last resort)."""
    if d.mechanism is not Mechanism.HOST_MEMORY_PRESSURE or d.swap != "none" or rng.random() >= 0.3:
        return []
    p, k = int(rng.integers(d.pods)), int(rng.integers(grid.size // 3, grid.size))
    pod["sc_oom_kills"][p, k] = 1.0 / grid.dt
    return ["oom-kill"]


def read_exporters(
    rng: np.random.Generator, d: Design, watch: Watch, at: FloatArray, step: float, net_rng: np.random.Generator
) -> tuple[Signals, list[str]]:
    """Every signal the watch exports for the job's pods, on the window's timestamps.

    ``net_rng`` draws what the pod's own network counters add (their origins), apart from ``rng`` so
    that no other signal's draws move.
    """
    lead = max(rate_range(step, si) for si in watch.interval.values()) + 60.0
    dt = min(5.0, step)
    grid = Grid(float(at[0]) - lead, dt, int(np.ceil((at[-1] - at[0] + lead) / dt)) + 2)
    active, noise, tags = timeline(rng, d, grid, watch)
    gpu = gpu_truth(d, rng, active, noise)
    pod = pod_truth(d, rng, active * noise)
    tags += _oom(rng, d, pod, grid)
    node = node_truth(d, pod, neighbour_load(d, rng, grid.size), active * noise, rng)
    readers: dict[str, Callable[[Scrapes], Signals]] = {
        "dcgm": lambda s: _dcgm(s, gpu, watch),
        "cadvisor": lambda s: _cadvisor(s, rng, pod, watch),
        "ksm": lambda s: {"cpu_limit_cores": s.gauge(np.full_like(active, d.cpu_limit or np.nan))},
        "node": lambda s: _node(s, rng, node),
        "sidecar": lambda s: {**_sidecar(s, rng, pod, d), **_sidecar_net(s, net_rng, node)},
    }
    out: Signals = {}
    for exporter, read in readers.items():
        si = watch.interval[exporter]
        down = watch.down[1:] if watch.down is not None and watch.down[0] == exporter else None
        times = scrape_times(rng, grid, si, grid.t0 + 1.0, float(at[-1]), watch.miss[exporter], down)
        collect = watch.collect if exporter == "dcgm" else 0.0
        out.update(read(Scrapes(grid, times, collect, at, step, si)))
    return _keep(out, d, watch), tags


def _keep(signals: Signals, d: Design, watch: Watch) -> Signals:
    """Only the signals of the families the watch exports (and a memory limit only where one is read).

    The pod's network bytes come with the sidecar: where it runs, it counts them.
    """
    families = watch.families | ({Family.SIDECAR_NET} if Family.SIDECAR in watch.families else set())
    kept = {k: v for k, v in signals.items() if k in SIGNALS and SIGNALS[k].family in families}
    kept.pop("cpu_limit_cores", None) if d.cpu_limit is None else None
    if d.mem_limit is not None and (Family.KSM in watch.families or Family.SIDECAR in watch.families):
        kept["mem_limit_bytes"] = np.where(np.isfinite(signals["mem_working_set_bytes"]), d.mem_limit, np.nan)
    return kept
