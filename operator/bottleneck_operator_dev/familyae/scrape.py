"""Exporter series as Prometheus stores them: scraped at an interval, with jitter, gaps and resets.

An exporter module describes each of its series on the slice grid: a counter by its rate, a gauge by
its level. Scraping turns them into samples: a counter's value is its running total (from a drawn
uptime, restarting from zero at a drawn reset), a gauge's value is its level at the scrape plus the
noise of the instant it was read. dcgm-exporter reads the GPU only every collect interval and serves
the cached value to every scrape in between (TELEMETRY.md), so its gauges repeat.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator_dev.familyae.stages import Arr
from bottleneck_operator_dev.familyae.timeline import Grid


@dataclass(frozen=True)
class Level:
    """A series on the grid.

    Attributes:
        values: shape (..., G): a counter's rate per second, or a gauge's level.
        counter: whether it is a counter.
        noise: relative noise (gauges: of each reading; counters: of each slice's rate).
        burst: shape (G,): how much a ~1 s reading of a busy share swings (GPU ratios), or None.
        cap: readings (a counter's rate) are clipped to [0, cap] (1 for ratios, 100 for
            percentages, the node's CPUs for CPU time); None: no cap.
        integer: readings are whole numbers (percent, MiB, MHz, process counts).
    """

    values: Arr
    counter: bool = False
    noise: float = 0.0
    burst: Arr | None = None
    cap: float | None = None
    integer: bool = False


@dataclass(frozen=True)
class Scraped:
    """One target's samples.

    Attributes:
        exporter: "dcgm", "cadvisor", "ksm", "node" or "sidecar".
        times: the scrape times that produced samples.
        values: series -> samples, shape (..., len(times)).
        counters: the series that are counters.
        resets: times at which this target's counters restarted from zero.
        si: the scrape interval.
    """

    exporter: str
    times: Arr
    values: dict[str, Arr]
    counters: frozenset[str]
    resets: tuple[float, ...]
    si: float


def scrape_times(rng: np.random.Generator, first: float, last: float, si: float, miss: float, outage: bool) -> Arr:
    """Scrape times every `si` from a drawn offset, with ~0.3 % jitter, missed scrapes and maybe an outage."""
    start = first + float(rng.uniform(0.0, si))
    n = int(np.floor((last - start) / si)) + 1
    times = start + si * np.arange(n, dtype=np.float64)
    times = times + np.clip(rng.normal(0.0, 0.003 * si, n), -0.01 * si, 0.01 * si)
    times = np.round(times * 1000.0) / 1000.0  # Prometheus stores sample times in milliseconds
    keep = rng.random(n) >= miss
    if outage and n > 12:
        at = int(rng.integers(n // 3, n - 6))
        keep[at : at + int(rng.integers(2, 7))] = False
    return times[keep]


def _counter(level: Level, grid: Grid, times: Arr, rng: np.random.Generator, resets: tuple[float, ...]) -> Arr:
    rate = np.clip(level.values, 0.0, None)
    if level.noise > 0:
        rate = rate * rng.lognormal(0.0, level.noise, rate.shape)
    if level.cap is not None:  # a stall share cannot pass wall time, nor CPU time the node's CPUs
        rate = np.minimum(rate, level.cap)
    edges = np.concatenate([grid.t, [grid.t[-1] + grid.dt]])
    cum = np.concatenate([np.zeros((*rate.shape[:-1], 1)), np.cumsum(rate * grid.dt, axis=-1)], axis=-1)
    flat = cum.reshape(-1, cum.shape[-1])
    out = np.stack([np.interp(times, edges, row) for row in flat]).reshape((*rate.shape[:-1], times.size))
    uptime = float(rng.uniform(3600.0, 30 * 86400.0))
    base = np.mean(rate, axis=-1, keepdims=True) * uptime
    total = out + base
    out = total
    for r in sorted(resets):  # the process restarted: its total begins again at zero
        at_r = np.stack([np.interp([r], edges, row) for row in flat]).reshape((*rate.shape[:-1], 1)) + base
        out = np.where(times >= r, total - at_r, out)
    return np.asarray(out, dtype=np.float64)


def _gauge(level: Level, grid: Grid, times: Arr, rng: np.random.Generator, collect: float | None) -> Arr:
    if collect:  # the value cached at the exporter's last collection, with that collection's noise
        offset = float(rng.uniform(0.0, collect))
        slot = np.floor((times - offset) / collect)
        read_at = slot * collect + offset
        _, inverse = np.unique(slot, return_inverse=True)
    else:
        read_at, inverse = times, np.arange(times.size)
    idx = grid.index(read_at)
    value = level.values[..., idx]
    draws = int(inverse.max()) + 1 if inverse.size else 0
    if level.burst is not None:
        swing = np.sqrt(np.clip(value * (1.0 - value), 0.0, None) * level.burst[idx]) * 0.8
        value = value + swing * rng.normal(0.0, 1.0, (*value.shape[:-1], draws))[..., inverse]
    if level.noise > 0:
        value = value * (1.0 + level.noise * rng.normal(0.0, 1.0, (*value.shape[:-1], draws))[..., inverse])
    if level.cap is not None:
        value = np.clip(value, 0.0, level.cap)
    if level.integer:
        value = np.round(value)
    return np.asarray(value, dtype=np.float64)


def scrape(
    exporter: str,
    levels: dict[str, Level],
    grid: Grid,
    times: Arr,
    rng: np.random.Generator,
    si: float,
    *,
    resets: tuple[float, ...] = (),
    collect: float | None = None,
) -> Scraped:
    """Sample a target's series at its scrape times."""
    values: dict[str, Arr] = {}
    for name, level in levels.items():
        if level.counter:
            values[name] = _counter(level, grid, times, rng, resets)
        else:
            values[name] = _gauge(level, grid, times, rng, collect)
    counters = frozenset(n for n, lv in levels.items() if lv.counter)
    return Scraped(exporter, times, values, counters, resets, si)
