"""How Prometheus would hold the truth: exporters' samples, counters and their resets, rate(), staleness.

Each exporter samples on its own scrape interval and phase. dcgm-exporter serves the average of its
last collect period (default 30 s), so a faster scrape repeats values. Counters are kept as counters:
they accumulate from an arbitrary start, restart from zero when the container (cAdvisor) or pod
(cgroup, read by the sidecar) restarts, and are read back through a rate over a range of
max(4 x scrape, step + scrape), treating a decrease as a reset the way Prometheus does. A gauge at a
timestamp is its latest sample, and NaN once the series has gone stale (no sample in a scrape interval).
"""

from __future__ import annotations

import numpy as np

from bottleneck_operator.contract.signals import Kind, SignalSpec

FloatArray = np.ndarray
DT = 5.0


def scrape_indices(rng: np.random.Generator, n: int, interval: float) -> FloatArray:
    """Fine-grid indices where an exporter with ``interval`` seconds between scrapes is read."""
    every = max(1, round(interval / DT))
    return np.arange(int(rng.integers(every)), n, every)


def counter_values(rates: FloatArray, at: FloatArray, reset: int, rng: np.random.Generator) -> FloatArray:
    """The values a counter shows at fine indices ``at``, for true per-second rates (rows: series).

    It starts from an arbitrary earlier total (the process ran before the window) and, when
    ``reset`` >= 0, starts again from zero at that fine index.
    """
    total = np.cumsum(np.maximum(rates, 0.0) * DT, axis=1)
    total = total + rng.uniform(0.0, 1e3, (rates.shape[0], 1)) * np.maximum(total[:, -1:], 1.0)
    if reset >= 0:
        total[:, reset:] = (
            total[:, reset:] - total[:, reset : reset + 1] + np.maximum(rates[:, reset : reset + 1], 0) * DT
        )
    sampled: FloatArray = total[:, at]
    return sampled


def rate(values: FloatArray, times: FloatArray, grid: FloatArray, span: float) -> FloatArray:
    """Per-second increase over (t - span, t] at each grid time, resets handled as Prometheus does."""
    delta = np.diff(values, axis=1)
    delta = np.where(delta < 0, values[:, 1:], delta)
    acc = np.concatenate([np.zeros((values.shape[0], 1)), np.cumsum(delta, axis=1)], axis=1)
    last = np.searchsorted(times, grid, side="right") - 1
    first = np.searchsorted(times, grid - span, side="right")
    ok = (last > first) & (last >= 0)
    lo, hi = np.clip(first, 0, times.size - 1), np.clip(last, 0, times.size - 1)
    out = (acc[:, hi] - acc[:, lo]) / np.maximum(times[hi] - times[lo], 1e-9)
    return np.where(ok[None, :], out, np.nan)


def gauge(values: FloatArray, times: FloatArray, grid: FloatArray, interval: float) -> FloatArray:
    """The latest sample at each grid time; NaN where the series is stale."""
    last = np.searchsorted(times, grid, side="right") - 1
    fresh = (last >= 0) & (grid - times[np.clip(last, 0, None)] <= interval + DT)
    return np.where(fresh[None, :], values[:, np.clip(last, 0, None)], np.nan)


def collect_average(truth: FloatArray, collect: float) -> FloatArray:
    """dcgm-exporter's cache: each instant shows the mean of the last completed collect period."""
    c = max(1, round(collect / DT))
    n = truth.shape[1]
    acc = np.concatenate([np.zeros((truth.shape[0], 1)), np.cumsum(truth, axis=1)], axis=1)
    ends = (np.arange(n) // c) * c
    starts = np.maximum(ends - c, 0)
    width = np.maximum(ends - starts, 1)
    held = (acc[:, ends] - acc[:, starts]) / width
    return np.where(ends[None, :] > 0, held, truth[:, :1])


def read_series(
    specs: list[SignalSpec],
    truth: FloatArray,
    fine: FloatArray,
    at: FloatArray,
    grid: FloatArray,
    interval: float,
    step: float,
    reset: int,
    rng: np.random.Generator,
) -> FloatArray:
    """One pod's signals of one exporter (rows of ``truth``), as the window would carry them."""
    out = np.empty((len(specs), grid.size))
    counters = [i for i, s in enumerate(specs) if s.kind is Kind.COUNTER]
    gauges = [i for i, s in enumerate(specs) if s.kind is Kind.GAUGE]
    times = fine[at]
    if counters:
        values = counter_values(truth[counters], at, reset, rng)
        out[counters] = rate(values, times, grid, max(4.0 * interval, step + interval))
    if gauges:
        out[gauges] = gauge(truth[gauges][:, at], times, grid, interval)
    return out
