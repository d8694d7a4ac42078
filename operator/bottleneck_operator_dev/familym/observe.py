"""What a scrape makes of the truth: counters that count (and reset), gauges held between scrapes, gaps.

A counter is the running sum of its rate; an exporter restart sets it back near zero, and the rate a
query reads treats a drop as a reset, as Prometheus's ``rate()`` does (the increase after a reset is
the new value itself). A gauge is the value at the last scrape: at a scrape interval longer than the
grid step, samples repeat.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[np.float64]


def counter_of(rate: Array, step: float, resets: Array, rng: np.random.Generator) -> Array:
    """The cumulative counter (pods, T) behind a rate, starting from an arbitrary earlier total.

    Args:
        rate: per-second rate between consecutive samples, shape (pods, T), non-negative.
        step: seconds between samples.
        resets: boolean (pods, T): the exporter restarted just before that sample.
        rng: the job's generator.
    """
    inc = np.nan_to_num(np.clip(rate, 0.0, None)) * step
    start = rng.uniform(1e3, 1e7, size=(rate.shape[0], 1)) * (1.0 + inc.mean(axis=1, keepdims=True))
    running = start + np.cumsum(inc, axis=1)
    # At a reset the counter restarts from part of that interval's increase; what it had is dropped.
    dropped = np.where(resets, running - inc * rng.uniform(0.0, 1.0, size=inc.shape), 0.0)
    out: Array = running - np.maximum.accumulate(dropped, axis=1)
    return out


def rate_of(counter: Array, step: float, window: int) -> Array:
    """Prometheus-style rate over ``window`` grid steps, with resets handled; NaN where no history."""
    diff = np.diff(counter, axis=1)
    inc = np.where(diff >= 0, diff, counter[:, 1:])
    csum = np.concatenate([np.zeros((counter.shape[0], 1)), np.cumsum(inc, axis=1)], axis=1)
    t = np.arange(counter.shape[1])
    lo = np.maximum(0, t - window)
    span = np.maximum(t - lo, 1) * step
    out: Array = (csum[:, t] - csum[:, lo]) / span
    out[:, 0] = np.nan
    return out


def held(values: Array, every: int, phase: int) -> Array:
    """A gauge sampled once every ``every`` grid steps and repeated until the next scrape."""
    if every <= 1:
        return values
    idx = np.arange(values.shape[1])
    src = np.maximum(0, ((idx - phase) // every) * every + phase)
    src = np.where(idx < phase, 0, src)
    return values[:, src]


def restart_masks(rng: np.random.Generator, pods: int, length: int, chance: float) -> tuple[Array, Array]:
    """Where an exporter restarts: a gap of 1-3 samples, then its counters start again from zero.

    Returns:
        (gap, reset): boolean arrays (pods, T).
    """
    gap = np.zeros((pods, length), dtype=bool)
    reset = np.zeros((pods, length), dtype=bool)
    for p in range(pods):
        if length > 10 and rng.random() < chance:
            at = int(rng.integers(3, length - 4))
            gap[p, at : at + int(rng.integers(1, 4))] = True
            end = min(length - 1, int(np.flatnonzero(gap[p])[-1]) + 1)
            reset[p, end] = True
    return gap, reset
