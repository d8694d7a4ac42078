"""From what each exporter holds to what a window carries: scrapes, counters, resets, and PromQL reads.

Each exporter is scraped on its own phase every ``scrape_s`` seconds; some scrapes are lost, and
an exporter restarted mid-window leaves a gap. Counters are the integral of their rate since an
arbitrary earlier start, and restart from zero when their owner does (a container's cAdvisor
series, an HCA's port counters cleared by an administrator); legacy 32-bit InfiniBand data
counters stop at their maximum. dcgm-exporter refreshes its values only every collection
interval, so faster scrapes repeat them. The window then holds what PromQL returns: ``rate()`` of
the counters and ``last_over_time()`` of the gauges, as :mod:`bottleneck_operator.contract.sampling`
computes them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.sampling import Sampler, gauge_window, rate_range

Rng = np.random.Generator
Array = npt.NDArray[np.float64]
# node-exporter multiplies the legacy PortXmitData/PortRcvData words by 4; 32-bit counters stop at 2^32 - 1
IB_LEGACY_MAX = 4.0 * (2.0**32 - 1)


@dataclass(frozen=True)
class Scrapes:
    """One exporter's scrapes of one pod's series.

    Attributes:
        times: scrape times kept (strictly increasing).
        sampler: the PromQL reads at the window's timestamps over these times.
    """

    times: Array
    sampler: Sampler


def scrape_times(
    rng: Rng, lo: float, hi: float, every: float, lost_p: float, gaps: tuple[tuple[float, float], ...]
) -> Array:
    """Times an exporter was scraped in [lo, hi]: a random phase, jitter, lost scrapes and gaps removed."""
    phase = float(rng.uniform(0.0, every))
    t = np.arange(lo + phase, hi, every)
    t = t + rng.uniform(0.0, min(0.05 * every, 0.5), t.size)
    keep = rng.random(t.size) >= lost_p
    for start, length in gaps:
        keep &= (t < start) | (t >= start + length)
    return np.asarray(t[keep], dtype=np.float64)


def make_scrapes(times: Array, at: Array, step: float, scrape_s: float, major: int) -> Scrapes:
    return Scrapes(
        times,
        Sampler(
            times,
            at,
            range_seconds=rate_range(step, scrape_s),
            window=gauge_window(step, scrape_s),
            prometheus_major=major,
        ),
    )


def held(grid: Array, values: Array, times: Array, collect_s: float, phase: float) -> Array:
    """Gauge values as a scrape reads them when the exporter refreshes only every ``collect_s`` seconds."""
    ticks = phase + np.floor((times - phase) / collect_s) * collect_s
    return at_times(grid, values, ticks)


def at_times(grid: Array, values: Array, times: Array) -> Array:
    """The grid's values (..., T) at arbitrary times: the last grid point at or before each."""
    idx = np.clip(np.searchsorted(grid, times, side="right") - 1, 0, grid.size - 1)
    return np.asarray(values[..., idx], dtype=np.float64)


def _interp(grid: Array, cum: Array, times: Array) -> Array:
    """Linear interpolation of each row of ``cum`` (..., T) at ``times``."""
    hi = np.clip(np.searchsorted(grid, times, side="right"), 1, grid.size - 1)
    lo = hi - 1
    w = np.clip((times - grid[lo]) / np.maximum(grid[hi] - grid[lo], 1e-9), 0.0, 1.0)
    return np.asarray(cum[..., lo] * (1.0 - w) + cum[..., hi] * w, dtype=np.float64)


def counters(
    grid: Array, rates: Array, times: Array, rng: Rng, resets: tuple[float, ...] = (), ceiling: float | None = None
) -> Array:
    """Counter values (..., n) at ``times`` for per-second ``rates`` (..., T) on the grid.

    The counter is the running integral of the rate plus an earlier total; at each reset time it
    starts again from zero; with a ``ceiling`` it stops there (a saturating counter).
    """
    dt = np.diff(grid, prepend=grid[0])
    cum = np.cumsum(np.clip(rates, 0.0, None) * dt, axis=-1)
    total = _interp(grid, cum, times)
    earlier = rng.uniform(1e3, 1e6, rates.shape[:-1])[..., None] * np.maximum(rates.mean(axis=-1, keepdims=True), 1e-3)
    values = total + earlier
    for at in resets:
        origin = _interp(grid, cum, np.array([at]))
        values = np.where(times >= at, total - origin, values)
    if ceiling is not None:
        values = np.minimum(values, ceiling)
    return np.asarray(values, dtype=np.float64)
