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
        """The latest scraped value at each window timestamp."""
        scrapes = self.times()
        seen = values[self._sample_index(scrapes)]
        grid = self.start + np.arange(self.n) * self.step
        last = np.searchsorted(scrapes, grid + 1e-9, side="right") - 1
        return seen[np.clip(last, 0, len(scrapes) - 1)]

    def counter(self, rate: FloatArray, offset: float, resets: tuple[float, ...] = ()) -> FloatArray:
        """The raw counter at each scrape: ``offset`` plus the integral of ``rate``, from zero after a reset."""
        scrapes = self.times()
        edges = np.concatenate(([scrapes[0] - self.step], self.start + np.arange(self.n) * self.step))
        edges[1] = max(edges[1], edges[0])
        # Integral of the piecewise-constant rate up to each scrape (rate before the window = sample 0's).
        pre = max(self.start - scrapes[0], 0.0) * rate[0]
        cum_edges = np.concatenate(([0.0, pre], pre + np.cumsum(rate[1:] * self.step)))
        knots = np.concatenate(([scrapes[0]], self.start + np.arange(self.n) * self.step))
        cum = np.interp(scrapes, knots, cum_edges[: len(knots)])
        raw = offset + cum
        for at in sorted(resets):
            after = scrapes >= at
            if after.any():
                base = float(np.interp(at, knots, cum_edges[: len(knots)]))
                raw[after] = cum[after] - base
        return raw

    def rate(self, raw: FloatArray) -> FloatArray:
        """Prometheus-style rate() of scraped counter values at each window timestamp (NaN: too few scrapes)."""
        scrapes = self.times()
        diff = np.diff(raw)
        inc = np.where(diff < 0, raw[1:], diff)
        total = np.concatenate(([0.0], np.cumsum(inc)))
        grid = self.start + np.arange(self.n) * self.step
        hi = np.searchsorted(scrapes, grid + 1e-9, side="right") - 1
        lo = np.searchsorted(scrapes, grid - self.range_s + 1e-9, side="right")
        ok = (hi - lo) >= 1
        hi_c, lo_c = np.clip(hi, 0, len(scrapes) - 1), np.clip(lo, 0, len(scrapes) - 1)
        span = np.where(ok, scrapes[hi_c] - scrapes[lo_c], 1.0)
        return np.where(ok, (total[hi_c] - total[lo_c]) / span, np.nan)
