"""From per-tick activity to the window's signals, with the exporters' and Prometheus's semantics.

Each exporter is scraped at its own interval and phase; a missed scrape leaves a gap. Counter
signals are integrated into monotone counters (with a random starting value, and restarting from
zero where a container restarted) and read with ``rate()``; gauges are read with
``last_over_time()``: both through the contract's :class:`~bottleneck_operator.contract.sampling.Sampler`,
so the numbers are made the way the data layer asks Prometheus for them. dcgm-exporter refreshes its
values once per collect interval (30 s by default, TELEMETRY.md): a faster scrape repeats them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.sampling import Sampler, gauge_window, rate_range
from bottleneck_operator.contract.signals import SIGNALS, Family, Kind
from bottleneck_operator_dev.familyao.timeline import TICK

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

# exporters whose counters live in the pod's containers, so a container restart resets them
RESETTING = ("cadvisor", "sidecar")
MISSED_SCRAPE = 0.01


@dataclass(frozen=True)
class Scrapes:
    """How one Job's exporters are scraped."""

    interval: Mapping[str, float]  # exporter short name -> seconds
    phase: Mapping[str, float]  # exporter short name -> offset of its first scrape, seconds
    dcgm_collect: float  # dcgm-exporter's collect interval, seconds
    prometheus_major: int


def exporter_of(signal: str) -> str:
    """The short name of the exporter a signal comes from."""
    return SIGNALS[signal].family.exporter_name


def _scrape_ticks(
    rng: np.random.Generator, ticks: FloatArray, present: BoolArray, interval: float, phase: float
) -> tuple[FloatArray, IntArray]:
    """Scrape times over the pod's life, and the tick each one reads."""
    times = np.arange(ticks[0] + phase, ticks[-1] + 1e-9, interval)
    idx = np.minimum(((times - ticks[0]) // TICK).astype(np.int64), ticks.size - 1)
    keep = present[idx] & (rng.random(times.size) >= MISSED_SCRAPE)
    return times[keep], idx[keep]


def _counters(rates: FloatArray, resets: list[int], rng: np.random.Generator) -> FloatArray:
    """Counters (rows) from per-tick rates: a random start, restarting from zero at each reset."""
    cum = np.cumsum(rates * TICK, axis=-1)
    cum = cum + rng.uniform(1e3, 1e6, size=(rates.shape[0], 1)) * np.maximum(rates.mean(axis=-1, keepdims=True), 1e-3)
    for k in sorted(resets):
        if 0 < k < cum.shape[-1]:
            cum[:, k:] -= cum[:, k - 1 : k]
    return np.asarray(np.maximum(cum, 0.0), dtype=np.float64)


def sample_pod(
    rng: np.random.Generator,
    values: Mapping[str, FloatArray],
    ticks: FloatArray,
    present: BoolArray,
    resets: Mapping[str, list[int]],
    scrapes: Scrapes,
    at: FloatArray,
    step: float,
) -> dict[str, FloatArray]:
    """The pod's signals at the window's timestamps, as the data layer would read them."""
    out: dict[str, FloatArray] = {}
    for exporter in sorted({exporter_of(n) for n in values}):
        names = [n for n in values if exporter_of(n) == exporter]
        si = scrapes.interval[exporter]
        times, idx = _scrape_ticks(rng, ticks, present, si, scrapes.phase[exporter])
        sampler = Sampler(
            times,
            at,
            range_seconds=rate_range(step, si),
            window=gauge_window(step, si),
            prometheus_major=scrapes.prometheus_major,
        )
        counters = [n for n in names if SIGNALS[n].kind is Kind.COUNTER]
        gauges = [n for n in names if SIGNALS[n].kind is not Kind.COUNTER]
        if counters:
            rates = np.stack([np.nan_to_num(values[n]) for n in counters])
            cum = _counters(rates, resets.get(exporter, []), rng)
            for name, row in zip(counters, sampler.rate(cum[:, idx]), strict=True):
                out[name] = row
        if gauges:
            held = idx
            if exporter == "dcgm":  # values refresh once per collect interval
                per = max(1, round(scrapes.dcgm_collect / TICK))
                held = (idx // per) * per
            for name, row in zip(gauges, sampler.last(np.stack([values[n] for n in gauges])[:, held]), strict=True):
                out[name] = row
    return out


def enabled(signal: str, families: frozenset[Family]) -> bool:
    """Whether a signal's family is exported on this cluster."""
    return SIGNALS[signal].family in families
