"""How the exporters turn a pod's true per-sample values into what Prometheus hands back.

Gauges are held from the exporter's last scrape (dcgm-exporter also from its own last collect);
counters are accumulated from the true rates, read at the scrape times, and turned back into rates
the way ``rate()`` does: from the first and last scrape in the range, a decrease taken as a reset.
An exporter restart loses its scrapes for a while and starts its counters again from zero.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Scrape:
    """One exporter's schedule over a window.

    Attributes:
        interval: seconds between scrapes.
        offset: phase of the scrapes against the window start, in [0, interval).
        collect: the exporter's own refresh interval (0: fresh at every scrape).
        down: (from, to) seconds after the window start with no scrape; the counters restart at ``to``.
        warm: the job ran before the window (its counters have scrapes before the start).
    """

    interval: float
    offset: float
    collect: float
    down: tuple[float, float] | None
    warm: bool


def _last_scrape(rel: FloatArray, sc: Scrape) -> FloatArray:
    """Time (since the window start) of the last scrape at or before each of ``rel``."""
    return np.floor((rel - sc.offset) / sc.interval) * sc.interval + sc.offset


def _index(rel: FloatArray, step: float, n: int) -> IntArray:
    """The sample of the true series in force at each time (piecewise constant on the grid)."""
    return np.clip(np.floor(rel / step + 1e-9), 0, n - 1).astype(np.int64)


def _in_down(times: FloatArray, sc: Scrape) -> npt.NDArray[np.bool_]:
    if sc.down is None:
        return np.zeros(times.shape, dtype=bool)
    return (times >= sc.down[0]) & (times < sc.down[1])


def gauge(truth: FloatArray, step: float, sc: Scrape) -> FloatArray:
    """The values a range query returns at each grid time: the last scrape's, NaN while down.

    Args:
        truth: (signals, samples) true values on the grid.
    """
    n = truth.shape[1]
    rel = np.arange(n, dtype=np.float64) * step
    last = _last_scrape(rel, sc)
    seen = np.floor(last / sc.collect) * sc.collect if sc.collect > 0 else last
    out = truth[:, _index(seen, step, n)].astype(np.float64)
    bad = _in_down(last, sc)
    if not sc.warm:
        bad |= last < 0
    out[:, bad] = np.nan
    return out


def counter_values(truth: FloatArray, step: float, sc: Scrape, start_value: FloatArray, at: FloatArray) -> FloatArray:
    """The raw counters an exporter exposes at times ``at`` (seconds since the window start).

    Each counter integrates its true rate on the grid from its ``start_value``; after a restart it
    counts again from zero (a reset). Times before the window extrapolate the first rate.

    Args:
        truth: (signals, samples) true rates on the grid.
        start_value: (signals,) counter values at the window start.
        at: times to read the counters at.
    """
    n = truth.shape[1]
    rate = np.nan_to_num(truth, nan=0.0)
    cum = np.concatenate((np.zeros((truth.shape[0], 1)), np.cumsum(rate * step, axis=1)), axis=1)
    cum += start_value[:, None]
    pos = np.clip(at / step, 0.0, float(n))
    i = np.floor(pos).astype(np.int64)
    nxt = np.minimum(i + 1, n)
    value = cum[:, i] + (cum[:, nxt] - cum[:, i]) * (pos - i) + np.minimum(at, 0.0) * rate[:, :1]
    if sc.down is not None:
        base = counter_values(
            truth, step, Scrape(sc.interval, sc.offset, 0.0, None, True), start_value, np.array([sc.down[1]])
        )
        value = np.where(at >= sc.down[1], value - base, value)
    return value


def rate(truth: FloatArray, step: float, sc: Scrape, start_value: FloatArray) -> FloatArray:
    """What ``rate(counter[range])`` returns at each grid time, range = max(2 scrapes, one step)."""
    n = truth.shape[1]
    rel = np.arange(n, dtype=np.float64) * step
    span = max(2.0 * sc.interval, step)
    last = _last_scrape(rel, sc)
    k = max(1, int(np.floor(span / sc.interval + 1e-9)) - 1)
    first = last - k * sc.interval
    v_last = counter_values(truth, step, sc, start_value, last)
    v_first = counter_values(truth, step, sc, start_value, first)
    inc = v_last - v_first
    inc = np.where(inc < 0, v_last, inc)  # a reset: rate() counts from zero
    out = inc / (last - first)
    bad = _in_down(last, sc) | _in_down(first, sc)
    if not sc.warm:
        bad |= first < 0
    out[:, bad] = np.nan
    return np.maximum(out, 0.0)
