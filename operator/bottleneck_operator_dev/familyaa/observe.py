"""The exporters and Prometheus: noise drawn through a Gaussian copula, then scraped and sampled.

Per tick (5 s) each reading is its regime's value moved by correlated noise: one standard normal
vector per tick, correlated by :data:`CORRELATION` (GPU activity with power and DRAM, CPU busy with
CPU pressure, reads with IO pressure, ...), and each signal takes it through its own monotone
marginal (logit-normal for shares, log-normal for rates), which is a Gaussian copula. Then:

- dcgm-exporter averages its fields over its collection interval; a scrape reads the last one;
- node-exporter, cAdvisor, kube-state-metrics and the collector are read at the scrape instant:
  gauges as they stand, counters as the integral of their rate (bytes, CPU seconds, stalled
  seconds) from an arbitrary earlier value, dropping to zero when the exporter restarts;
- each exporter is scraped at its own interval, offset and jitter, with missed scrapes;
- the window holds what the contract's :class:`Sampler` makes of those samples on the step grid.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.sampling import Sampler, gauge_window, rate_range
from bottleneck_operator.contract.signals import SIGNALS, Family, Kind

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

DT = 5.0  # seconds a tick: the collector's own period

# Noise dimensions of the copula and their correlations (assumed magnitudes, signs as physics has them).
GPU, POWER, DRAM, LINK, CPU, CPU_PSI, IO, IO_PSI, MEM, NET = range(10)
_PAIRS = {
    (GPU, POWER): 0.8,
    (GPU, DRAM): 0.6,
    (POWER, DRAM): 0.5,
    (GPU, LINK): 0.3,
    (CPU, CPU_PSI): 0.7,
    (IO, IO_PSI): 0.6,
    (CPU, IO): 0.3,
    (GPU, IO): 0.2,
    (CPU_PSI, MEM): 0.3,
    (IO, NET): 0.3,
}
CORRELATION = np.eye(10)
for (_a, _b), _r in _PAIRS.items():
    CORRELATION[_a, _b] = CORRELATION[_b, _a] = _r
_CHOL = np.linalg.cholesky(CORRELATION)

# signal -> (noise dimension, marginal, spread). Marginals: "ratio" logit-normal, "rate" log-normal,
# "level" additive relative (power, clocks), "count" rounded, "fixed" untouched.
NOISE: dict[str, tuple[int, str, float]] = {
    "gpu_util": (GPU, "ratio", 0.25),
    "gr_engine_active": (GPU, "ratio", 0.2),
    "sm_active": (GPU, "ratio", 0.2),
    "sm_occupancy": (GPU, "ratio", 0.2),
    "tensor_active": (GPU, "ratio", 0.2),
    "fp32_active": (GPU, "ratio", 0.2),
    "fp16_active": (GPU, "ratio", 0.2),
    "dram_active": (DRAM, "ratio", 0.15),
    "mem_copy_util": (DRAM, "ratio", 0.2),
    "pcie_rx_bps": (LINK, "rate", 0.15),
    "pcie_tx_bps": (LINK, "rate", 0.15),
    "nvlink_tx_bps": (LINK, "rate", 0.1),
    "nvlink_rx_bps": (LINK, "rate", 0.1),
    "nvlink_total_bps": (LINK, "rate", 0.1),
    "power_w": (POWER, "level", 0.04),
    "sm_clock_mhz": (POWER, "level", 0.015),
    "fb_used_frac": (GPU, "ratio", 0.02),
    "cpu_cores": (CPU, "rate", 0.1),
    "sc_cpu_cores": (CPU, "rate", 0.1),
    "cpu_throttled_frac": (CPU_PSI, "ratio", 0.3),
    "sc_throttled_frac": (CPU_PSI, "ratio", 0.3),
    "sc_psi_cpu_some": (CPU_PSI, "ratio", 0.3),
    "node_psi_cpu_some": (CPU_PSI, "ratio", 0.3),
    "node_cpu_busy_frac": (CPU, "ratio", 0.1),
    "node_cpu_iowait_frac": (IO_PSI, "ratio", 0.3),
    "node_cpu_system_frac": (CPU, "ratio", 0.2),
    "fs_read_bps": (IO, "rate", 0.25),
    "sc_io_read_bps": (IO, "rate", 0.25),
    "node_disk_read_bps": (IO, "rate", 0.25),
    "node_disk_reads_ps": (IO, "rate", 0.25),
    "node_disk_busy_frac": (IO, "ratio", 0.25),
    "sc_psi_io_some": (IO_PSI, "ratio", 0.3),
    "sc_psi_io_full": (IO_PSI, "ratio", 0.3),
    "node_psi_io_some": (IO_PSI, "ratio", 0.3),
    "node_psi_io_full": (IO_PSI, "ratio", 0.3),
    "sc_procs_iowait": (IO_PSI, "count", 0.3),
    "sc_procs_running": (CPU, "count", 0.2),
    "sc_procs_busy": (CPU, "count", 0.1),
    "sc_swapin_ps": (MEM, "rate", 0.3),
    "sc_majfault_ps": (MEM, "rate", 0.3),
    "node_majfault_ps": (MEM, "rate", 0.3),
    "sc_psi_mem_some": (MEM, "ratio", 0.3),
    "sc_psi_mem_full": (MEM, "ratio", 0.3),
    "node_psi_mem_some": (MEM, "ratio", 0.3),
    "node_psi_mem_full": (MEM, "ratio", 0.3),
    "mem_working_set_bytes": (MEM, "level", 0.005),
    "node_mem_avail_frac": (MEM, "ratio", 0.03),
    "node_swap_used_frac": (MEM, "ratio", 0.03),
    "sc_net_rx_bps": (NET, "rate", 0.2),
    "sc_net_tx_bps": (NET, "rate", 0.2),
    "node_net_rx_bps": (NET, "rate", 0.2),
    "node_net_tx_bps": (NET, "rate", 0.2),
    "ib_rx_bps": (NET, "rate", 0.1),
    "ib_tx_bps": (NET, "rate", 0.1),
}
THROTTLE = frozenset({"cpu_throttled_frac", "sc_throttled_frac"})
CFS_PERIODS_PER_S = 10.0  # the default 100 ms CFS period


def copula_noise(rng: np.random.Generator, ticks: int) -> FloatArray:
    """Correlated standard normals, shape (10, ticks), smoothed over three ticks (readings drift, not flicker)."""
    z = _CHOL @ rng.standard_normal((10, ticks + 2))
    smooth: FloatArray = (z[:, :-2] + z[:, 1:-1] + z[:, 2:]) / np.sqrt(3.0)
    return smooth


def apply_noise(values: FloatArray, name: str, z: FloatArray, caps: Mapping[str, float]) -> FloatArray:
    """One signal's per-tick values through its marginal, driven by its copula dimension."""
    dim, marginal, spread = NOISE.get(name, (0, "fixed", 0.0))
    e = z[dim]
    if marginal == "ratio":
        v = np.clip(values, 1e-4, 1 - 1e-4)
        out = 1.0 / (1.0 + np.exp(-(np.log(v / (1 - v)) + spread * e)))
        out = np.where(values <= 0, 0.0, out)
    elif marginal == "rate":
        out = values * np.exp(spread * e - spread**2 / 2)
    elif marginal == "level":
        out = values * (1.0 + spread * e)
    elif marginal == "count":
        out = np.maximum(np.rint(values * (1.0 + spread * e)), 0.0)
    else:
        out = values.copy()
    if name in caps:
        out = np.minimum(out, caps[name])
    result: FloatArray = np.asarray(out, dtype=np.float64)
    return result


