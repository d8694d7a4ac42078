"""How Prometheus sees family L's true signals: scrapes, counters, resets, gaps, staleness.

Each exporter is scraped on its own interval and phase. A gauge's value at a grid time is its last
scrape at or before it (within Prometheus's 5-minute lookback); a counter is the running integral of
its rate, restarting from zero when its exporter restarts, and its value at a grid time is what
``rate()`` over a range of four scrape intervals gives (increases across a reset counted as
Prometheus counts them). dcgm-exporter refreshes its fields every 30 s by default, so a faster scrape
repeats the cached value.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator_dev.familyl.truth import Arr

LOOKBACK = 300.0


@dataclass(frozen=True)
class Scraper:
    """One exporter's scrapes over a window.

    Attributes:
        times: scrape times (after removing those while the exporter was down).
        restart: when the exporter restarted (counters reset to zero), or None.
        refresh: how often the exporter itself refreshes its values (0: at every scrape).
    """

    times: Arr
    restart: float | None
    refresh: float


def scraper(
    rng: np.random.Generator, start: float, end: float, interval: float, refresh: float, restarts: bool
) -> Scraper:
    first = start - 4 * interval - rng.uniform(0, interval)
    times = np.arange(first, end + 1e-6, interval) + rng.normal(0, 0.02 * interval, 1)[0]
    restart = None
    if restarts and rng.random() < 0.25:
        restart = float(rng.uniform(start, end))
        down = rng.uniform(interval, 4 * interval)
        times = times[(times < restart) | (times >= restart + down)]
    return Scraper(times, restart, refresh)


def _index(sc: Scraper, grid: Arr, step: float) -> npt.NDArray[np.intp]:
    """Which truth sample each scrape reads (the grid interval that contains the value's time)."""
    when = sc.times
    if sc.refresh > 0:
        when = np.floor(when / sc.refresh) * sc.refresh
    idx: npt.NDArray[np.intp] = np.clip(np.ceil((when - grid[0]) / step), 0, grid.size - 1).astype(np.intp)
    return idx


def gauges(sc: Scraper, truth: Arr, grid: Arr, step: float) -> Arr:
    """Gauges (signals x T truth) as a grid read sees them (signals x T)."""
    vals = truth[:, _index(sc, grid, step)]
    last = np.searchsorted(sc.times, grid, side="right") - 1
    ok = (last >= 0) & (grid - sc.times[np.maximum(last, 0)] <= LOOKBACK)
    out = vals[:, np.maximum(last, 0)]
    out[:, ~ok] = np.nan
    return out


def _integral(rates: Arr, grid: Arr, step: float, times: Arr) -> Arr:
    """The running integral of the rates (signals x T) at arbitrary times (signals x K)."""
    edges = np.concatenate(([grid[0] - step], grid))
    cum = np.concatenate((np.zeros((rates.shape[0], 1)), np.cumsum(rates * step, axis=1)), axis=1)
    pos = np.interp(np.clip(times, edges[0], edges[-1]), edges, np.arange(edges.size, dtype=np.float64))
    lo = np.clip(np.floor(pos).astype(np.intp), 0, edges.size - 2)
    w = pos - lo
    val = cum[:, lo] * (1 - w) + cum[:, lo + 1] * w
    # Times before the window extrapolate the first sample's rate backwards.
    return np.asarray(val + rates[:, :1] * np.minimum(times - edges[0], 0.0)[None, :], dtype=np.float64)


def counters(sc: Scraper, rates: Arr, grid: Arr, step: float, offsets: Arr) -> Arr:
    """The raw counter values at each scrape (signals x K): integrals of the rates, reset at a restart."""
    val = _integral(rates, grid, step, sc.times) + offsets[:, None]
    if sc.restart is not None:
        after = sc.times >= sc.restart
        at = _integral(rates, grid, step, np.array([sc.restart]))[:, 0] + offsets
        val[:, after] -= at[:, None]
    return val


def rate(sc: Scraper, raw: Arr, grid: Arr, interval: float, step: float) -> Arr:
    """``rate()`` over ``max(4 x interval, step)`` at each grid time, counting resets as Prometheus does."""
    drops = np.where(np.diff(raw, axis=1) < 0, raw[:, :-1], 0.0)
    adj = raw + np.concatenate((np.zeros((raw.shape[0], 1)), np.cumsum(drops, axis=1)), axis=1)
    rng_s = max(4.0 * interval, step)
    first = np.searchsorted(sc.times, grid - rng_s, side="right")
    last = np.searchsorted(sc.times, grid, side="right") - 1
    ok = last > first
    f, la = np.minimum(first, last.clip(0)), last.clip(0)
    dt = np.where(ok, sc.times[la] - sc.times[f], 1.0)
    out = (adj[:, la] - adj[:, f]) / dt
    out[:, ~ok] = np.nan
    return np.asarray(out, dtype=np.float64)
