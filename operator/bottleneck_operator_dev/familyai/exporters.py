"""Scrapes: exporters sample the latent grid, Prometheus stores the samples, the window reads them.

Gauges are read as the contract says (``last_over_time``), counters through ``rate()``, both with
the contract's :class:`~bottleneck_operator.contract.sampling.Sampler`, so a missed scrape, an
exporter restart or a counter reset does to these windows what it does to real ones. dcgm-exporter
serves what DCGM last collected (every ``collect`` seconds); profiling fields are averages over the
collection interval, ``GPU_UTIL`` a short sample of it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.sampling import Sampler, gauge_window, rate_range
from bottleneck_operator_dev.familyai.accounting import integrate

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Scrapes:
    """One exporter's scrapes of one pod (or its node): sample times and the interval they came at."""

    times: FloatArray
    interval: float


def scrape_times(
    rng: np.random.Generator, lo: float, hi: float, interval: float, lost: float, gap: tuple[float, float] | None
) -> FloatArray:
    """Scrape times between ``lo`` and ``hi``: a phase, a little jitter, lost scrapes and an optional outage."""
    t = lo + rng.uniform(0.0, interval) + interval * np.arange(int((hi - lo) / interval) + 1)
    t = t + rng.normal(0.0, 0.004 * interval, size=t.size)
    keep = rng.random(t.size) >= lost
    if gap is not None:
        keep &= (t < gap[0]) | (t > gap[1])
    out: FloatArray = np.round(t[keep & (t <= hi)], 3)
    return out


def interp_rows(grid: FloatArray, values: FloatArray, at: FloatArray) -> FloatArray:
    """Linear interpolation of each row of ``values`` (…, N) on ``grid`` at times ``at``."""
    idx = np.clip(np.searchsorted(grid, at) - 1, 0, grid.size - 2)
    w = np.clip((at - grid[idx]) / (grid[idx + 1] - grid[idx]), 0.0, 1.0)
    out: FloatArray = values[..., idx] * (1 - w) + values[..., idx + 1] * w
    return out


class Reader:
    """Reads one exporter's series of one pod into the window's timestamps."""

    def __init__(self, grid: FloatArray, scrapes: Scrapes, at: FloatArray, step: float) -> None:
        self.grid, self.times = grid, scrapes.times
        self.sampler = Sampler(
            scrapes.times,
            at,
            range_seconds=rate_range(step, scrapes.interval),
            window=gauge_window(step, scrapes.interval),
        )

    def gauge(self, values: FloatArray, *, counts: bool = False) -> FloatArray:
        """``last_over_time`` of a gauge whose true value is ``values`` on the latent grid.

        ``counts``: the gauge counts things (processes): a scrape sees the latest latent value, not
        a blend of two.
        """
        v = np.asarray(values, dtype=np.float64)
        if counts:
            idx = np.clip(np.searchsorted(self.grid, self.times, side="right") - 1, 0, self.grid.size - 1)
            return self.sampler.last(v[..., idx])
        return self.sampler.last(interp_rows(self.grid, v, self.times))

    def collected(self, values: FloatArray, collect: float, average: bool) -> FloatArray:
        """A DCGM field: the value DCGM collected last before each scrape (averaged over the interval)."""
        tc = np.floor(self.times / collect) * collect
        if average:
            c = integrate(values)
            sampled = (interp_rows(self.grid, c, tc) - interp_rows(self.grid, c, tc - collect)) / collect
        else:
            sampled = interp_rows(self.grid, values, tc)
        return self.sampler.last(sampled)

    def counter(self, rate: FloatArray, resets: tuple[float, ...] = (), start: float = 0.0) -> FloatArray:
        """``rate()`` of a counter growing at ``rate`` per second, restarting from 0 at each reset."""
        raw = integrate(np.maximum(np.asarray(rate, dtype=np.float64), 0.0))
        # a counter never goes down between resets (not even by a rounding error: rate() would
        # take that for a reset)
        scraped = np.maximum.accumulate(interp_rows(self.grid, raw, self.times), axis=-1)
        value = scraped + start
        if resets:
            at = np.sort(np.asarray(resets, dtype=np.float64))
            base = np.concatenate([np.full((*raw.shape[:-1], 1), -start), interp_rows(self.grid, raw, at)], axis=-1)
            since = np.searchsorted(at, self.times)  # resets before each scrape
            value = np.maximum(scraped - base[..., since], 0.0)
        return self.sampler.rate(value)
