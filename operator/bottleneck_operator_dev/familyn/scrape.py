"""Exporters serving the truth, and Prometheus reading them: scrapes, staleness, gaps, counter resets.

Each exporter of a job has its own scrape interval (5-60 s; most clusters one interval for all),
its own phase, scrape jitter, and scrapes lost when it lags under load. dcgm-exporter serves values
it collected up to its collect interval earlier (30 s by default). An exporter may be restarted
mid-window: its series has a gap, and the counters of a restarted container (cAdvisor's, the
sidecar's) begin again from zero. Counters are built as counters (the integral of their true rate),
then read the way the contract's windows are: ``rate()`` over :func:`rate_range`, gauges by their
latest sample within :func:`gauge_window` (:class:`~bottleneck_operator.contract.sampling.Sampler`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.sampling import Sampler, gauge_window, rate_range
from bottleneck_operator.contract.signals import SIGNALS, Kind
from bottleneck_operator_dev.familyn.timeline import GRID

FloatArray = npt.NDArray[np.float64]

# Counters read as a share of another counter: (denominator per second per unit of live pod).
RATIOS = {
    "cpu_throttled_frac": 10.0,  # CFS periods: one per 100 ms
    "sc_throttled_frac": 10.0,
    "node_cpu_busy_frac": 1.0,  # node CPU seconds, divided by the node's CPUs
    "node_cpu_iowait_frac": 1.0,
    "node_cpu_system_frac": 1.0,
}
RESETTING = ("cadvisor", "sidecar")  # a restarted container's cgroup counters begin again


@dataclass(frozen=True)
class Exporter:
    """How one exporter is scraped in this job.

    Attributes:
        name: "dcgm", "cadvisor", "ksm", "node" or "sidecar".
        interval: scrape interval, seconds.
        collect: seconds between the exporter's own refreshes (dcgm's collect interval; else the interval).
        drop: share of scrapes lost.
        restart: (time, gap seconds) of a restart inside the window, or None.
    """

    name: str
    interval: float
    collect: float
    drop: float
    restart: tuple[float, float] | None


def draw_exporters(rng: np.random.Generator, start: float, end: float, load: float = 0.0) -> dict[str, Exporter]:
    """The job's exporters: a cluster-wide scrape interval that some exporters override.

    ``load`` (0-1, the node's CPU busy share) makes the exporters that share the node's CPUs
    (node-exporter, the sidecar) miss more scrapes: a starved exporter answers past the scrape timeout.
    """
    cluster = float(rng.choice((5.0, 10.0, 15.0, 30.0, 60.0), p=(0.05, 0.15, 0.3, 0.4, 0.1)))
    restarted = str(rng.choice(("dcgm", "cadvisor", "node", "sidecar"))) if rng.random() < 0.3 else ""
    out = {}
    for name in ("dcgm", "cadvisor", "ksm", "node", "sidecar"):
        interval = cluster if rng.random() < 0.7 else float(rng.choice((5.0, 10.0, 15.0, 30.0, 60.0)))
        if name == "sidecar":
            interval = max(5.0, min(interval, 30.0))
        collect = float(rng.choice((1.0, 5.0, 10.0, 30.0), p=(0.1, 0.2, 0.2, 0.5))) if name == "dcgm" else interval
        drop = float(rng.uniform(0.0, 0.08)) if rng.random() < 0.5 else 0.0
        if name in ("node", "sidecar"):
            drop = min(drop + 0.15 * load**4, 0.3)
        restart = (float(rng.uniform(start, end)), float(rng.uniform(10.0, 90.0))) if name == restarted else None
        out[name] = Exporter(name, interval, collect, drop, restart)
    return out


def _scrape_times(rng: np.random.Generator, exp: Exporter, first: float, last: float) -> FloatArray:
    """When the exporter was actually read: a grid with a phase and jitter, less lost scrapes and gaps."""
    times = np.arange(first + float(rng.uniform(0.0, exp.interval)), last, exp.interval)
    times = times + rng.uniform(-0.02, 0.02, times.size) * exp.interval
    keep = rng.random(times.size) >= exp.drop
    if exp.drop > 0:  # a lagging exporter loses scrapes in runs, not one by one
        keep &= np.repeat(rng.random(times.size // 3 + 1) >= exp.drop, 3)[: times.size]
    if exp.restart is not None:
        at, gap = exp.restart
        keep &= (times < at) | (times >= at + gap)
    kept: FloatArray = times[keep]
    return kept


def _at(grid0: float, times: FloatArray, size: int) -> npt.NDArray[np.int64]:
    return np.clip(((times - grid0) // GRID).astype(np.int64), 0, size - 1)


def _counters(rates: FloatArray, times: FloatArray, grid0: float, exp: Exporter, base: FloatArray) -> FloatArray:
    """Counter values at the scrape times: the integral of the rate, from ``base``, reset by a restart."""
    size = rates.shape[-1]
    cum = np.concatenate([np.zeros((*rates.shape[:-1], 1)), np.cumsum(rates * GRID, axis=-1)], axis=-1)
    idx = _at(grid0, times, size)
    values = cum[..., idx] + rates[..., idx] * (times - (grid0 + idx * GRID)) + base[..., None]
    if exp.restart is not None and exp.name in RESETTING:
        at = exp.restart[0]
        i = int(_at(grid0, np.array([at]), size)[0])
        values = np.where(times >= at, values - cum[..., i : i + 1] - base[..., None], values)
    out: FloatArray = values
    return out


def read_exporter(
    rng: np.random.Generator,
    exp: Exporter,
    truth: dict[str, FloatArray],
    names: tuple[str, ...],
    grid: FloatArray,
    at: FloatArray,
    step: float,
) -> dict[str, FloatArray]:
    """The window values of one exporter's signals, each (P, len(at)), as a Prometheus query returns them."""
    times = _scrape_times(rng, exp, float(grid[0]), float(at[-1]) + 1.0)
    sampler = Sampler(times, at, range_seconds=rate_range(step, exp.interval), window=gauge_window(step, exp.interval))
    out: dict[str, FloatArray] = {}
    gauges = [n for n in names if SIGNALS[n].kind is Kind.GAUGE]
    if gauges:
        stale = np.floor(times / exp.collect) * exp.collect  # the exporter's last refresh before the scrape
        idx = _at(float(grid[0]), stale, grid.size)
        stack = np.stack([truth[n] for n in gauges])
        read = sampler.last(stack[..., idx])
        out.update(zip(gauges, read, strict=True))
    counters = [n for n in names if SIGNALS[n].kind is Kind.COUNTER]
    if counters:
        stack = np.stack([truth[n] * _denominator(truth, n) if n in RATIOS else truth[n] for n in counters])
        # node-exporter's counters run from the node's boot (days of uptime), a container's from its start
        uptime = rng.uniform(1e5, 3e7, stack.shape[:-1]) if exp.name == "node" else np.zeros(stack.shape[:-1])
        base = uptime * stack.mean(axis=-1)
        read = sampler.rate(_counters(stack, times, float(grid[0]), exp, base))
        for n, values in zip(counters, read, strict=True):
            out[n] = values
        dens = [n for n in counters if n in RATIOS]
        if dens:
            den = np.stack([_denominator(truth, n) for n in dens])
            den_read = sampler.rate(_counters(den, times, float(grid[0]), exp, np.zeros(den.shape[:-1])))
            with np.errstate(divide="ignore", invalid="ignore"):
                for n, d in zip(dens, den_read, strict=True):
                    out[n] = np.where(d > 0, out[n] / d, np.nan)
    return out


def _denominator(truth: dict[str, FloatArray], name: str) -> FloatArray:
    if name.startswith("node_cpu_"):
        cpus: FloatArray = truth["node_cpus"]
        return cpus
    live: FloatArray = truth["__live"] * RATIOS[name]
    return live
