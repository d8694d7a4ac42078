"""From levels to a window: exporter scrapes, counters with resets, and Prometheus's own sampling.

Each exporter is scraped on its own interval and phase, misses some scrapes and may be away for a
while; dcgm-exporter publishes what it collected last (every collect interval), so a faster scrape
repeats values. Counters accumulate from a value they already had (or from zero for a container
started in the window) and restart from zero where a container restarts. The window is then read
the way the data layer reads Prometheus: ``rate()`` over ``rate_range`` for counters,
``last_over_time`` over ``gauge_window`` for gauges (contract.sampling).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.sampling import Sampler, gauge_window, rate_range

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Schedule:
    """How one exporter's series of one pod were scraped.

    Attributes:
        interval: seconds between scrapes.
        offset: phase of the scrapes, seconds.
        miss: probability of a missed scrape.
        outage: (from, to) seconds relative to the window start with no scrapes, or None.
        collect: seconds between the exporter's own collections (dcgm-exporter; else = interval).
        reset_at: seconds relative to the window start where its counters restart from zero, or None.
        first: seconds relative to the window start of the first possible scrape.
    """

    interval: float
    offset: float
    miss: float
    outage: tuple[float, float] | None
    collect: float
    reset_at: float | None
    first: float


@dataclass(frozen=True)
class Timeline:
    """Which level row applies when, relative to the window start.

    Attributes:
        seg_edges: segment boundaries (row i for segment i).
        startup_end: end of the loading phase (row ``n_seg + 1`` before it), or None.
        pauses: (from, to) checkpoint pauses (row ``n_seg``).
    """

    seg_edges: FloatArray
    startup_end: float | None
    pauses: tuple[tuple[float, float], ...]

    def rows(self, t: FloatArray) -> IntArray:
        n_seg = self.seg_edges.size - 1
        rows = np.clip(np.searchsorted(self.seg_edges, t, side="right") - 1, 0, n_seg - 1).astype(np.int64)
        for a, b in self.pauses:
            rows[(t >= a) & (t < b)] = n_seg
        if self.startup_end is not None:
            rows[t < self.startup_end] = n_seg + 1
        return rows


def scrape_times(rng: np.random.Generator, sch: Schedule, end: float) -> FloatArray:
    """Scrape times (relative to the window start) that produced a sample."""
    k0 = int(np.ceil((sch.first - sch.offset) / sch.interval))
    k1 = int(np.floor((end - sch.offset) / sch.interval))
    t = sch.offset + sch.interval * np.arange(k0, k1 + 1, dtype=np.float64)
    t = t + rng.normal(0.0, 0.01 * sch.interval, t.size)
    keep = rng.random(t.size) >= sch.miss
    if sch.outage is not None:
        keep &= ~((t >= sch.outage[0]) & (t < sch.outage[1]))
    t = np.round(t[keep], 3)
    return t[np.concatenate([[True], np.diff(t) > 0.001])] if t.size else t


def gauge_samples(
    rng: np.random.Generator, levels: FloatArray, rows: IntArray, sd: float, collect_ids: IntArray | None = None
) -> FloatArray:
    """Gauge samples: the level of each sample's row, with noise drawn per collection.

    Args:
        levels: (..., rows) level per row.
        rows: row of each sample.
        sd: relative noise.
        collect_ids: samples sharing an id repeat one collected value (dcgm-exporter's cache).
    """
    base = levels[..., rows]
    if sd <= 0:
        return np.asarray(base, dtype=np.float64)
    if collect_ids is None:
        noise = rng.lognormal(0.0, sd, base.shape)
    else:
        uniq, inverse = np.unique(collect_ids, return_inverse=True)
        noise = rng.lognormal(0.0, sd, (*base.shape[:-1], uniq.size))[..., inverse]
    return np.asarray(base * noise, dtype=np.float64)


def counter_samples(
    rng: np.random.Generator,
    rates: FloatArray,
    times: FloatArray,
    timeline: Timeline,
    sd: float,
    start_value: FloatArray,
    reset_at: float | None,
    integer: bool = False,
) -> FloatArray:
    """Counter values at the sample times: per-interval increments of the rate at the midpoint.

    Args:
        rates: (k, rows) per-second rate of each of k counters per row.
        times: sample times.
        timeline: rows in time.
        sd: relative noise of each increment.
        start_value: (k,) each counter's value at the first sample.
        reset_at: restart time, or None.
        integer: counts of events (Poisson increments).
    """
    k = rates.shape[0]
    if times.size == 0:
        return np.zeros((k, 0))
    mid = np.concatenate([times[:1], (times[1:] + times[:-1]) / 2])
    dt = np.concatenate([[0.0], np.diff(times)])
    mean = rates[:, timeline.rows(mid)] * dt
    inc = rng.poisson(mean).astype(np.float64) if integer else mean * rng.lognormal(0.0, sd, mean.shape)
    values = start_value[:, None] + np.cumsum(inc, axis=1)
    if reset_at is not None:
        after = times >= reset_at
        if after.any():
            first = int(np.argmax(after))
            values[:, first:] -= values[:, first : first + 1] - inc[:, first : first + 1] * 0.5
    return np.asarray(values, dtype=np.float64)


def read_window(
    times_abs: FloatArray,
    at: FloatArray,
    step: float,
    interval: float,
    gauges: Mapping[str, FloatArray],
    counters: Mapping[str, FloatArray],
) -> dict[str, FloatArray]:
    """The window's values: ``last_over_time`` of the gauges and ``rate()`` of the counters.

    Args:
        times_abs: sample times (unix seconds).
        at: the window's timestamps.
        step: the window's step.
        interval: the exporter's scrape interval (the data layer's estimate).
        gauges, counters: name -> (..., n) samples.
    """
    sampler = Sampler(times_abs, at, range_seconds=rate_range(step, interval), window=gauge_window(step, interval))
    out = {name: sampler.last(v) for name, v in gauges.items()}
    out.update({name: sampler.rate(v) for name, v in counters.items()})
    return out
