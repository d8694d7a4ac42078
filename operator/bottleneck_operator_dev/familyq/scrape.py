"""What a Prometheus scrape makes of a true series: gauges held between scrapes, counters read by rate.

The true series are piecewise constant on the window's grid: value ``i`` holds over
``(t[i] - step, t[i]]``. Exporters are scraped on their own interval and phase, not on the grid;
a gauge reads as its latest scraped value, a counter as Prometheus' ``rate()`` over a range of at
least two scrapes, with a counter reset (a restarted container) read the way Prometheus reads it:
a drop means the counter started again from zero.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]


@dataclass(frozen=True)
class Scraper:
    """One exporter's scrapes against one window's grid.

    Attributes:
        start: the window's first timestamp.
        step: seconds between window timestamps.
        n: number of window timestamps.
        interval: seconds between this exporter's scrapes.
        phase: offset of the first scrape, seconds in [0, interval).
    """

    start: float
    step: float
    n: int
    interval: float
    phase: float

    @property
    def range_s(self) -> float:
        """The rate() range: at least two scrapes and at least one grid step."""
        return max(self.step, 2.0 * self.interval)

    def times(self) -> FloatArray:
        """Scrape times from one range before the window to its last timestamp."""
        first = self.start - self.range_s - self.interval + self.phase
        end = self.start + (self.n - 1) * self.step
        return np.arange(first, end + 1e-9, self.interval)

    def _sample_index(self, at: FloatArray) -> IntArray:
        """The grid sample whose interval holds each time (clamped to the window)."""
        return np.clip(np.ceil((at - self.start) / self.step - 1e-9), 0, self.n - 1).astype(np.intp)

    def gauge(self, values: FloatArray) -> FloatArray:
        """The latest scraped value at each window timestamp; ``values`` is (n,) or (k, n)."""
        scrapes = self.times()
        grid = self.start + np.arange(self.n) * self.step
        last = np.clip(np.searchsorted(scrapes, grid + 1e-9, side="right") - 1, 0, len(scrapes) - 1)
        return values[..., self._sample_index(scrapes)[last]]

    def counter(self, rate: FloatArray, offset: FloatArray | float, resets: tuple[float, ...] = ()) -> FloatArray:
        """Raw counters at each scrape: ``offset`` plus the integral of ``rate``, from zero after a reset.

        Args:
            rate: true per-second rates, (n,) or (k, n), piecewise constant on the grid.
            offset: each counter's value at the first scrape.
            resets: times the counters restarted from zero.
        """
        rows = np.atleast_2d(rate)
        scrapes = self.times()
        knots = np.concatenate(([scrapes[0]], self.start + np.arange(self.n) * self.step))
        # Integral up to each knot; the rate before the window is sample 0's.
        steps = np.concatenate(((knots[1] - knots[0]) * rows[:, :1], rows[:, 1:] * self.step), axis=1)
        cum_knots = np.concatenate((np.zeros((rows.shape[0], 1)), np.cumsum(steps, axis=1)), axis=1)
        # Rounding in the interpolation must not make a flat counter step back (that would read as a reset).
        cum = np.maximum.accumulate(self._interp(scrapes, knots, cum_knots), axis=1)
        raw = np.asarray(offset, dtype=np.float64).reshape(-1, 1) + cum
        for at in sorted(resets):
            after = scrapes >= at
            if after.any():
                base = self._interp(np.array([at]), knots, cum_knots)
                raw[:, after] = cum[:, after] - base
        return raw if np.ndim(rate) == 2 else raw[0]

    @staticmethod
    def _interp(at: FloatArray, knots: FloatArray, values: FloatArray) -> FloatArray:
        """Row-wise linear interpolation of ``values`` (k, len(knots)) at times ``at``."""
        hi = np.clip(np.searchsorted(knots, at, side="right"), 1, len(knots) - 1)
        lo = hi - 1
        span = np.maximum(knots[hi] - knots[lo], 1e-12)
        w = np.clip((at - knots[lo]) / span, 0.0, 1.0)
        out: FloatArray = values[:, lo] * (1.0 - w) + values[:, hi] * w
        return out

    def rate(self, raw: FloatArray) -> FloatArray:
        """Prometheus-style rate() of scraped counters at each window timestamp (NaN: too few scrapes)."""
        scrapes = self.times()
        diff = np.diff(raw, axis=-1)
        inc = np.where(diff < 0, raw[..., 1:], diff)  # a drop is a restart from zero, as Prometheus reads it
        total = np.concatenate((np.zeros((*raw.shape[:-1], 1)), np.cumsum(inc, axis=-1)), axis=-1)
        grid = self.start + np.arange(self.n) * self.step
        hi = np.searchsorted(scrapes, grid + 1e-9, side="right") - 1
        lo = np.searchsorted(scrapes, grid - self.range_s + 1e-9, side="right")
        ok = (hi - lo) >= 1
        hi_c, lo_c = np.clip(hi, 0, len(scrapes) - 1), np.clip(lo, 0, len(scrapes) - 1)
        span = np.where(ok, scrapes[hi_c] - scrapes[lo_c], 1.0)
        out: FloatArray = np.where(ok, (total[..., hi_c] - total[..., lo_c]) / span, np.nan)
        return out
