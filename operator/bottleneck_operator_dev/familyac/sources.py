"""From a timeline's busy intervals to exporter samples: cumulative busy time, scrape times, counters.

A counter is the integral of what the events do (seconds busy, bytes moved) up to a scrape; the
measured part of the timeline is repeated to cover the window, each pod and GPU at its own phase.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.sampling import Sampler, gauge_window, rate_range

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Integrals:
    """Cumulative quantities of the measured part of a timeline, repeated with its period.

    Attributes:
        names: quantity names, one row each.
        knots: breakpoint times within one period, shape (n,).
        values: cumulative value of each quantity at each knot, shape (k, n).
        period: seconds of one period.
    """

    names: tuple[str, ...]
    knots: FloatArray
    values: FloatArray
    period: float

    def at(self, t: npt.ArrayLike) -> FloatArray:
        """Each quantity's cumulative value at times ``t`` (seconds, any sign), shape (k, len(t))."""
        tt = np.asarray(t, dtype=np.float64)
        turns = np.floor(tt / self.period)
        inner = tt - turns * self.period
        out = np.empty((len(self.names), tt.size))
        for row in range(len(self.names)):
            out[row] = turns * self.values[row, -1] + np.interp(inner, self.knots, self.values[row])
        return out

    def row(self, name: str) -> int:
        return self.names.index(name)


def integrate(start: FloatArray, end: FloatArray, weights: dict[str, FloatArray], t0: float, t1: float) -> Integrals:
    """Spread each event's weight evenly over its interval, clipped to [t0, t1], and integrate."""
    s = np.clip(start, t0, t1) - t0
    e = np.clip(end, t0, t1) - t0
    span = end - start
    keep = (e > s) & (span > 0)
    s, e = s[keep], e[keep]
    frac = (e - s) / span[keep]
    names = tuple(weights)
    rates = np.stack([weights[n][keep] * frac / (e - s) for n in names]) if names else np.zeros((0, s.size))
    times = np.concatenate([s, e, [0.0, t1 - t0]])
    order = np.argsort(times, kind="stable")
    deltas = np.concatenate([rates, -rates, np.zeros((len(names), 2))], axis=1)[:, order]
    knots = times[order]
    level = np.cumsum(deltas, axis=1)
    gaps = np.diff(knots)
    values = np.concatenate([np.zeros((len(names), 1)), np.cumsum(level[:, :-1] * gaps, axis=1)], axis=1)
    # Duplicate knots would make interp ambiguous: keep the last value at each time.
    last = np.append(knots[1:] != knots[:-1], True)
    return Integrals(names, knots[last], values[:, last], max(t1 - t0, 1e-9))


def scrape_times(
    rng: np.random.Generator, start: float, end: float, interval: float, step: float, missing: float
) -> FloatArray:
    """An exporter's scrape times, from early enough that the window's first rate has samples."""
    lead = rate_range(step, interval) + 2 * interval
    phase = rng.uniform(0, interval)
    t = np.arange(start - lead + phase, end + 1e-9, interval)
    t = t + rng.normal(0, 0.01 * interval, t.size)  # scrape jitter
    keep = rng.random(t.size) >= missing
    if missing > 0.02 and t.size > 40:  # one longer gap: an exporter or a target down for a while
        gap = int(rng.integers(5, t.size - 10))
        keep[gap : gap + int(rng.integers(2, 6))] = False
    return np.sort(t[keep])


def counter(
    rng: np.random.Generator, cumulative: FloatArray, reset_at: float | None, times: FloatArray, noise: float = 0.02
) -> FloatArray:
    """Counter samples: a base value plus positive, jittered increments, restarting once at ``reset_at``."""
    inc = np.diff(cumulative, prepend=cumulative[:1])
    inc = np.maximum(inc, 0.0) * rng.lognormal(0.0, noise, inc.size)
    values = rng.uniform(1e3, 1e6) * (np.mean(inc) + 1.0) + np.cumsum(inc)
    if reset_at is not None:
        after = times >= reset_at
        if after.any():
            first = int(np.argmax(after))
            values[after] = values[after] - values[first] + inc[first] * rng.uniform(0.0, 1.0)
    return values


@dataclass(frozen=True)
class Reader:
    """Reads one exporter's samples on the window's grid, as the data layer's queries would."""

    sampler: Sampler

    @classmethod
    def of(cls, times: FloatArray, grid: FloatArray, step: float, interval: float) -> Reader:
        return cls(Sampler(times, grid, range_seconds=rate_range(step, interval), window=gauge_window(step, interval)))

    def rate(self, values: FloatArray) -> FloatArray:
        return self.sampler.rate(values)

    def last(self, values: FloatArray) -> FloatArray:
        return self.sampler.last(values)

    def ratio(self, num: FloatArray, den: FloatArray) -> FloatArray:
        """The rate of one counter over the rate of another (NaN where the second does not move)."""
        a, b = self.rate(num), self.rate(den)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(b > 0, a / b, np.nan)