def scrape_times(rng: np.random.Generator, t0: float, t1: float, interval: float, miss: float) -> FloatArray:
    """Prometheus's scrapes of one target: a fixed offset, small jitter, some missed."""
    k = np.arange(int((t1 - t0) / interval) + 1)
    times = t0 + rng.uniform(0, interval) + k * interval + rng.uniform(-0.01, 0.01, k.size) * interval
    keep = rng.random(k.size) >= miss
    out: FloatArray = times[keep & (times <= t1)]
    return out


def counter_samples(
    rng: np.random.Generator, ticks: FloatArray, rate: FloatArray, times: FloatArray, restart: float | None
) -> FloatArray:
    """Counters' values at each scrape: the integral of their per-tick rates from an arbitrary start.

    ``rate`` is (n,) or (k, n) for k counters of one exporter. After ``restart`` the exporter counts
    again from zero (the drop is what rate() reads as a reset).
    """
    rates = np.atleast_2d(rate)
    j = np.clip(((times - ticks[0]) // DT).astype(np.int64), 0, ticks.size - 1)
    cum = np.concatenate([np.zeros((rates.shape[0], 1)), np.cumsum(rates * DT, axis=1)], axis=1)
    value = cum[:, j] + rates[:, j] * (times - ticks[j])
    start = rng.uniform(1e3, 1e6, (rates.shape[0], 1)) * np.maximum(rates.mean(axis=1, keepdims=True), 1e-3)
    if restart is not None and restart > ticks[0]:
        # counted from zero at the restart: only what accrued since it
        i = min(int((restart - ticks[0]) // DT), ticks.size - 1)
        at_restart = cum[:, i] + rates[:, i] * (restart - ticks[i])
        value = np.where(times > restart, value - at_restart[:, None], value + start)
    else:
        value = value + start
    out: FloatArray = np.maximum(value, 0.0).reshape((*np.shape(rate)[:-1], times.size))
    return out


def _dcgm(per_tick: Mapping[str, FloatArray], names: list[str], j: IntArray, c: int) -> dict[str, FloatArray]:
    """dcgm-exporter's values at each scrape: the mean of the ``c`` ticks of the last collection."""
    k = np.clip(((j + 1) // c) * c - 1, c - 1, None)
    out: dict[str, FloatArray] = {}
    for name in names:
        x = per_tick[name]
        if SIGNALS[name].unit in ("W", "MHz", "code") or name == "fb_used_frac":
            out[name] = x[k]  # read at the collection instant, not averaged
        else:
            cs = np.concatenate([[0.0], np.cumsum(x)])
            out[name] = (cs[k + 1] - cs[k + 1 - c]) / c
    return out


def _counters(
    rng: np.random.Generator,
    ticks: FloatArray,
    per_tick: Mapping[str, FloatArray],
    names: list[str],
    times: FloatArray,
    sampler: Sampler,
    restart: float | None,
) -> dict[str, FloatArray]:
    """Every counter of one exporter through one rate() pass; CFS shares as a ratio of two rates."""
    rows: list[FloatArray] = []
    keys: list[tuple[str, int]] = []
    for name in names:
        x = per_tick[name]
        rates = [x * CFS_PERIODS_PER_S, np.full_like(x, CFS_PERIODS_PER_S)] if name in THROTTLE else [x]
        for part, rate in enumerate(rates):
            rows.append(rate)
            keys.append((name, part))
    if not rows:
        return {}
    values = counter_samples(rng, ticks, np.stack(rows), times, restart)
    rated = dict(zip(keys, sampler.rate(values), strict=True))
    out: dict[str, FloatArray] = {}
    for name in names:
        if name in THROTTLE:
            with np.errstate(divide="ignore", invalid="ignore"):
                out[name] = np.clip(rated[(name, 0)] / rated[(name, 1)], 0.0, 1.0)
        else:
            out[name] = rated[(name, 0)]
    return out


def observe_pod(
    rng: np.random.Generator,
    ticks: FloatArray,
    per_tick: Mapping[str, FloatArray],
    families: frozenset[Family],
    grid: FloatArray,
    step: float,
    scrape: Mapping[str, float],
    collect_s: float,
    restarts: Mapping[str, float],
    miss: float,
) -> dict[str, FloatArray]:
    """What the window holds for one pod: every emitted signal sampled on ``grid``.

    Args:
        ticks: tick start times, shape (n,).
        per_tick: signal -> noisy per-tick value (rates for counters), shape (n,).
        families: the families this cluster exports.
        grid: the window's timestamps.
        scrape: exporter -> scrape interval.
        collect_s: dcgm-exporter's collection interval.
        restarts: exporter -> time it restarted (its counters begin again at zero), where one did.
        miss: share of scrapes missed.
    """
    t0, t1 = float(ticks[0]), float(grid[-1])
    out: dict[str, FloatArray] = {}
    by_exporter: dict[str, list[str]] = {}
    for name in per_tick:
        if SIGNALS[name].family in families:
            by_exporter.setdefault(SIGNALS[name].family.exporter_name, []).append(name)
    for exporter, names in by_exporter.items():
        si = scrape[exporter]
        times = scrape_times(rng, t0, t1, si, miss)
        if exporter in restarts:  # the restart costs a scrape or two
            r = restarts[exporter]
            times = times[(times < r) | (times > r + rng.uniform(0.5, 2.0) * si)]
        if times.size < 2:
            out |= {name: np.full(grid.size, np.nan) for name in names}
            continue
        j = np.clip(((times - t0) // DT).astype(np.int64), 0, ticks.size - 1)
        sampler = Sampler(times, grid, range_seconds=rate_range(step, si), window=gauge_window(step, si))
        if exporter == "dcgm":
            out |= {
                name: sampler.last(v) for name, v in _dcgm(per_tick, names, j, max(1, round(collect_s / DT))).items()
            }
            continue
        counters = [n for n in names if SIGNALS[n].kind is Kind.COUNTER]
        out |= _counters(rng, ticks, per_tick, counters, times, sampler, restarts.get(exporter))
        out |= {name: sampler.last(per_tick[name][j]) for name in names if name not in counters}
    return out
