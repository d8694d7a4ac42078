"""How exporters publish what truth.py says, and how Prometheus answers a window's queries.

Each exporter is scraped on its own phase at the cluster's interval, some scrapes never land, an
exporter may restart (a gap, and its counters start again from zero), a container restart resets the
cgroup counters, and a spot node may be replaced (one pod's series end, a new pod's begin). Counters
are kept as counters (monotone between resets) and read with the contract's ``rate()``; gauges with
its ``last_over_time``: the same arithmetic the data layer asks Prometheus for.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.sampling import counter_rate, gauge_window, last_sample, rate_range
from bottleneck_operator.contract.signals import SIGNALS, Family, Kind
from bottleneck_operator_dev.familyr.plan import FINE_S, JobPlan
from bottleneck_operator_dev.familyr.steps import FloatArray

DCGM_SETS = {
    "dev": {Family.DCGM_DEV},
    "default": {Family.DCGM_DEV, Family.DCGM_PROF},
    "full": {Family.DCGM_DEV, Family.DCGM_PROF, Family.DCGM_PROF_SM, Family.DCGM_PROF_NVLINK,
             Family.DCGM_PROF_PIPES, Family.DCGM_POWER_CLOCKS},
}  # fmt: skip
NOISE = 0.015  # sample-to-sample spread of the time-share gauges (DCGM samples a short period)


def published(p: JobPlan) -> list[str]:
    """The signal names this cluster's exporters publish for the job."""
    off = p.cluster.families_off
    names = []
    for name, spec in SIGNALS.items():
        fam = spec.family
        if spec.context or fam.value in off or fam.exporter_name in off:
            continue
        if fam.exporter is Family.DCGM and fam not in DCGM_SETS[p.cluster.field_set]:
            continue
        if fam is Family.NODE_IB and not p.fabric.rdma:
            continue
        if fam is Family.SIDECAR_NET:  # R models no pod's own network: a collector from before the count
            continue
        if name == "cpu_limit_cores" and p.cpu_limit is None:
            continue
        names.append(name)
    return names


@dataclass(frozen=True)
class Counters:
    """Raw counter samples of one exporter's series, kept so tests can check they are counters.

    Attributes:
        times: scrape times, shape (scrapes,).
        values: counter values, shape (series, scrapes).
        resets: per series, the time its counter restarted from zero (NaN: never).
    """

    times: FloatArray
    values: FloatArray
    resets: FloatArray


def to_counters(
    rates: FloatArray, fine: FloatArray, times: FloatArray, resets: FloatArray, rng: np.random.Generator
) -> FloatArray:
    """Counter values at scrape times for per-second ``rates`` on the fine grid, row ``i`` restarting at ``resets[i]``.

    A counter that was running before the window starts from an arbitrary value; after a restart it
    holds only what accumulated since.
    """
    cum = np.concatenate([np.zeros((rates.shape[0], 1)), np.cumsum(rates[:, :-1] * FINE_S, axis=1)], axis=1)
    pos = np.interp(times, fine, np.arange(fine.size, dtype=np.float64))
    lo = np.minimum(pos.astype(int), fine.size - 2)
    frac = pos - lo
    values = cum[:, lo] * (1 - frac) + cum[:, lo + 1] * frac
    values += rng.uniform(0, 3600, (rates.shape[0], 1)) * rates.mean(axis=1, keepdims=True)
    for row in np.flatnonzero(np.isfinite(resets)):
        after = times >= resets[row]
        values[row, after] -= np.interp(resets[row], times, values[row]) if after.any() else 0.0
    result: FloatArray = np.maximum(values, 0.0)
    return result


def scrape_times(p: JobPlan, rng: np.random.Generator, end: float) -> FloatArray:
    """When one exporter's scrapes landed (missed ones left out)."""
    si = p.cluster.scrape_s
    times = np.arange(p.times[0] + rng.uniform(0, si), end + 1e-9, si)
    keep = rng.random(times.size) >= p.cluster.missed
    return np.asarray(times[keep])


def sample_exporter(
    p: JobPlan, rng: np.random.Generator, truths: list[dict[str, FloatArray]], names: list[str], grid: FloatArray,
    step: float,
) -> tuple[list[dict[str, FloatArray]], Counters | None]:  # fmt: skip
    """One exporter's signals for every pod on the window grid, with restarts and missed scrapes.

    A restart (the exporter's pod, or the container whose cgroup counters it reads) leaves a gap of
    one to four scrapes on that pod's series and starts its counters again from zero.
    """
    si, pods = p.cluster.scrape_s, len(truths)
    times = scrape_times(p, rng, float(grid[-1]))
    idx = np.clip(((times - p.times[0]) / FINE_S).astype(int), 0, p.times.size - 1)
    restart = np.where(rng.random(pods) < 0.12, rng.uniform(grid[0], grid[-1], pods), np.nan)
    down = rng.uniform(1, 4, pods) * si
    out: list[dict[str, FloatArray]] = [{} for _ in range(pods)]
    gauges = [n for n in names if SIGNALS[n].kind is Kind.GAUGE]
    counters = [n for n in names if SIGNALS[n].kind is Kind.COUNTER]
    raw = None
    if gauges:
        g = np.stack([t[n][idx] for t in truths for n in gauges])
        shares = np.array([SIGNALS[n].unit == "ratio" and SIGNALS[n].family.exporter is Family.DCGM for n in gauges])
        noisy = np.tile(shares, pods)[:, None]
        g = np.where(noisy, np.clip(g + rng.normal(0, NOISE, g.shape), 0, 1), g)
        vals = last_sample(times, g, grid, gauge_window(step, si)).reshape(pods, len(gauges), grid.size)
        for k in range(pods):
            out[k].update(zip(gauges, vals[k], strict=True))
    if counters and times.size > 1:
        rates = np.maximum(np.stack([t[n] for t in truths for n in counters]), 0.0)
        resets = np.repeat(restart, len(counters))
        values = to_counters(rates, p.times, times, resets, rng)
        raw = Counters(times, values, resets)
        vals = counter_rate(times, values, grid, rate_range(step, si))
        ratio = np.tile([SIGNALS[n].unit == "ratio" for n in counters], pods)[:, None]
        vals = np.where(ratio, np.clip(vals, 0, 1), vals).reshape(pods, len(counters), grid.size)
        for k in range(pods):
            out[k].update(zip(counters, vals[k], strict=True))
    for pod in np.flatnonzero(np.isfinite(restart)):
        gap = (grid >= restart[pod]) & (grid <= restart[pod] + down[pod])
        for v in out[pod].values():
            v[gap] = np.nan
    return out, raw
