"""How signals are sampled from exporter series: part of the window contract.

A :class:`~bottleneck_operator.contract.window.JobWindow` holds, at each step timestamp ``T``:

- for a counter, PromQL's ``rate(counter[R])`` with ``R = rate_range(step, si)``;
- for a gauge, ``last_over_time(gauge[W])`` with ``W = gauge_window(step, si)``,

``si`` being the exporter's scrape interval (30 s when unknown). The data layer asks Prometheus for
exactly these; the simulator computes them itself with :func:`counter_rate` and
:func:`last_sample`, so a model trained on simulated windows sees, at serving time, numbers made
the same way.

Everything works in whole milliseconds, as Prometheus does: sample times and evaluation times are
rounded to the millisecond, durations rounded up (:func:`range_milliseconds`, the form the data
layer writes them in). Two details changed between Prometheus majors and are selectable:

- which samples a range holds: ``[T - R, T]`` in 2.x, ``(T - R, T]`` from 3.0 on;
- in ``rate()``, whether the "never extrapolate a counter below zero" cap is applied before (2.x)
  or after (3.x) the choice between extrapolating to the range start and by half an interval.

The default, 2, is the version the project's tests and demo run (Debian's 2.42); the two only
differ when a sample sits exactly on ``T - R`` or a counter starts inside the range.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
import numpy.typing as npt

__all__ = [
    "DEFAULT_SCRAPE_INTERVAL",
    "Sampler",
    "counter_rate",
    "gauge_window",
    "last_sample",
    "range_milliseconds",
    "rate_range",
]

FloatArray = npt.NDArray[np.float64]
_IntArray = npt.NDArray[np.int64]

DEFAULT_SCRAPE_INTERVAL = 30.0  # kube-prometheus-stack's default ServiceMonitor interval
# rate() extrapolates to a range boundary only when the gap to it is under 1.1 average sample
# intervals (Prometheus's allowance for scrape jitter); a larger gap means the series started or
# stopped inside the range, and it is extended by half an interval instead.
_EXTRAPOLATION_THRESHOLD = 1.1


def _interval(scrape_interval: float | None) -> float:
    return scrape_interval if scrape_interval and scrape_interval > 0 else DEFAULT_SCRAPE_INTERVAL


def rate_range(step: float, scrape_interval: float | None) -> float:
    """Seconds of the rate() range for a step and an estimated scrape interval.

    ``max(step + si, 4 x si)`` (the rule Grafana's ``$__rate_interval`` follows): at least four
    samples per range survive a missed scrape and a counter reset, and no sample between two
    evaluation steps is left out.

    Args:
        step: the query step, seconds.
        scrape_interval: estimated seconds between samples, None (or <= 0) when unknown.

    Returns:
        The range in seconds; unknown intervals count as 30 s.
    """
    si = _interval(scrape_interval)
    return max(step + si, 4 * si)


def gauge_window(step: float, scrape_interval: float | None) -> float:
    """Seconds a gauge sample stays valid: one step or one scrape interval, plus 10 % for jitter.

    A gauge read this way (``last_over_time``) leaves a missed scrape as a gap instead of bridging
    it with the server's lookback delta (5 minutes by default).

    Args:
        step: the query step, seconds.
        scrape_interval: estimated seconds between samples, None (or <= 0) when unknown (30 s assumed).

    Returns:
        ``1.1 * max(step, si)``.
    """
    return 1.1 * max(step, _interval(scrape_interval))


def range_milliseconds(seconds: float) -> int:
    """A duration as PromQL receives it from the data layer: whole milliseconds, rounded up, >= 1.

    Args:
        seconds: the duration.

    Returns:
        Milliseconds.
    """
    return max(1, math.ceil(seconds * 1000))


def _ms(seconds: npt.ArrayLike) -> _IntArray:
    return np.asarray(np.rint(np.asarray(seconds, dtype=np.float64) * 1000.0), dtype=np.int64)


class Sampler:
    """Counter rates and gauge reads of series sharing sample times, at fixed evaluation times.

    Which samples each range holds, and the extrapolation distances, depend on the times alone:
    they are worked out once here and reused for every series sampled the same way (one exporter's
    series of a job, for instance). :func:`counter_rate` and :func:`last_sample` are the one-off forms.

    Args:
        times: sample times, seconds, strictly increasing, shape (n,); missed scrapes simply absent.
        at: evaluation times, seconds, shape (m,).
        range_seconds: the rate() range (see :func:`rate_range`); used rounded up to the millisecond.
        window: seconds a gauge looks back (see :func:`gauge_window`); rounded up likewise.
        prometheus_major: 2 or 3 (range boundary and zero-cap order, see the module).

    Raises:
        ValueError: times not strictly increasing, or an unknown ``prometheus_major``.
    """

    def __init__(
        self,
        times: npt.ArrayLike,
        at: npt.ArrayLike,
        *,
        range_seconds: float,
        window: float,
        prometheus_major: int = 2,
    ) -> None:
        if prometheus_major not in (2, 3):
            raise ValueError(f"prometheus_major must be 2 or 3, not {prometheus_major}")
        t, ev = _ms(times), _ms(at)
        if t.ndim != 1 or (t.size > 1 and np.any(np.diff(t) <= 0)):
            raise ValueError("sample times must be one strictly increasing sequence (after rounding to ms)")
        self.n, self.m = t.size, ev.size
        self.major = prometheus_major
        # 2.x includes a sample exactly at T - R, 3.x does not
        side: Literal["left", "right"] = "left" if prometheus_major < 3 else "right"
        last = np.searchsorted(t, ev, side="right").astype(np.int64) - 1

        # gauges: the latest sample, if the window holds one
        w = range_milliseconds(window)
        self._g_ok = last >= np.searchsorted(t, ev - w, side=side)
        self._g_idx = np.clip(last, 0, None)

        # counters: the range's first/last samples and the distances rate() extrapolates over
        r = range_milliseconds(range_seconds)
        first = np.searchsorted(t, ev - r, side=side).astype(np.int64)
        count = last - first + 1
        self._r_ok = count >= 2
        hi = np.clip(last, 0, max(t.size - 1, 0))
        lo = np.clip(first, 0, max(t.size - 1, 0))
        self._lo, self._hi = lo, hi
        tl, th = (t[lo], t[hi]) if t.size else (ev, ev)
        self._range = r / 1000.0
        self._span = np.where(self._r_ok, (th - tl) / 1000.0, 1.0)
        self._mean_gap = self._span / np.maximum(count - 1, 1)
        self._threshold = _EXTRAPOLATION_THRESHOLD * self._mean_gap
        self._to_start = (tl - (ev - r)) / 1000.0
        to_end = (ev - th) / 1000.0
        self._to_end = np.where(to_end < self._threshold, to_end, self._mean_gap / 2)

    def _values(self, values: npt.ArrayLike) -> FloatArray:
        v = np.asarray(values, dtype=np.float64)
        if v.shape[-1:] != (self.n,):
            raise ValueError(f"values' last axis ({v.shape}) must match the {self.n} sample times")
        return v

    def last(self, values: npt.ArrayLike) -> FloatArray:
        """``last_over_time(gauge[window])`` of each series.

        Args:
            values: sample values, shape (..., n).

        Returns:
            Shape (..., m): the latest sample in the window, NaN where the window holds none.
        """
        v = self._values(values)
        if self.n == 0:
            return np.full((*v.shape[:-1], self.m), np.nan)
        return np.where(self._g_ok, v[..., self._g_idx], np.nan)

    def rate(self, values: npt.ArrayLike) -> FloatArray:
        """``rate(counter[range])`` of each series, as Prometheus computes it (see :func:`counter_rate`).

        Args:
            values: counter values, shape (..., n), finite.

        Returns:
            Shape (..., m): per-second rates, NaN where the range holds fewer than two samples.
        """
        v = self._values(values)
        if self.n < 2 or not self._r_ok.any():
            return np.full((*v.shape[:-1], self.m), np.nan)
        # Undo resets once for the whole series: adding, from each drop on, the value before the drop
        # makes last - first over any range equal Prometheus's per-range sum.
        drops = v[..., 1:] < v[..., :-1]
        undone = v
        if drops.any():
            before = np.where(drops, v[..., :-1], 0.0)
            undone = v + np.concatenate([np.zeros_like(v[..., :1]), np.cumsum(before, axis=-1)], axis=-1)
        increase = undone[..., self._hi] - undone[..., self._lo]
        first_value = v[..., self._lo]
        with np.errstate(divide="ignore", invalid="ignore"):
            to_zero = np.where((increase > 0) & (first_value >= 0), self._span * first_value / increase, np.inf)
        half, to_start = self._mean_gap / 2, self._to_start
        if self.major < 3:
            to_start = np.minimum(to_start, to_zero)
            to_start = np.where(to_start < self._threshold, to_start, half)
        else:
            to_start = np.minimum(np.where(to_start < self._threshold, to_start, half), to_zero)
        rate = increase * ((self._span + to_start + self._to_end) / self._span) / self._range
        return np.where(self._r_ok, rate, np.nan)


def last_sample(
    times: npt.ArrayLike,
    values: npt.ArrayLike,
    at: npt.ArrayLike,
    window: float,
    *,
    prometheus_major: int = 2,
) -> FloatArray:
    """``last_over_time(gauge[window])`` at each evaluation time.

    Args:
        times: sample times, seconds, strictly increasing, shape (n,); missed scrapes simply absent.
        values: sample values, shape (..., n) (several series sharing the sample times).
        at: evaluation times, seconds, shape (m,).
        window: seconds looked back (see :func:`gauge_window`).
        prometheus_major: 2 or 3 (whether a sample exactly ``window`` old still counts, see the module).

    Returns:
        Shape (..., m): the latest sample in the window, NaN where the window holds none.
    """
    s = Sampler(times, at, range_seconds=window, window=window, prometheus_major=prometheus_major)
    return s.last(values)


def counter_rate(
    times: npt.ArrayLike,
    values: npt.ArrayLike,
    at: npt.ArrayLike,
    range_seconds: float,
    *,
    prometheus_major: int = 2,
) -> FloatArray:
    """``rate(counter[range_seconds])`` at each evaluation time, as Prometheus computes it.

    For each evaluation time ``T`` and the samples of the range ending at ``T``:

    1. fewer than two samples: no value (NaN);
    2. the increase is last minus first, plus the value before each drop (a drop is a counter reset:
       the counter restarted from zero);
    3. the increase is scaled from the span the samples cover to the range: towards each boundary
       by the gap to it when that gap is under 1.1 average sample intervals, else by half an
       interval (the series started or ended inside the range). A counter is never extrapolated
       back past the time its first sample's value implies it was zero;
    4. the result is divided by the range (not by the span covered).

    Args:
        times: sample times, seconds, strictly increasing, shape (n,); missed scrapes simply absent.
        values: counter values, shape (..., n) (several series sharing the sample times), finite.
        at: evaluation times, seconds, shape (m,).
        range_seconds: the rate() range (see :func:`rate_range`); used rounded up to the millisecond.
        prometheus_major: 2 or 3 (range boundary and zero-cap order, see the module).

    Returns:
        Shape (..., m): per-second rates, NaN where the range holds fewer than two samples.
    """
    s = Sampler(times, at, range_seconds=range_seconds, window=range_seconds, prometheus_major=prometheus_major)
    return s.rate(values)
