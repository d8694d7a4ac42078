"""From true values on the base grid to what a Prometheus query returns on the window's timestamps.

Each exporter is scraped on its own grid (the drawn interval, a phase, jitter, missed scrapes and
now and then an outage). Counters are integrated from their rates, may restart at zero when an
exporter restarts, and are read back with the contract's ``rate()``; gauges with its
``last_over_time``. dcgm-exporter refreshes its values once per collect interval (a 15 s scrape of a
30 s collect repeats the cached value), PROF fields averaged over that interval, DEV fields as sampled.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.sampling import Sampler, gauge_window, rate_range
from bottleneck_operator.contract.signals import SIGNALS, Family, Kind

from .cluster import Setup
from .dynamics import Timeline

FloatArray = npt.NDArray[np.float64]

# Ratio signals read as rate(numerator) / rate(denominator) of two counters.
RATIOS = {
    "cpu_throttled_frac": ("cfs_throttled", "cfs_periods"),
    "sc_throttled_frac": ("cfs_throttled", "cfs_periods"),
    "node_cpu_busy_frac": ("cpu_busy", "cpu_all"),
    "node_cpu_iowait_frac": ("cpu_iowait", "cpu_all"),
    "node_cpu_system_frac": ("cpu_system", "cpu_all"),
}


def present_families(su: Setup) -> frozenset[Family]:
    """The signal families the drawn exporters and field set provide."""
    fams = {Family.DCGM_DEV}
    if su.field_set in ("default", "full"):
        fams.add(Family.DCGM_PROF)
    if su.field_set == "full":
        fams |= {Family.DCGM_PROF_SM, Family.DCGM_PROF_PIPES}
        if su.gpu.nvlink_gbps > 0:
            fams.add(Family.DCGM_PROF_NVLINK)
    if su.power_fields:
        fams.add(Family.DCGM_POWER_CLOCKS)
    named = {"cadvisor": Family.CADVISOR, "ksm": Family.KSM, "node": Family.NODE, "node_psi": Family.NODE_PSI}
    named |= {"sidecar": Family.SIDECAR, "sidecar_net": Family.SIDECAR_NET}
    fams |= {named[f] for f in su.families}
    if "cadvisor" in su.families and su.cpu_limit is not None:
        fams.add(Family.CADVISOR_CFS)
    if "node" in su.families and su.rdma:
        fams.add(Family.NODE_IB)
    return frozenset(fams)


def scrape_times(rng: np.random.Generator, t0: float, t1: float, interval: float, miss: float) -> FloatArray:
    """One exporter's scrape times in [t0, t1]: phase, jitter, missed scrapes, perhaps an outage."""
    ticks = np.arange(t0 + rng.uniform(0.0, interval), t1, interval)
    ticks = ticks + rng.normal(0.0, 0.004 * interval, size=ticks.size)
    keep = rng.random(ticks.size) >= miss
    if rng.random() < 0.1 and ticks.size > 10:  # the target was down for a few scrapes
        first = int(rng.integers(0, ticks.size - 6))
        keep[first : first + int(rng.integers(2, 6))] = False
    kept = np.round(ticks[keep], 3)
    out: FloatArray = kept[np.concatenate([[True], np.diff(kept) > 0])] if kept.size else kept
    return out


def counter_track(rates: FloatArray, t: FloatArray, at: FloatArray, start: float, reset_at: float | None) -> FloatArray:
    """Counter values at ``at`` for per-second ``rates`` on the base grid ``t`` (shape (..., T)).

    A counter starts from an offset (it has counted since its exporter started) and restarts from
    zero at ``reset_at`` when its exporter restarts there.
    """
    dt = np.diff(t, prepend=t[0])
    cum = start + np.cumsum(np.maximum(rates, 0.0) * dt, axis=-1)
    idx = np.clip(np.searchsorted(t, at, side="right") - 1, 0, t.size - 1)
    values: FloatArray = cum[..., idx]
    if reset_at is not None:
        base = cum[..., int(np.clip(np.searchsorted(t, reset_at, side="right") - 1, 0, t.size - 1))]
        after = at > reset_at
        values = np.where(after, values - np.asarray(base)[..., None], values)
    return values


