"""From phase values to a window: scrapes, counters, resets and the contract's rate()/last reads.

Each exporter is scraped at its own interval, with jitter and the odd missed scrape; dcgm-exporter
refreshes its fields once per collect interval, so a faster scrape repeats a value. Counters are
cumulative, may reset (an exporter or collector restart), and are read through the contract's
:class:`~bottleneck_operator.contract.sampling.Sampler`, exactly as the data layer's PromQL would.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.sampling import Sampler, gauge_window, rate_range
from bottleneck_operator.contract.signals import SIGNALS, Kind

FloatArray = npt.NDArray[np.float64]
# Settings and counts an exporter reads exactly: no measurement noise on them.
EXACT = frozenset(
    {"node_cpus", "cpu_limit_cores", "mem_limit_bytes", "power_limit_w", "xid_code", "clock_slowdown_frac"}
)
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Schedule:
    """Phases over time: ``phase[k]`` holds from ``bounds[k]`` to ``bounds[k + 1]``."""

    bounds: FloatArray
    phase: IntArray

    def at(self, times: FloatArray) -> IntArray:
        """The phase index at each time (the first phase before the start, the last after the end)."""
        k = np.searchsorted(self.bounds, times, side="right") - 1
        return self.phase[np.clip(k, 0, self.phase.size - 1)]


def scrape_times(rng: np.random.Generator, interval: float, t0: float, t1: float, drop: float) -> FloatArray:
    """Scrape times from ``t0`` to ``t1``: a random phase, +-2 % jitter, a share ``drop`` missed."""
    base = t0 + rng.uniform(0, interval) + interval * np.arange(int((t1 - t0) / interval) + 1)
    base = base[base <= t1]
    jitter = rng.uniform(-0.02, 0.02, base.size) * interval
    kept = rng.random(base.size) >= drop
    times = np.round((base + jitter)[kept], 3)
    return np.asarray(times, dtype=np.float64)


def counter_series(increments: FloatArray, offset: float, resets: Sequence[int]) -> FloatArray:
    """Cumulative counter values from per-interval increments (shape (..., n)).

    The counter starts at ``offset`` and restarts from zero at each index of ``resets``: its value
    there is that interval's increment alone (the part counted since the restart).
    """
    out = np.cumsum(increments, axis=-1) + offset
    for r in sorted(resets):
        if 0 < r < increments.shape[-1]:
            out[..., r:] = np.cumsum(increments[..., r:], axis=-1)
    return np.asarray(out, dtype=np.float64)


@dataclass(frozen=True)
class Scrape:
    """How one exporter of one pod is scraped."""

    interval: float
    hold: float  # dcgm-exporter's collect interval (0: values fresh at every scrape)
    drop: float
    resets: tuple[float, ...]  # where counters restart, as shares of the scrapes (0..1)
    noise: float


def sample_exporter(
    rng: np.random.Generator,
    names: Sequence[str],
    values: FloatArray,
    schedule: Schedule,
    at: FloatArray,
    scrape: Scrape,
) -> dict[str, FloatArray]:
    """The window signals of one exporter of one pod.

    Args:
        rng: the Job's generator.
        names: signal names, all of one exporter.
        values: shape (phases, len(names)): each signal's value (gauge) or growth rate (counter) per phase.
        schedule: the Job's phases.
        at: the window's timestamps.
        scrape: how this exporter is scraped.
    """
    step = float(at[1] - at[0]) if at.size > 1 else 30.0
    lookback = rate_range(step, scrape.interval) + scrape.interval
    times = scrape_times(rng, scrape.interval, float(at[0]) - lookback, float(at[-1]), scrape.drop)
    if times.size < 2:
        return {n: np.full(at.size, np.nan) for n in names}
    truth = np.floor(times / scrape.hold) * scrape.hold if scrape.hold > 0 else times
    idx = schedule.at(truth)
    noise = rng.lognormal(0.0, scrape.noise, (len(names), times.size))
    if scrape.hold > 0:  # a held value repeats its noise too
        _, first = np.unique(truth, return_inverse=True)
        noise = noise[:, first]
    exact = np.array([n in EXACT for n in names])
    noise[exact] = 1.0
    raw = values[idx].T * noise
    kinds = np.array([SIGNALS[n].kind is Kind.COUNTER for n in names])
    sampler = Sampler(
        times, at, range_seconds=rate_range(step, scrape.interval), window=gauge_window(step, scrape.interval)
    )
    out: dict[str, FloatArray] = {}
    rates: FloatArray = np.empty((0, at.size))
    gauges = sampler.last(np.where(np.isfinite(raw), raw, np.nan))
    if kinds.any():
        gaps = np.diff(times, prepend=times[0] - scrape.interval)
        inc = np.nan_to_num(raw[kinds]) * gaps
        offsets = float(rng.uniform(1e3, 1e5))
        at_resets = [int(f * times.size) for f in scrape.resets]
        rates = sampler.rate(counter_series(inc, offsets, at_resets))
    ci = 0
    for i, name in enumerate(names):
        if kinds[i]:
            out[name] = rates[ci]
            ci += 1
        else:
            out[name] = gauges[i]
    return {n: _clip(n, v) for n, v in out.items()}


def _clip(name: str, v: FloatArray) -> FloatArray:
    """Ratios within [0, 1] and nothing negative, as the exporters' values are."""
    hi = 1.0 if SIGNALS[name].unit == "ratio" else np.inf
    return np.asarray(np.clip(v, 0.0, hi), dtype=np.float64)
