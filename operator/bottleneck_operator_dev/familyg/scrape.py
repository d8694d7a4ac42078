"""Raw scrapes: what Prometheus would store for one job, exporter by exporter.

Each exporter is scraped on its own grid (the cluster's interval, its own phase, a little jitter,
a missed scrape now and then). Gauges are the level at the scrape (dcgm-exporter's only as fresh as
its own collect interval: a faster scrape repeats the cached value). Counters integrate the level
between scrapes from an offset built up since boot, and restart from zero where their source
restarted: the collector's counters when the collector restarts, cAdvisor's container counters when
the trainer container restarts. Kernel counters (node-exporter's) never reset mid-job: an exporter
restart only leaves a gap.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from bottleneck_operator_dev.familyg.node_view import JobLevels

# Which exporter each raw key comes from, and whether it is a counter. A key ending in "#num" or
# "#den" is one half of a ratio of two counters' rates (CFS periods, node CPU modes).
DCGM = (
    "gpu_util",
    "mem_copy_util",
    "fb_used_frac",
    "power_w",
    "sm_clock_mhz",
    "nvlink_total_bps",
    "xid_code",
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
    "clock_slowdown_frac",
)
GAUGES = {
    "dcgm": DCGM,
    "cadvisor": ("mem_working_set_bytes", "mem_limit_bytes"),
    "ksm": ("cpu_limit_cores",),
    "node": ("node_cpus", "node_mem_avail_frac", "node_swap_used_frac"),
    "sidecar": ("sc_procs_running", "sc_procs_iowait", "sc_procs_busy"),
}
COUNTERS = {
    "dcgm": (),
    "cadvisor": ("cpu_cores", "fs_read_bps", "cpu_throttled_frac#num", "cpu_throttled_frac#den"),
    "ksm": (),
    "node": (
        "node_disk_read_bps",
        "node_disk_reads_ps",
        "node_disk_busy_frac",
        "node_majfault_ps",
        "node_net_rx_bps",
        "node_net_tx_bps",
        "node_psi_cpu_some",
        "node_psi_io_some",
        "node_psi_io_full",
        "node_psi_mem_some",
        "node_psi_mem_full",
        "ib_rx_bps",
        "ib_tx_bps",
        "node_cpu_busy_frac#num",
        "node_cpu_iowait_frac#num",
        "node_cpu_system_frac#num",
        "node_cpu#den",
    ),
    "sidecar": (
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
        "sc_throttled_frac#num",
        "sc_throttled_frac#den",
    ),
}
# Ratios read as a share (PSI, utilisation): kept in [0, 1] after noise.
_BOUNDED = {"fb_used_frac", "clock_slowdown_frac", "node_mem_avail_frac", "node_swap_used_frac", "node_disk_busy_frac"}
_STEADY = {"fb_used_frac", "power_limit_w", "mem_limit_bytes", "cpu_limit_cores", "node_cpus", "xid_code"}
# Gauges that move little between samples: clocks under DVFS, memory held, power under a cap.
_SIGMA = {"sm_clock_mhz": 0.015, "mem_working_set_bytes": 0.01, "node_mem_avail_frac": 0.03, "power_w": 0.05}
# CFS runs a period every 100 ms while the cgroup has runnable tasks (cpu.max's default period).
CFS_PERIODS_PER_S = 10.0


@dataclass(frozen=True)
class Scrapes:
    """One exporter's stored samples for the job's pods.

    Attributes:
        times: scrape times, strictly increasing, shape (n,).
        keys: raw keys, in row order.
        values: shape (len(keys), pods, n); counters cumulative.
        counters: which keys are counters.
        resets: indices where the exporter's counters restarted from zero.
    """

    times: np.ndarray
    keys: tuple[str, ...]
    values: np.ndarray
    counters: frozenset[str]
    resets: tuple[int, ...] = field(default=())


@dataclass(frozen=True)
class Schedule:
    """When the job is not training: checkpoint pauses and a container restart.

    Attributes:
        period: seconds between checkpoints (inf: none in the window).
        duration: seconds each checkpoint pauses training.
        offset: time of the first checkpoint.
        restart: (start, end) of a trainer container restart, or None.
    """

    period: float
    duration: float
    offset: float
    restart: tuple[float, float] | None

    def paused(self, t: np.ndarray) -> np.ndarray:
        """1.0 where the job is not training at time ``t``, else 0.0."""
        ck = ((t - self.offset) % self.period) < self.duration if np.isfinite(self.period) else np.zeros(t.shape, bool)
        if self.restart is not None:
            ck |= (t >= self.restart[0]) & (t < self.restart[1])
        return np.asarray(ck, dtype=np.float64)

    def share(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Share of each interval (a, b] the job is not training (eight points per interval)."""
        pts = a[:, None] + (b - a)[:, None] * (np.arange(8) + 0.5)[None, :] / 8
        return np.asarray(self.paused(pts).mean(axis=1), dtype=np.float64)