def _dcgm_cache(t: FloatArray, values: FloatArray, at: FloatArray, collect: float, averaged: bool) -> FloatArray:
    """dcgm-exporter's value at each scrape: the last collection's sample (or its interval's mean)."""
    phase = t[0] + 0.37 * collect
    last_collect = phase + np.floor((at - phase) / collect) * collect
    idx = np.clip(np.searchsorted(t, last_collect, side="right") - 1, 0, t.size - 1)
    if not averaged:
        out: FloatArray = values[..., idx]
        return out
    cum = np.concatenate([np.zeros((*values.shape[:-1], 1)), np.cumsum(values, axis=-1)], axis=-1)
    width = max(int(np.rint(collect / max(float(t[1] - t[0]), 1e-9))), 1)
    lo = np.clip(idx + 1 - width, 0, None)
    mean: FloatArray = (cum[..., idx + 1] - cum[..., lo]) / (idx + 1 - lo)
    return mean


def _reads(names: list[str]) -> tuple[list[str], list[str], list[str]]:
    """Split one exporter's signals into plain counters, ratios and gauges."""
    counters = [n for n in names if n not in RATIOS and SIGNALS[n].kind is Kind.COUNTER]
    ratios = [n for n in names if n in RATIOS]
    gauges = [n for n in names if n not in RATIOS and SIGNALS[n].kind is Kind.GAUGE]
    return counters, ratios, gauges


def sample_exporter(
    rng: np.random.Generator, exporter: str, names: list[str], truth: Mapping[str, FloatArray],
    tl: Timeline, su: Setup, timestamps: FloatArray, step: float,
) -> dict[str, FloatArray]:  # fmt: skip
    """One exporter's signals for one pod, as the window reads them (NaN where no sample)."""
    times = scrape_times(rng, float(tl.t[0]), float(tl.t[-1]), su.scrape_s, su.miss)
    sampler = Sampler(
        times, timestamps, range_seconds=rate_range(step, su.scrape_s), window=gauge_window(step, su.scrape_s)
    )
    counters, ratios, gauges = _reads(names)
    reset = None
    if su.reset is not None and su.reset[0] == exporter:
        reset = float(timestamps[0] + su.reset[1] * (timestamps[-1] - timestamps[0]))
    out: dict[str, FloatArray] = {}
    keys = counters + sorted({k for r in ratios for k in RATIOS[r]})
    if keys:
        stacked = np.stack([truth[k] for k in keys])
        offsets = rng.uniform(1e3, 1e6, size=(len(keys), 1)) * np.maximum(stacked.mean(axis=1, keepdims=True), 1e-3)
        tracks = counter_track(stacked, tl.t, times, 0.0, reset) + np.where(times > (reset or np.inf), 0.0, offsets)
        rated = dict(zip(keys, sampler.rate(tracks), strict=True))
        out.update({k: rated[k] for k in counters})
        for r in ratios:
            num, den = RATIOS[r]
            with np.errstate(divide="ignore", invalid="ignore"):
                out[r] = np.where(rated[den] > 0, np.clip(rated[num] / rated[den], 0.0, 1.0), np.nan)
    for name in gauges:
        values = truth[name]
        if exporter == "dcgm":
            prof = SIGNALS[name].family is not Family.DCGM_DEV and SIGNALS[name].family is not Family.DCGM_POWER_CLOCKS
            values = _dcgm_cache(tl.t, values, times, su.dcgm_collect_s, prof)
        else:
            values = values[np.clip(np.searchsorted(tl.t, times, side="right") - 1, 0, tl.t.size - 1)]
        out[name] = sampler.last(values)
    return out
