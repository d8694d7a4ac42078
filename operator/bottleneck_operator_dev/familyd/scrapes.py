"""What Prometheus stores: each exporter's samples at its own scrape times.

Scrape times are on the 5 s simulation grid plus a few milliseconds of jitter, at the exporter's
interval and phase, with an occasional missed scrape and, now and then, an outage of a few minutes.
Counters are integrated from the activity's rates (so they are monotone), start from what they held
since boot, and restart from zero where the exporter or its source restarts; gauges are read at the
scrape, or - for dcgm-exporter, which collects on its own period - at the latest collection.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from bottleneck_operator_dev.familyd.stages import FloatArray
from bottleneck_operator_dev.familyd.world import Rng

GRID = 5.0  # seconds between simulation points; every scrape interval is a multiple of it


@dataclass
class Scrapes:
    """One exporter's samples for the job's pods (or nodes).

    Attributes:
        exporter: the exporter's short name.
        times: scrape times, s, strictly increasing, shape (n,).
        index: the grid point each scrape reads, shape (n,).
        gauges: name -> values, shape (rows, n).
        counters: name -> values, shape (rows, n), monotone except at ``resets``.
        resets: name -> boolean (rows, n): True where that sample follows a counter reset.
    """

    exporter: str
    times: FloatArray
    index: np.ndarray
    gauges: dict[str, FloatArray] = field(default_factory=dict)
    counters: dict[str, FloatArray] = field(default_factory=dict)
    resets: dict[str, np.ndarray] = field(default_factory=dict)


def scrape_plan(rng: Rng, grid: FloatArray, interval: float, first: float) -> tuple[FloatArray, np.ndarray]:
    """Scrape times and their grid points: every ``interval`` s from a random phase, some missed.

    Args:
        rng: the job's generator.
        grid: the simulation grid (5 s apart).
        interval: the exporter's scrape interval, a multiple of 5 s.
        first: no scrape before this time (the exporter's series start).
    """
    every = max(round(interval / GRID), 1)
    phase = int(rng.integers(0, every))
    idx = np.arange(phase, grid.size, every)
    idx = idx[grid[idx] >= first]
    keep = rng.random(idx.size) >= float(rng.uniform(0.0, 0.02))
    if rng.random() < 0.1 and idx.size > 40:  # an outage: the target was unreachable for a while
        start = int(rng.integers(10, idx.size - 20))
        keep[start : start + int(rng.integers(2, max(3, int(300 / interval))))] = False
    idx = idx[keep]
    jitter = rng.uniform(0.0, 0.025, size=idx.size)
    return grid[idx] + jitter, idx


def held(grid: FloatArray, index: np.ndarray, period: float, rng: Rng) -> np.ndarray:
    """The grid point of the latest collection at or before each scrape (collections every ``period``)."""
    every = max(round(period / GRID), 1)
    if every == 1:
        return index
    phase = int(rng.integers(0, every))
    latest = (index - phase) // every * every + phase
    return np.asarray(np.clip(latest, 0, grid.size - 1), dtype=np.int64)


def integrate(rate: FloatArray, start: FloatArray) -> FloatArray:
    """A counter on the grid from its rate per second: the value before each grid step's increase."""
    inc = np.maximum(rate, 0.0) * GRID
    total = np.cumsum(inc, axis=-1) - inc
    return np.asarray(start[..., None] + total, dtype=np.float64)


def counters(
    rng: Rng, scrapes: Scrapes, rates: dict[str, FloatArray], reset_p: float, uptime: tuple[float, float]
) -> None:
    """Add counters to ``scrapes``: integrated rates, sampled at its scrapes, restarting now and then.

    Args:
        rng: the job's generator.
        scrapes: the exporter's samples so far (times and grid points set).
        rates: name -> per-second rate on the grid, shape (rows, grid).
        reset_p: probability, per row, that the exporter's counters restart inside the window.
        uptime: seconds (low, high) the counters have been counting before the window.
    """
    if not rates:
        return
    rows = next(iter(rates.values())).shape[0]
    n = scrapes.index.size
    restart = np.full(rows, -1)
    for r in range(rows):
        if n > 6 and rng.random() < reset_p:
            restart[r] = int(rng.integers(3, n - 3))
    since = np.asarray(rng.uniform(*uptime, size=rows), dtype=np.float64)
    _count(rng, scrapes, rates, restart, since)


def more_counters(rng: Rng, scrapes: Scrapes, rates: dict[str, FloatArray], uptime: tuple[float, float]) -> None:
    """Add counters to an exporter that has some: they restart where its other counters do.

    Every draw comes from ``rng``, so a separate generator leaves the exporter's earlier draws as
    they were.
    """
    if not rates:
        return
    rows = next(iter(rates.values())).shape[0]
    restart = np.full(rows, -1)
    if scrapes.resets:
        mask = np.logical_or.reduce(list(scrapes.resets.values()))
        for r in range(rows):
            hits = np.flatnonzero(mask[r])
            if hits.size:
                restart[r] = int(hits[0])
    _count(rng, scrapes, rates, restart, np.asarray(rng.uniform(*uptime, size=rows), dtype=np.float64))


def _count(rng: Rng, scrapes: Scrapes, rates: dict[str, FloatArray], restart: np.ndarray, since: FloatArray) -> None:
    """Integrate, sample and restart each counter (at ``restart``, per row; -1 for none)."""
    rows, n = restart.size, scrapes.index.size
    for name, rate in rates.items():
        start = np.mean(np.maximum(rate, 0.0), axis=-1) * since
        values = integrate(rate, start)[:, scrapes.index]
        mask = np.zeros((rows, n), dtype=bool)
        for row in np.flatnonzero(restart >= 0).tolist():
            r, k = int(row), int(restart[row])
            # restarted between samples k-1 and k: counting began again from zero at the restart
            values[r, k:] = values[r, k:] - values[r, k - 1] - rng.uniform(0.0, 1.0) * (values[r, k] - values[r, k - 1])
            values[r, k:] = np.maximum(values[r, k:], 0.0)
            mask[r, k] = True
        scrapes.counters[name] = values
        scrapes.resets[name] = mask
