"""Raw exporter samples of one signal, before Prometheus's functions turn them into a window."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Series:
    """One signal's samples for every pod of the Job, at one exporter's scrape times.

    Attributes:
        kind: "gauge" (read by its latest sample), "counter" (read by ``rate()``), or "ratio" (the
            rate of ``values`` over the rate of ``denominator``, both counters).
        values: (pods, scrapes).
        denominator: the second counter of a "ratio".
        resets: times at which the counters restarted from zero (a restarted container).
    """

    kind: str
    values: FloatArray
    denominator: FloatArray | None = None
    resets: tuple[float, ...] = ()


def gauge(values: FloatArray) -> Series:
    return Series("gauge", np.asarray(values, dtype=np.float64))


def counter(values: FloatArray, resets: tuple[float, ...] = ()) -> Series:
    return Series("counter", np.asarray(values, dtype=np.float64), resets=resets)


def ratio(num: FloatArray, den: FloatArray, resets: tuple[float, ...] = ()) -> Series:
    return Series("ratio", np.asarray(num, dtype=np.float64), np.asarray(den, dtype=np.float64), resets)


def scrape_times(rng: np.random.Generator, start: float, end: float, interval: float, missed: float) -> FloatArray:
    """When one exporter was scraped: every ``interval`` seconds from a random phase, with jitter and losses."""
    first = start + rng.uniform(0.0, interval)
    n = max(2, int((end - first) / interval) + 1)
    t = first + interval * np.arange(n) + rng.normal(0.0, 0.005 * interval, size=n)
    keep = rng.random(n) >= missed
    keep[0] = keep[-1] = True
    t = np.sort(t[keep])
    return np.asarray(t[np.concatenate([[True], np.diff(t) > 1e-3])], dtype=np.float64)
