"""From scraped exporter samples to the contract's signals, read the way the contract says.

At each window timestamp a counter signal is ``rate()`` over the contract's range and a gauge the
latest sample within its window (contract/sampling.py, whose Sampler does exactly this); a signal of
one series per GPU is the mean over the pod's GPUs unless the contract combines it otherwise; the
hand-written signals are ratios of their metrics as their descriptions in contract/signals.py say.
"""

from __future__ import annotations

import numpy as np

from bottleneck_operator.contract.sampling import Sampler, gauge_window, rate_range
from bottleneck_operator.contract.signals import SIGNALS
from bottleneck_operator_dev.familyae.scrape import Scraped
from bottleneck_operator_dev.familyae.stages import Arr

# Clock-event bits that mean a slowdown: power cap, thermal and hardware slowdowns (contract/signals.py).
SLOWDOWN_BITS = 0x4 | 0x8 | 0x20 | 0x40 | 0x80


def _combine(values: Arr, how: str) -> Arr:
    if values.ndim == 1:
        return values
    if how == "max":
        return np.asarray(np.max(values, axis=0), dtype=np.float64)
    if how == "sum":
        return np.asarray(np.sum(values, axis=0), dtype=np.float64)
    return np.asarray(np.mean(values, axis=0), dtype=np.float64)


def _ratio(num: Arr, den: Arr) -> Arr:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def _special(sc: Scraped, smp: Sampler) -> dict[str, Arr]:
    v, out = sc.values, {}
    if "fb_used_frac:used" in v:
        used, free = smp.last(v["fb_used_frac:used"]), smp.last(v["fb_used_frac:free"])
        out["fb_used_frac"] = _combine(_ratio(used, used + free), "max")
    if "clock_slowdown_frac:reasons" in v:
        reasons = smp.last(v["clock_slowdown_frac:reasons"])
        slowed = (np.nan_to_num(reasons).astype(np.int64) & SLOWDOWN_BITS) != 0
        out["clock_slowdown_frac"] = _combine(np.where(np.isnan(reasons), np.nan, slowed.astype(np.float64)), "avg")
    for name in ("cpu_throttled_frac", "sc_throttled_frac"):
        if f"{name}:periods" in v:
            out[name] = _ratio(smp.rate(v[f"{name}:throttled"]), smp.rate(v[f"{name}:periods"]))
    if "node_cpu:idle" in v:
        modes = {m: smp.rate(v[f"node_cpu:{m}"]) for m in ("user", "system", "iowait", "idle", "other")}
        total = sum(modes.values(), np.zeros_like(modes["idle"]))
        out["node_cpu_busy_frac"] = 1.0 - _ratio(modes["idle"] + modes["iowait"], total)
        out["node_cpu_iowait_frac"] = _ratio(modes["iowait"], total)
        out["node_cpu_system_frac"] = _ratio(modes["system"], total)
    if "node_mem_avail_frac:avail" in v:
        out["node_mem_avail_frac"] = _ratio(
            smp.last(v["node_mem_avail_frac:avail"]), smp.last(v["node_mem_avail_frac:total"])
        )
    if "node_swap_used_frac:total" in v:
        total, free = smp.last(v["node_swap_used_frac:total"]), smp.last(v["node_swap_used_frac:free"])
        with np.errstate(divide="ignore", invalid="ignore"):
            out["node_swap_used_frac"] = np.where(
                total > 0, 1.0 - free / np.where(total > 0, total, 1.0), np.where(np.isnan(total), np.nan, 0.0)
            )
    return out


def read_target(sc: Scraped, at: Arr, step: float) -> dict[str, Arr]:
    """The contract signals one target provides, on the window's timestamps."""
    smp = Sampler(sc.times, at, range_seconds=rate_range(step, sc.si), window=gauge_window(step, sc.si))
    out: dict[str, Arr] = {}
    for name, values in sc.values.items():
        if ":" in name:
            continue
        spec = SIGNALS[name]
        read = smp.rate(values) if name in sc.counters else smp.last(values)
        out[name] = _combine(read / spec.scale, spec.how)
    out |= _special(sc, smp)
    return out
