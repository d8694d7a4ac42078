"""From piecewise-constant states to what Prometheus holds, and from there to the window.

Each exporter is scraped on its own clock (interval with jitter, a few missed scrapes). Counters are
integrals of the state's rates with per-interval noise, restarted from zero where an exporter or
container restarts; gauges are read at the scrape instant; dcgm-exporter's fields are averages over
its collection interval, cached between collections, as a busy fraction is. The window is then made
exactly as the data layer asks Prometheus for it, with the contract's own
:class:`~bottleneck_operator.contract.sampling.Sampler` (``rate()`` for counters, ``last_over_time``
for gauges).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.sampling import Sampler, gauge_window, rate_range
from bottleneck_operator.contract.signals import Family
from bottleneck_operator_dev.familyv.mva import FloatArray

# Signals each exporter family provides, by how they are made.
DCGM_DEV = ("gpu_util", "mem_copy_util", "power_w", "sm_clock_mhz", "nvlink_total_bps")
DCGM_PROF = ("gr_engine_active", "tensor_active", "dram_active", "pcie_tx_bps", "pcie_rx_bps")
DCGM_PROF_SM = ("sm_active", "sm_occupancy")
DCGM_PROF_NVLINK = ("nvlink_tx_bps", "nvlink_rx_bps")
DCGM_PROF_PIPES = ("fp32_active", "fp16_active")
DCGM_POWER_CLOCKS = ("power_limit_w", "clock_slowdown_frac")
CADVISOR_COUNTERS = ("cpu_cores", "fs_read_bps")
CADVISOR_GAUGES = ("mem_working_set_bytes", "mem_limit_bytes")
NODE_COUNTERS = ("node_disk_read_bps", "node_disk_reads_ps", "node_disk_busy_frac", "node_majfault_ps")
NODE_NET = ("node_net_rx_bps", "node_net_tx_bps")
NODE_GAUGES = ("node_mem_avail_frac", "node_swap_used_frac")
NODE_PSI = ("node_psi_cpu_some", "node_psi_io_some", "node_psi_io_full", "node_psi_mem_some", "node_psi_mem_full")
NODE_IB = ("ib_rx_bps", "ib_tx_bps")
SIDECAR_COUNTERS = (
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
SIDECAR_GAUGES = ("sc_procs_running", "sc_procs_iowait", "sc_procs_busy")
CPU_MODES = ("busy", "iowait", "system")


@dataclass(frozen=True)
class Timeline:
    """Segment boundaries (seconds, absolute) and each quantity's value per segment."""

    bounds: FloatArray  # shape (S + 1,)
    values: dict[str, FloatArray]  # name -> shape (S,)

    def _seg(self, t: FloatArray) -> npt.NDArray[np.intp]:
        seg: npt.NDArray[np.intp] = np.clip(np.searchsorted(self.bounds, t, side="right") - 1, 0, len(self.bounds) - 2)
        return seg

    def at(self, names: tuple[str, ...], t: FloatArray) -> FloatArray:
        """Each quantity's value at the instants ``t``, shape (len(names), len(t))."""
        seg = self._seg(t)
        return np.stack([self.values[n][seg] for n in names])

    def integral(self, names: tuple[str, ...], t: FloatArray) -> FloatArray:
        """Each quantity integrated from the first boundary to ``t``."""
        v = np.stack([self.values[n] for n in names])
        widths = np.diff(self.bounds)
        cum = np.concatenate([np.zeros((len(names), 1)), np.cumsum(v * widths, axis=1)], axis=1)
        seg = self._seg(t)
        return cum[:, seg] + v[:, seg] * (t - self.bounds[seg])

    def mean_over(self, names: tuple[str, ...], t: FloatArray, width: float) -> FloatArray:
        """Each quantity averaged over ``[t - width, t]``: what a collector's busy fraction reports."""
        return (self.integral(names, t) - self.integral(names, t - width)) / width


@dataclass(frozen=True)
class Scrapes:
    """One exporter's scrape times and the window's sampler over them."""

    times: FloatArray
    sampler: Sampler
    resets: tuple[int, ...]  # sample indices where its counters restart from zero


