"""A signal's truth per pod (its level while the job runs and while it pauses) and how it is sampled.

The step model and the hardware give each signal a level per pod; this module turns a level into
what an exporter publishes at each scrape (a gauge sample, or a counter's increment over the
scrape interval) and then into the window's value through :mod:`.scrape`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator_dev.familyi.scrape import (
    Exporter,
    FloatArray,
    counters,
    gauge,
    instant_activity,
    mean_activity,
    rate,
)


@dataclass(frozen=True)
class Level:
    """One signal's truth for each pod of a job.

    Attributes:
        busy: value per pod while the job runs (the signal's unit; a rate for counters).
        pause: value per pod during a checkpoint pause or a restart.
        cv: sample-to-sample relative noise.
        lo, hi: the unit's bounds (a ratio stays in [0, 1]).
        kind: "gauge"; "counter" (the exporter publishes a cumulative count of ``busy`` per second);
            "ratio" (two counters, ``busy`` and ``denom`` per second, read as the ratio of their rates).
        denom: the ratio's denominator rate per pod.
        dip_p, dip: a gauge sample falls to ``dip`` with probability ``dip_p`` (a GPU clock dropping
            between bursts).
        trials: a gauge that is the share of ``trials`` devices with a flag set, each with chance ``busy``.
        integer: a gauge that counts things (processes).
        poisson: a counter of discrete events.
    """

    busy: FloatArray
    pause: FloatArray
    cv: float
    lo: float = 0.0
    hi: float = float("inf")
    kind: str = "gauge"
    denom: FloatArray | None = None
    dip_p: float = 0.0
    dip: FloatArray | None = None
    trials: int = 0
    integer: bool = False
    poisson: bool = False


def _samples(lv: Level, act: FloatArray, rng: np.random.Generator) -> FloatArray:
    """Per-pod values at each scrape from the activity (1 running, 0 paused; a share for intervals)."""
    busy, pause = lv.busy[:, None], lv.pause[:, None]
    mean = pause + (busy - pause) * act[None, :]
    if lv.trials:
        p = np.clip(mean, 0.0, 1.0)
        return np.asarray(rng.binomial(lv.trials, p), dtype=np.float64) / lv.trials
    noisy = mean * (1.0 + lv.cv * rng.standard_normal(mean.shape))
    if lv.dip is not None and lv.dip_p > 0:
        noisy = np.where(rng.random(mean.shape) < lv.dip_p, lv.dip[:, None], noisy)
    if lv.integer:
        noisy = np.asarray(rng.poisson(np.clip(mean, 0.0, None)), dtype=np.float64)
    # a ratio's numerator is a rate in its own unit: only the ratio itself is bounded
    return np.clip(noisy, lv.lo, lv.hi if lv.kind != "ratio" else None)


def read(
    lv: Level,
    ex: Exporter,
    grid: FloatArray,
    pauses: FloatArray,
    rng: np.random.Generator,
    *,
    collect: float = 0.0,
) -> FloatArray:
    """The window's values (pods x grid) of one signal published by exporter ``ex``.

    Args:
        lv: the signal's truth.
        ex: the exporter's scrape schedule.
        grid: the window's timestamps.
        pauses: the job's pauses, rows of [start, end).
        rng: the job's generator.
        collect: the exporter's own sampling interval when coarser than its scrapes (dcgm-exporter's
            collect interval): scrapes between two collections repeat the cached value.
    """
    if lv.kind == "gauge":
        times = ex.times
        if collect > ex.interval:
            bucket = np.floor(times / collect)
            _, first, inverse = np.unique(bucket, return_index=True, return_inverse=True)
            values = _samples(lv, instant_activity(times[first], pauses), rng)[:, inverse]
        else:
            values = _samples(lv, instant_activity(times, pauses), rng)
        return gauge(values, ex, grid)
    window = max(4.0 * ex.interval, float(grid[1] - grid[0]) if grid.size > 1 else ex.interval)
    act = mean_activity(ex.times, ex.interval, pauses)
    per_s = _samples(lv, act, rng)
    if lv.poisson:
        per_s = np.asarray(rng.poisson(np.clip(per_s * ex.interval, 0.0, None)), dtype=np.float64) / ex.interval
    num = rate(counters(per_s, ex, rng), ex, grid, window)
    if lv.kind == "counter":
        return num
    assert lv.denom is not None
    den_rates = np.broadcast_to(lv.denom[:, None], per_s.shape).astype(np.float64)
    den = rate(counters(den_rates, ex, rng), ex, grid, window)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.clip(num / den, lv.lo, lv.hi)


class Levels(dict[str, Level]):
    """The levels of one job's signals, keyed by signal name, each with one value per pod."""

    def __init__(self, pods: int) -> None:
        super().__init__()
        self.pods = pods

    def add(
        self,
        name: str,
        busy: FloatArray | float,
        pause: FloatArray | float,
        cv: float,
        *,
        lo: float = 0.0,
        hi: float = float("inf"),
        kind: str = "gauge",
        denom: FloatArray | float | None = None,
        dip_p: float = 0.0,
        dip: FloatArray | float | None = None,
        trials: int = 0,
        integer: bool = False,
        poisson: bool = False,
    ) -> None:
        """Declare one signal (scalars stand for every pod)."""

        def per_pod(x: FloatArray | float) -> FloatArray:
            return np.broadcast_to(np.asarray(x, dtype=np.float64), (self.pods,)).copy()

        self[name] = Level(
            per_pod(busy),
            per_pod(pause),
            cv,
            lo=lo,
            hi=hi,
            kind=kind,
            denom=None if denom is None else per_pod(denom),
            dip_p=dip_p,
            dip=None if dip is None else per_pod(dip),
            trials=trials,
            integer=integer,
            poisson=poisson,
        )