def scrape_times(rng: np.random.Generator, start: float, end: float, interval: float, lead: float) -> np.ndarray:
    """Scrape times from ``start - lead`` to ``end``: a phase, jitter, about 1 % missed."""
    first = start - lead + rng.uniform(0, interval)
    t = np.arange(first, end + 1e-9, interval)
    t = t + rng.normal(0, 0.005 * interval, t.size)
    keep = rng.random(t.size) > 0.01
    keep[:2] = True
    return np.round(np.sort(t[keep]), 3)


def _counter(
    rng: np.random.Generator, rate: np.ndarray, times: np.ndarray, resets: tuple[int, ...], events: bool
) -> np.ndarray:
    dt = np.diff(times, prepend=times[0] - (times[1] - times[0]))
    inc = rng.poisson(np.maximum(rate, 0) * dt).astype(float) if events else np.maximum(rate, 0) * dt
    offset = rng.uniform(1e3, 1e6, (rate.shape[0], 1)) * np.maximum(rate.mean(axis=1, keepdims=True), 1e-3)
    inc[:, :1] += offset if not events else 0
    total = np.cumsum(inc, axis=1)
    for r in resets:
        total[:, r:] -= total[:, r - 1 : r]  # the source restarted: counting begins again from zero
    return np.asarray(total, dtype=np.float64)


def _level(jl: JobLevels, key: str, share: np.ndarray, drift: np.ndarray, noise: np.ndarray) -> np.ndarray:
    return np.asarray(_raw_level(jl, key, share, drift, noise), dtype=np.float64)


def _raw_level(jl: JobLevels, key: str, share: np.ndarray, drift: np.ndarray, noise: np.ndarray) -> object:
    base = key.split("#")[0]
    if base == "node_cpu":
        return jl.train["node_cpus"][:, None] * np.ones_like(share)[None, :]
    train, pause = jl.train[base], jl.pause[base]
    if key.endswith("#den"):
        return CFS_PERIODS_PER_S * np.ones((train.size, share.size))
    scale: object = 1.0
    if key.endswith("#num"):
        scale = jl.train["node_cpus"][:, None] if base.startswith("node_cpu") else CFS_PERIODS_PER_S
    if base in _STEADY:
        return np.repeat(train[:, None], share.size, axis=1)
    level = train[:, None] * (1 - share)[None, :] * drift[None, :] * noise + pause[:, None] * share[None, :]
    if key.endswith("#num"):
        return np.clip(level, 0, 1) * scale
    return np.clip(level, 0, 1) if base in _BOUNDED or base.endswith(("_active", "_util", "_some", "_full")) else level


def exporter_scrapes(
    rng: np.random.Generator,
    jl: JobLevels,
    times: np.ndarray,
    keys: tuple[str, ...],
    counters: frozenset[str],
    schedule: Schedule,
    *,
    hold: float = 0.0,
    resets: tuple[int, ...] = (),
    gpus: int = 1,
    caps: dict[str, float] | None = None,
) -> Scrapes:
    """One exporter's samples of the given keys for every pod.

    Args:
        rng: the job's generator.
        jl: the job's levels.
        times: the exporter's scrape times.
        keys: raw keys it exports.
        counters: which of them are counters.
        schedule: when the job pauses.
        hold: the exporter's own collect interval (gauges repeat within it), 0 for none.
        resets: scrape indices where its counters restart from zero.
        gpus: GPUs per pod (a share of GPUs is a count out of these).
        caps: upper bounds of gauges (the board's maximum clock).

    Returns:
        The samples.
    """
    n, pods = times.size, jl.neighbours.size
    caps = caps or {}
    seen = np.floor(times / hold) * hold if hold > 0 else times
    _, inv = np.unique(seen, return_inverse=True)
    gauge_share = schedule.paused(seen)
    prev = np.concatenate([[times[0] - (times[1] - times[0])], times[:-1]])
    interval_share = schedule.share(prev, times)
    drift = 1 + 0.06 * np.sin(2 * np.pi * seen / rng.uniform(900, 5400) + rng.uniform(0, 6.3))
    out = np.empty((len(keys), pods, n))
    for k, key in enumerate(keys):
        is_counter = key in counters
        sigma = 0.04 if is_counter else _SIGMA.get(key, 0.08)
        noise = np.exp(rng.normal(0, sigma, (pods, inv.max() + 1)))[:, inv]
        share = interval_share if is_counter else gauge_share
        level = _level(jl, key, share, drift, noise)
        if key == "clock_slowdown_frac":
            level = rng.binomial(gpus, np.clip(level, 0, 1)) / gpus
        if key == "power_w":
            level = np.minimum(level, jl.train["power_limit_w"][:, None] * 0.999)
        if key in caps:
            level = np.minimum(level, caps[key])
        out[k] = _counter(rng, level, times, resets, key == "sc_oom_kills") if is_counter else level
    return Scrapes(times, keys, out, counters, resets)