def scrapes(
    rng: np.random.Generator, t0: float, t1: float, si: float, grid: FloatArray, step: float, major: int, reset_p: float
) -> Scrapes:
    """Scrape times from ``t0`` to ``t1`` every ``si`` with jitter and misses, and their sampler."""
    n = int((t1 - t0) / si) + 2
    times = t0 + float(rng.uniform(0, si)) + si * np.arange(n) + rng.normal(0.0, 0.01 * si, n)
    keep = rng.random(n) >= float(rng.uniform(0.0, 0.04))
    times = np.round(times[keep & (times <= t1)], 3)
    times = times[np.concatenate([[True], np.diff(times) > 0.002])]
    resets: tuple[int, ...] = ()
    if times.size > 4 and rng.random() < reset_p:
        resets = (int(rng.integers(1, times.size - 1)),)
    sampler = Sampler(
        times, grid, range_seconds=rate_range(step, si), window=gauge_window(step, si), prometheus_major=major
    )
    return Scrapes(times, sampler, resets)


def counter_values(
    rng: np.random.Generator,
    tl: Timeline,
    names: tuple[str, ...],
    sc: Scrapes,
    noise: float,
    scale: float | FloatArray = 1.0,
) -> FloatArray:
    """The raw counters an exporter exposes at its scrapes: integrals of the quantities (times
    ``scale``, per name or one for all) since some earlier start, with noise, restarted from zero at
    ``sc.resets``. Shape (len(names), len(sc.times))."""
    t = sc.times
    scale = np.reshape(np.asarray(scale, dtype=np.float64), (-1, 1))
    cum = tl.integral(names, t) * scale
    inc = np.diff(cum, axis=1) * np.clip(1.0 + noise * rng.standard_normal((len(names), t.size - 1)), 0.0, None)
    # a counter has counted since its process started, long before the window
    start = rng.uniform(1e3, 1e6, size=(len(names), 1)) * np.maximum(cum[:, -1:] - cum[:, :1], 1.0) / 1e3
    raw = np.concatenate([start, start + np.cumsum(inc, axis=1)], axis=1)
    for r in sc.resets:
        # the process restarted midway between two scrapes: it counts again from zero, so its first
        # sample holds half the interval's increase
        raw[:, r:] -= raw[:, r - 1 : r] + 0.5 * inc[:, r - 1 : r]
    return raw


def counters(
    rng: np.random.Generator,
    tl: Timeline,
    names: tuple[str, ...],
    sc: Scrapes,
    noise: float,
    scale: float | FloatArray = 1.0,
) -> FloatArray:
    """``rate()`` of the counters :func:`counter_values` makes, back in the quantities' units."""
    raw = counter_values(rng, tl, names, sc, noise, scale)
    rates: FloatArray = sc.sampler.rate(raw) / np.reshape(np.asarray(scale, dtype=np.float64), (-1, 1))
    return rates


def gauges(rng: np.random.Generator, tl: Timeline, names: tuple[str, ...], sc: Scrapes, noise: float) -> FloatArray:
    """``last_over_time()`` of gauges read at the scrape instant."""
    v = tl.at(names, sc.times) * (1.0 + noise * rng.standard_normal((len(names), sc.times.size)))
    out: FloatArray = sc.sampler.last(v)
    return out


def dcgm(
    rng: np.random.Generator,
    tl: Timeline,
    names: tuple[str, ...],
    sc: Scrapes,
    collect: float,
    phase: float,
    noise: float,
) -> FloatArray:
    """dcgm-exporter's fields: averaged over the collection interval, cached until the next collection."""
    tc = phase + np.floor((sc.times - phase) / collect) * collect  # the latest collection
    v = tl.mean_over(names, tc, collect) * (1.0 + noise * rng.standard_normal((len(names), tc.size)))
    out: FloatArray = sc.sampler.last(v)
    return out


def families_of(field_set: str, *, sidecar: bool, node: bool, psi: bool, ib: bool, cfs: bool, ksm: bool) -> set[Family]:
    """The families a cluster's configuration exports."""
    fam = {Family.DCGM_DEV, Family.CADVISOR}
    if field_set in ("default", "full"):
        fam.add(Family.DCGM_PROF)
    if field_set == "full":
        fam |= {Family.DCGM_PROF_SM, Family.DCGM_PROF_NVLINK, Family.DCGM_PROF_PIPES, Family.DCGM_POWER_CLOCKS}
    for on, f in ((sidecar, Family.SIDECAR), (node, Family.NODE), (psi and node, Family.NODE_PSI)):
        if on:
            fam.add(f)
    for on, f in ((ib and node, Family.NODE_IB), (cfs, Family.CADVISOR_CFS), (ksm, Family.KSM)):
        if on:
            fam.add(f)
    return fam


def clip_ratio(v: FloatArray) -> FloatArray:
    """A ratio signal stays in [0, 1]; NaN (no sample) stays NaN."""
    out: FloatArray = np.minimum(np.maximum(v, 0.0), 1.0)  # both keep NaN
    return out


def finite_or(value: float, default: float) -> float:
    return value if math.isfinite(value) else default
