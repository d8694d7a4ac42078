"""From mean levels to what Prometheus serves: scrapes, exporters' caches, counters, rate() and last.

Each pod's exporters are scraped every ``si`` seconds (a few scrapes missed); dcgm-exporter repeats
its cached value between collections; counters are integrated from their rates, restart from zero
at a drawn container restart, and are read back with the contract's :class:`Sampler` exactly as
the data layer's ``rate()`` and ``last_over_time()`` would read them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.sampling import Sampler, gauge_window, rate_range
from bottleneck_operator.contract.signals import SIGNALS, Family, Kind

FloatArray = npt.NDArray[np.float64]

# Counter-kind signals that are a ratio of two counters: (denominator per second, per node CPU?)
RATIO_COUNTERS: dict[str, tuple[float, bool]] = {
    "cpu_throttled_frac": (10.0, False),  # CFS periods of 100 ms
    "sc_throttled_frac": (10.0, False),
    "node_cpu_busy_frac": (1.0, True),  # CPU-seconds per second: one per CPU
    "node_cpu_iowait_frac": (1.0, True),
    "node_cpu_system_frac": (1.0, True),
}
# Signals a checkpoint or evaluation pause quiets: the GPUs and the links wait on the writer.
_PAUSED = ("gpu_util", "gr_engine_active", "sm_active", "sm_occupancy", "tensor_active", "dram_active")
# Settings, not activity: a limit or a CPU count does not wobble from scrape to scrape.
_STATIC = ("node_cpus", "cpu_limit_cores", "mem_limit_bytes", "power_limit_w", "xid_code")
_RESETTABLE = (Family.CADVISOR, Family.CADVISOR_CFS, Family.SIDECAR, Family.SIDECAR_NET)
_DCGM = (Family.DCGM_DEV, Family.DCGM_PROF, Family.DCGM_PROF_SM, Family.DCGM_PROF_NVLINK, Family.DCGM_PROF_PIPES)


def scrape_times(rng: np.random.Generator, start: float, end: float, si: float) -> FloatArray:
    """Scrape times from four intervals before the window to its end, a few scrapes missed."""
    phase = float(rng.uniform(0.0, si))
    t = np.arange(start - 5 * si + phase, end + 1e-9, si)
    keep = rng.random(t.size) > 0.01
    keep[:2] = True
    return np.asarray(t[keep], dtype=np.float64)


def counter_values(rng: np.random.Generator, rates: FloatArray, times: FloatArray, reset_at: int | None) -> FloatArray:
    """A counter whose per-second increase is ``rates``, from a random offset, restarting at ``reset_at``.

    Args:
        rates: per-second rate over each scrape interval, shape (n,), >= 0.
        times: scrape times, shape (n,).
        reset_at: index of the first sample after a restart (the counter starts from zero), or None.
    """
    dt = np.diff(times, prepend=times[0] - (times[1] - times[0] if times.size > 1 else 1.0))
    values = float(rng.uniform(1e3, 1e9)) * float(np.mean(rates) + 1e-9) + np.cumsum(rates * dt)
    if reset_at is not None and 0 < reset_at < values.size:
        values[reset_at:] -= values[reset_at - 1]
    return np.asarray(values, dtype=np.float64)


def _hold(values: FloatArray, times: FloatArray, collect: float) -> FloatArray:
    """dcgm-exporter's cache: a scrape between collections repeats the last collected value."""
    groups = np.floor((times - times[0]) / collect).astype(np.int64)
    _, first, inverse = np.unique(groups, return_index=True, return_inverse=True)
    return np.asarray(values[first[inverse]], dtype=np.float64)


def _vary(rng: np.random.Generator, name: str, level: float, n: int, pause: npt.NDArray[np.bool_]) -> FloatArray:
    """A level with sample noise (SM clocks move most with power management) and pauses."""
    if not np.isfinite(level):
        return np.full(n, np.nan)
    if name in _STATIC:
        return np.full(n, level, dtype=np.float64)
    sigma = 0.05 if name == "sm_clock_mhz" else 0.08
    v = level * np.exp(rng.normal(0.0, sigma, n))
    if name in _PAUSED:
        v = np.where(pause, v * 0.05, v)
    if SIGNALS[name].unit == "ratio":
        v = np.clip(v, 0.0, 1.0)
    return np.asarray(v, dtype=np.float64)


def pod_signals(
    rng: np.random.Generator,
    levels: Mapping[str, float],
    names: Sequence[str],
    times: FloatArray,
    at: FloatArray,
    *,
    step: float,
    si: float,
    collect: float,
    pause: npt.NDArray[np.bool_],
    reset_at: int | None,
) -> dict[str, FloatArray]:
    """One pod's window: each named signal sampled at ``at`` the way the data layer reads it."""
    sampler = Sampler(times, at, range_seconds=rate_range(step, si), window=gauge_window(step, si))
    n = times.size
    gauges: dict[str, FloatArray] = {}
    counters: dict[str, FloatArray] = {}
    ratios: dict[str, tuple[FloatArray, FloatArray]] = {}
    for name in names:
        spec = SIGNALS[name]
        v = _vary(rng, name, levels[name], n, pause)
        if spec.family in _DCGM:
            v = _hold(v, times, collect)
        reset = reset_at if spec.family in _RESETTABLE else None
        if name in RATIO_COUNTERS:
            per_s, per_cpu = RATIO_COUNTERS[name]
            den_rate = np.full(n, per_s * (levels["node_cpus"] if per_cpu else 1.0))
            ratios[name] = (
                counter_values(rng, v * den_rate, times, reset),
                counter_values(rng, den_rate, times, reset),
            )
        elif spec.kind is Kind.COUNTER:
            counters[name] = counter_values(rng, np.maximum(v, 0.0), times, reset)
        else:
            gauges[name] = v
    out: dict[str, FloatArray] = {}
    for name, values in gauges.items():
        out[name] = sampler.last(values)
    for name, values in counters.items():
        out[name] = sampler.rate(values)
    with np.errstate(divide="ignore", invalid="ignore"):
        for name, (num, den) in ratios.items():
            out[name] = np.clip(sampler.rate(num) / sampler.rate(den), 0.0, 1.0)
    return {name: out[name] for name in names}
