"""From fine-grid rows to a window: each exporter scraped on its own interval, then read as the contract says.

Counters are integrated from their rates into monotone totals (starting from a large value: they
count since boot or container start), reset to zero where a container or collector restarted or a
fabric monitor cleared port counters, and sampled at the exporter's scrape times (a random phase,
missed scrapes, exporter outages). dcgm-exporter's gauges repeat the value of its last collection
(every 1-30 s). The window is then read exactly as ``contract.sampling`` defines: ``rate()`` over
``rate_range`` for counters, ``last_over_time`` over ``gauge_window`` for gauges.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.sampling import Sampler, gauge_window, rate_range
from bottleneck_operator.contract.signals import SIGNALS, Kind
from bottleneck_operator_dev.familye.phases import Timeline
from bottleneck_operator_dev.familye.workloads import Plan

FloatArray = npt.NDArray[np.float64]
Rows = dict[str, FloatArray]


def is_counter(row: str) -> bool:
    """Whether a row is a counter's rate: the contract's kind, or a part of a ratio of counters."""
    if ":" in row:
        return True
    return SIGNALS[row].kind is Kind.COUNTER


def scrape_times(
    rng: np.random.Generator, plan: Plan, exporter: str, t0: float, end: float, start: float
) -> FloatArray:
    """When Prometheus scraped this exporter: its interval, a phase, a little jitter, misses and outages."""
    si = plan.env.scrape[exporter]
    first = t0 + si + rng.uniform(0, si)
    times = np.arange(first, end + 1e-9, si)
    times = times + rng.normal(0.0, min(0.02 * si, 0.25), times.size)
    keep = rng.random(times.size) > 0.006
    for name, off, dur in plan.env.outages:
        if name == exporter:
            keep &= ~((times >= start + off) & (times < start + off + dur))
    out: FloatArray = np.unique(np.round(times[keep], 3))
    return out


def _bins(tl: Timeline, at: FloatArray) -> npt.NDArray[np.int64]:
    return np.clip(((at - tl.t0) // tl.dt).astype(np.int64), 0, tl.times.size - 1)


def _totals(rng: np.random.Generator, rates: FloatArray, tl: Timeline, times: FloatArray) -> FloatArray:
    """Counter values at ``times`` from per-bin rates (..., n): monotone, from a large starting total."""
    cum = np.concatenate([np.zeros((*rates.shape[:-1], 1)), np.cumsum(rates * tl.dt, axis=-1)], axis=-1)
    idx = _bins(tl, times)
    inside = times - tl.times[idx]
    start = rates.mean(axis=-1, keepdims=True) * rng.uniform(3e3, 3e6, (*rates.shape[:-1], 1))
    out: FloatArray = start + cum[..., idx] + rates[..., idx] * inside
    return out


def _reset(
    values: FloatArray, times: FloatArray, at: float, counters: npt.NDArray[np.int64], rows: npt.NDArray[np.int64]
) -> None:
    """A restart at ``at``: the given counters of the given rows count again from zero."""
    after = times >= at
    if not after.any() or not (~after).any():
        return
    j = int(np.argmax(after))
    sel = np.ix_(counters, rows)
    # the value at the restart, interpolated between the samples around it
    lo, hi = values[..., j - 1][sel], values[..., j][sel]
    w = (at - times[j - 1]) / (times[j] - times[j - 1])
    block = values[sel]
    block[..., j:] -= (lo + (hi - lo) * w)[..., None]
    values[sel] = block


def sample(
    rng: np.random.Generator,
    plan: Plan,
    exporter: str,
    rows: Rows,
    tl: Timeline,
    stamps: FloatArray,
    step: float,
    more: tuple[Rows, np.random.Generator] | None = None,
) -> Rows:
    """One exporter's rows, scraped and read at the window's timestamps; row keys kept.

    ``more`` are further counters of the same exporter (the collector's network bytes) and the
    generator of their own draws: the same scrapes and restarts, so that the other rows come out as
    they did without them.
    """
    if not rows:
        return {}
    extra_rows, more_rng = more if more is not None else ({}, None)
    env, start = plan.env, float(stamps[0])
    si = env.scrape[exporter]
    times = scrape_times(rng, plan, exporter, tl.t0, float(stamps[-1]), start)
    if times.size < 2:
        return {k: np.full((v.shape[0], stamps.size), np.nan) for k, v in (rows | extra_rows).items()}
    measured = times
    if exporter == "dcgm":
        ci, phase = env.dcgm_collect, rng.uniform(0, env.dcgm_collect)
        measured = np.floor((times - phase) / ci) * ci + phase
    sampler = Sampler(
        times,
        stamps,
        range_seconds=rate_range(step, si),
        window=gauge_window(step, si),
        prometheus_major=env.prometheus_major,
    )
    out: Rows = {}
    gauges = [k for k in rows if not is_counter(k)]
    counters = [k for k in rows if is_counter(k)]
    if gauges:
        stacked = np.stack([rows[k] for k in gauges])[..., _bins(tl, measured)]
        for k, v in zip(gauges, sampler.last(stacked), strict=True):
            out[k] = v
    if counters:
        totals = _totals(rng, np.stack([rows[k] for k in counters]), tl, times)
        restarts = _apply_resets(rng, plan, exporter, counters, totals, times, start, tl)
        for k, v in zip(counters, sampler.rate(totals), strict=True):
            out[k] = v
        if extra_rows and more_rng is not None:
            names = list(extra_rows)
            extra = _totals(more_rng, np.stack([extra_rows[k] for k in names]), tl, times)
            for at, which in restarts:
                _reset(extra, times, at, np.arange(len(names)), which)
            for k, v in zip(names, sampler.rate(extra), strict=True):
                out[k] = v
    return out


def _apply_resets(
    rng: np.random.Generator,
    plan: Plan,
    exporter: str,
    names: list[str],
    totals: FloatArray,
    times: FloatArray,
    start: float,
    tl: Timeline,
) -> list[tuple[float, npt.NDArray[np.int64]]]:
    """Counter resets this exporter sees: restarted containers or collectors, cleared IB port counters.

    Returns the restarts of the whole exporter (time, rows), which its other counters share.
    """
    n_rows = totals.shape[1]
    every = np.arange(len(names))
    ib = np.array([i for i, k in enumerate(names) if k.startswith("ib_")], dtype=np.int64)
    restarts: list[tuple[float, npt.NDArray[np.int64]]] = []
    for name, off in plan.env.resets:
        one = np.array([int(rng.integers(n_rows))])
        if name == exporter:
            _reset(totals, times, start + off, every, one)
            restarts.append((start + off, one))
        elif name == "node_ib" and exporter == "node" and ib.size:
            _reset(totals, times, start + off, ib, one)
    if exporter == "cadvisor" and tl.restart_bin >= 0:
        _reset(totals, times, float(tl.times[tl.restart_bin]), every, np.arange(n_rows))
        restarts.append((float(tl.times[tl.restart_bin]), np.arange(n_rows)))
    return restarts
