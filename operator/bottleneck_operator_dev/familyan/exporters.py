"""The exporters' series, sampled as Prometheus would, and read into the contract's signals.

Activity lives on a 5-second grid (every drawn scrape and collect interval is a multiple of it).
Each exporter scrapes at its own interval and phase, misses an occasional scrape, and publishes
counters (cumulative, restarting from zero when the sidecar restarts) or gauges (dcgm-exporter's
repeat the value of its last collect). Signals are then read at the window's timestamps with the
contract's own ``Sampler``: ``rate()`` over ``rate_range`` for counters, ``last_over_time`` over
``gauge_window`` for gauges.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.sampling import Sampler, gauge_window, rate_range
from bottleneck_operator.contract.signals import Family

FloatArray = npt.NDArray[np.float64]
GRID = 5.0  # seconds: every drawn scrape and collect interval is a multiple of it


@dataclass
class Scrapes:
    """One exporter's scrapes of a Job's pods.

    Attributes:
        exporter: short name ("dcgm", "cadvisor", "ksm", "node", "sidecar").
        idx: grid indices of the scrapes that happened.
        times: their times, seconds.
        counters: metric -> values (pods, scrapes), cumulative.
        gauges: metric -> values (pods, scrapes).
        resets: scrape positions where this exporter's counters restarted from zero.
    """

    exporter: str
    idx: npt.NDArray[np.int64]
    times: FloatArray
    counters: dict[str, FloatArray] = field(default_factory=dict)
    gauges: dict[str, FloatArray] = field(default_factory=dict)
    resets: tuple[int, ...] = ()


def scrape_indices(
    rng: np.random.Generator, n_grid: int, interval: float, gap: tuple[int, int] | None = None
) -> npt.NDArray[np.int64]:
    """Grid indices an exporter is scraped at: its interval, a random phase, ~1 % missed, maybe a gap."""
    every = max(1, round(interval / GRID))
    idx = np.arange(int(rng.integers(0, every)), n_grid, every, dtype=np.int64)
    keep = rng.random(idx.size) > 0.01
    if gap is not None:
        keep &= (idx < gap[0]) | (idx >= gap[1])
    keep[-1] = True  # the latest scrape is there: the window's end is read
    return idx[keep]


def counter(rate: FloatArray, start: FloatArray) -> FloatArray:
    """A cumulative counter on the grid from per-second rates held over each grid cell."""
    steps = np.clip(rate, 0.0, None) * GRID
    run = np.concatenate([np.zeros((rate.shape[0], 1)), np.cumsum(steps[:, :-1], axis=1)], axis=1)
    return np.asarray(start[:, None] + run, dtype=np.float64)


def starts(rng: np.random.Generator, pods: int, lo: float, hi: float) -> FloatArray:
    """Counters' values at the grid's start: whatever they had counted before the window."""
    return np.asarray(rng.uniform(lo, hi, pods), dtype=np.float64)


def with_reset(values: FloatArray, at: int | None) -> FloatArray:
    """The counter as a restarted process publishes it: from zero again at grid index ``at``."""
    if at is None:
        return values
    out = values.copy()
    out[:, at:] = values[:, at:] - values[:, at : at + 1]
    return out


def held(values: FloatArray, idx: npt.NDArray[np.int64], collect: float, phase: int) -> FloatArray:
    """dcgm-exporter's gauges: the value at its last collect tick at or before each scrape."""
    every = max(1, round(collect / GRID))
    ticks = np.maximum(((idx - phase) // every) * every + phase, 0)
    return values[:, ticks]


@dataclass(frozen=True)
class Reader:
    """Reads one exporter's scrapes at the window's timestamps, as the data layer's queries do."""

    sampler: Sampler
    scrapes: Scrapes

    @classmethod
    def of(cls, scrapes: Scrapes, at: FloatArray, step: float, interval: float) -> Reader:
        sampler = Sampler(
            scrapes.times,
            at,
            range_seconds=rate_range(step, interval),
            window=gauge_window(step, interval),
        )
        return cls(sampler, scrapes)

    def rate(self, metric: str) -> FloatArray:
        return self.sampler.rate(self.scrapes.counters[metric])

    def last(self, metric: str) -> FloatArray:
        return self.sampler.last(self.scrapes.gauges[metric])

    def ratio(self, num: str, den: str) -> FloatArray:
        """rate(num) / rate(den): NaN where the denominator did not move."""
        top, bottom = self.rate(num), self.rate(den)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(bottom > 0, top / bottom, np.nan)


def present(name: str, family: Family, missing: frozenset[Family]) -> bool:
    """A signal is exported when its family is, and its exporter's first family is."""
    return family not in missing and family.exporter not in missing and bool(name)
