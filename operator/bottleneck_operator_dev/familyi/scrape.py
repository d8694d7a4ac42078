"""How an exporter's samples become a window's values: scrapes, counters, gauges and ``rate()``.

Each exporter is scraped on its own interval and phase. A failed scrape (an exporter restarted
mid-window) leaves a gap, and Prometheus marks the series stale, so a gauge read in the gap is
missing. Counters are cumulative from an arbitrary offset, restart from zero after a reset (a
container restarted, a port counter cleared) and are read the way ``rate()`` reads them: over a
range of several scrapes, a decrease taken as a reset. Nothing is faked at the window level: the
window's counter signals are always computed from the counter samples built here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

LOOKBACK = 300.0  # Prometheus' default lookback for instant reads


@dataclass(frozen=True)
class Exporter:
    """One exporter's scrape schedule over the window.

    Attributes:
        interval: seconds between scrapes.
        times: scrape times, from before the window (for the first ``rate()``) to its end.
        up: the scrape succeeded.
        resets: counters restarted just before this scrape.
    """

    interval: float
    times: FloatArray
    up: BoolArray
    resets: BoolArray


def schedule(
    rng: np.random.Generator, interval: float, start: float, end: float, *, restart: bool, reset_at: float | None
) -> Exporter:
    """A scrape schedule with a random phase, an optional outage and an optional counter reset.

    Args:
        rng: the job's generator.
        interval: the scrape interval (s).
        start, end: the window.
        restart: the exporter is down for 1-4 scrapes somewhere inside the window.
        reset_at: counters restart at the first scrape after this time, None for no reset.
    """
    lead = 5.0 * interval + 600.0
    phase = float(rng.uniform(0.0, interval))
    first = start - lead + phase
    times = first + interval * np.arange(int((end - first) // interval) + 1, dtype=np.float64)
    up = np.ones(times.size, dtype=bool)
    if restart:
        inside = np.flatnonzero(times >= start)
        if inside.size > 8:
            at = int(rng.integers(inside[2], inside[-4]))
            up[at : at + int(rng.integers(1, 5))] = False
    resets = np.zeros(times.size, dtype=bool)
    if reset_at is not None:
        after = np.flatnonzero(times > reset_at)
        if after.size:
            resets[after[0]] = True
    return Exporter(interval, times, up, resets)


def counters(rates: FloatArray, ex: Exporter, rng: np.random.Generator) -> FloatArray:
    """Cumulative counters (rows) from per-scrape-interval mean rates, with offsets and resets.

    A reset restarts the count at what accrued since it; the rows stay non-decreasing between resets.
    """
    inc = np.maximum(rates, 0.0) * ex.interval
    total = np.cumsum(inc, axis=-1)
    offset = rng.uniform(0.0, 1e3, size=(*rates.shape[:-1], 1)) * np.maximum(inc.mean(axis=-1, keepdims=True), 1.0)
    if not ex.resets.any():
        return np.asarray(total + offset, dtype=np.float64)
    segment = np.cumsum(ex.resets)
    starts = np.flatnonzero(ex.resets)
    base = np.concatenate([np.zeros((*rates.shape[:-1], 1)), total[..., starts - 1]], axis=-1)
    out = total - base[..., segment]
    return np.asarray(np.where(segment == 0, out + offset, out), dtype=np.float64)


def _last_up(ex: Exporter, grid: FloatArray) -> tuple[npt.NDArray[np.intp], BoolArray]:
    """Index of the last scrape attempt at or before each grid time, and whether it succeeded."""
    idx = np.searchsorted(ex.times, grid, side="right") - 1
    ok = (idx >= 0) & ex.up[np.clip(idx, 0, None)]
    return idx, ok


def gauge(values: FloatArray, ex: Exporter, grid: FloatArray) -> FloatArray:
    """A gauge read at each grid time: the latest sample, missing while the target is down (stale)."""
    idx, ok = _last_up(ex, grid)
    ok &= grid - ex.times[np.clip(idx, 0, None)] <= LOOKBACK
    out = values[..., np.clip(idx, 0, None)]
    return np.where(ok, out, np.nan)


def rate(counter: FloatArray, ex: Exporter, grid: FloatArray, window: float) -> FloatArray:
    """``rate(counter[window])`` at each grid time, a decrease taken as a reset; NaN under two samples."""
    up = np.flatnonzero(ex.up)
    t = ex.times[up]
    v = counter[..., up]
    d = np.diff(v, axis=-1)
    d = np.where(d < 0, v[..., 1:], d)
    c = np.concatenate([np.zeros((*v.shape[:-1], 1)), np.cumsum(d, axis=-1)], axis=-1)
    last = np.searchsorted(t, grid, side="right") - 1
    first = np.searchsorted(t, grid - window, side="right")
    ok = (last - first >= 1) & (last >= 0)
    lo, hi = np.clip(first, 0, t.size - 1), np.clip(last, 0, t.size - 1)
    span = np.where(ok, t[hi] - t[lo], 1.0)
    out = (c[..., hi] - c[..., lo]) / span
    return np.where(ok, out, np.nan)


def mean_activity(times: FloatArray, interval: float, pauses: FloatArray) -> FloatArray:
    """Share of each interval ending at ``times`` that the job was not paused (pauses: rows of [a, b))."""
    if pauses.size == 0:
        return np.ones_like(times)
    a, b = pauses[:, :1], pauses[:, 1:]
    overlap = np.clip(np.minimum(times, b) - np.maximum(times - interval, a), 0.0, None).sum(axis=0)
    return np.asarray(np.clip(1.0 - overlap / interval, 0.0, 1.0), dtype=np.float64)


def instant_activity(times: FloatArray, pauses: FloatArray) -> FloatArray:
    """1 where the job runs at each instant, 0 inside a pause."""
    if pauses.size == 0:
        return np.ones_like(times)
    inside = (times >= pauses[:, :1]) & (times < pauses[:, 1:])
    return np.asarray(1.0 - inside.any(axis=0), dtype=np.float64)
