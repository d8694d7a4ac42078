"""Exporters' samples of the job's truth, and Prometheus's reading of them onto the window's grid.

Each exporter is scraped on its own interval and phase, misses a scrape now and then, and may be
down for a while (restarted); dcgm-exporter caches its readings between collections (30 s by
default), so a faster scrape repeats them. Counters are built as counters: the running integral of
a rate since an arbitrary earlier origin, restarting from zero when the process that owns them
restarts. The window then holds what the data layer would ask Prometheus for (the contract's
:mod:`~bottleneck_operator.contract.sampling`): ``rate()`` over ``rate_range`` for counters and the
last sample within ``gauge_window`` for gauges.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.sampling import Sampler, gauge_window, rate_range

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Grid:
    """The job's truth grid: ``t0 + dt * k`` for k in 0..size-1 (seconds)."""

    t0: float
    dt: float
    size: int

    def index(self, times: FloatArray) -> npt.NDArray[np.int64]:
        """The grid cell each time falls in (clipped to the grid)."""
        return np.clip(np.floor((times - self.t0) / self.dt), 0, self.size - 1).astype(np.int64)


class Scrapes:
    """One exporter's scrape times for a job and the readings its series take at them.

    Args:
        grid: the truth grid.
        times: scrape times, strictly increasing, within the grid.
        collect: seconds between the exporter's own readings (dcgm-exporter's ``-c``); 0: each scrape reads.
        at: the window's timestamps.
        step: the window's step; si: this exporter's scrape interval.
    """

    def __init__(self, grid: Grid, times: FloatArray, collect: float, at: FloatArray, step: float, si: float) -> None:
        self.grid, self.times = grid, times
        read_at = np.floor(times / collect) * collect if collect > 0 else times
        self._gauge_idx = grid.index(read_at)
        pos = (times - grid.t0) / grid.dt
        self._lo = np.clip(np.floor(pos).astype(np.int64), 0, grid.size - 1)
        self._frac = np.clip(pos - self._lo, 0.0, 1.0)
        self.sampler = Sampler(times, at, range_seconds=rate_range(step, si), window=gauge_window(step, si))

    def gauge(self, truth: FloatArray) -> FloatArray:
        """A gauge's window values from its truth (..., grid)."""
        return self.sampler.last(truth[..., self._gauge_idx])

    def counter_values(
        self, rate: FloatArray, origin: FloatArray, resets: dict[int, float] | None = None
    ) -> FloatArray:
        """Counter readings at the scrape times from a per-second rate (pods, grid).

        Args:
            rate: per-second increase, shape (pods, grid), >= 0.
            origin: each pod's counter value at the grid's start (uptime before the window).
            resets: pod index -> time its counter restarted from zero.
        """
        cum = np.concatenate(
            [np.zeros((rate.shape[0], 1)), np.cumsum(np.maximum(rate, 0.0) * self.grid.dt, axis=1)], axis=1
        )
        values = cum[:, self._lo] + (cum[:, self._lo + 1] - cum[:, self._lo]) * self._frac + origin[:, None]
        for pod, when in (resets or {}).items():
            # the owner restarted at ``when``: from there its counter counts from zero again
            after = self.times >= when
            k = min(max(int(np.floor((when - self.grid.t0) / self.grid.dt)), 0), self.grid.size - 1)
            at_restart = cum[pod, k] + origin[pod]
            values[pod, after] -= at_restart
        return np.asarray(np.maximum(values, 0.0), dtype=np.float64)

    def rate(self, counter: FloatArray) -> FloatArray:
        """``rate()`` of counter readings onto the window."""
        return self.sampler.rate(counter)


def scrape_times(
    rng: np.random.Generator,
    grid: Grid,
    si: float,
    first: float,
    end: float,
    miss: float,
    down: tuple[float, float] | None,
) -> FloatArray:
    """An exporter's scrape times: a phase, the interval, a little jitter, misses and a downtime."""
    times = first + rng.uniform(0.0, si) + si * np.arange(int((end - first) // si) + 1)
    times = times[(times <= end) & (times >= grid.t0)]
    times = times + rng.uniform(-0.004, 0.004, times.size)
    keep = rng.random(times.size) >= miss
    if down is not None:
        keep &= ~((times >= down[0]) & (times < down[1]))
    return np.asarray(times[keep], dtype=np.float64)
