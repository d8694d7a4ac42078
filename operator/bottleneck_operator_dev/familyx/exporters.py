"""The exporters read the Job's timeline as they really do, then the data layer samples them.

Each pod has a fine timeline (one value per ``dt`` seconds) of every quantity, made of its phases'
steady values plus step-to-step jitter. From it:

- dcgm-exporter polls DCGM every ``collect`` seconds: PROF fields are the share of the collection
  interval the unit was active (the timeline's mean over it); ``GPU_UTIL``, power and clocks are
  the value at the poll. Prometheus scrapes the exporter's cache at its own, jittered interval.
- counters (cAdvisor, node-exporter, the collector) integrate the timeline; an exporter restart
  sets them back to zero.
- other gauges are read at the scrape instant.

Missed scrapes are simply absent. The window then holds what the contract's data layer computes
from those samples: ``rate()`` of counters and ``last_over_time`` of gauges on the step grid
(:mod:`bottleneck_operator.contract.sampling`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.sampling import Sampler, gauge_window, rate_range
from bottleneck_operator.contract.signals import SIGNALS, Family, Kind

FloatArray = npt.NDArray[np.float64]

# Signals a DCGM poll reports as the share of its collection interval (PROF fields, DEV copy util
# and the PROF byte rates); the rest of dcgm-exporter's fields are values at the poll.
DCGM_AVERAGED = frozenset(
    {
        "gr_engine_active",
        "sm_active",
        "sm_occupancy",
        "tensor_active",
        "dram_active",
        "fp32_active",
        "fp16_active",
        "pcie_tx_bps",
        "pcie_rx_bps",
        "nvlink_tx_bps",
        "nvlink_rx_bps",
        "mem_copy_util",
    }
)
# Ratios of two counters (throttled / total periods, CPU seconds / CPUs) are rendered as one counter
# of the ratio: the data layer's rate of the numerator over the constant denominator gives the same.
COUNTED_RATIOS = frozenset(
    {"cpu_throttled_frac", "sc_throttled_frac", "node_cpu_busy_frac", "node_cpu_iowait_frac", "node_cpu_system_frac"}
)
RATIO = frozenset(name for name, spec in SIGNALS.items() if spec.unit == "ratio")
# Values that jitter from step to step and poll to poll; the rest are fixed settings (limits, CPUs).
STEADY = frozenset(
    {"node_cpus", "power_limit_w", "mem_limit_bytes", "cpu_limit_cores", "xid_code", "clock_slowdown_frac"}
)


def is_counter(name: str) -> bool:
    """Whether the exporter publishes the signal as a counter (read through ``rate()``)."""
    return SIGNALS[name].kind is Kind.COUNTER or name in COUNTED_RATIOS


@dataclass(frozen=True)
class Scrape:
    """How one exporter is scraped on a cluster."""

    interval: float
    jitter: float  # standard deviation of a scrape's offset, seconds
    miss: float  # probability a scrape is lost
    restart: float | None  # when the exporter restarted (unix seconds), or None


def timeline(
    segments: Sequence[tuple[int, int, dict[str, float]]],
    names: Sequence[str],
    size: int,
    step_time: Sequence[float],
    dt: float,
    rng: np.random.Generator,
    caps: dict[str, float] | None = None,
) -> FloatArray:
    """A pod's values on the fine grid: (len(names), size).

    Args:
        segments: (first index, end index, values) pieces covering the grid.
        names: the signals, in row order.
        size: fine-grid points.
        step_time: per segment, the training step time (jitter is larger when few steps fit in ``dt``).
        dt: seconds per fine-grid point.
        rng: the job's generator.
        caps: ceilings no jitter may cross (the board's maximum clock, its enforced power limit).
    """
    out = np.empty((len(names), size))
    for (a, b, values), st in zip(segments, step_time, strict=True):
        out[:, a:b] = np.array([values.get(n, np.nan) for n in names])[:, None]
        sd = 0.03 + 0.12 * min(1.0, st / dt)
        noise = rng.normal(1.0, sd, size=(len(names), b - a))
        out[:, a:b] *= np.clip(noise, 0.5, 1.5)
    for i, n in enumerate(names):
        if n in STEADY:
            # settings do not jitter: take the segment values back
            for a, b, values in segments:
                out[i, a:b] = values.get(n, np.nan)
        elif n in RATIO:
            np.clip(out[i], 0.0, 1.0, out=out[i])
        if caps and n in caps:
            np.minimum(out[i], caps[n], out=out[i])
    return out


def scrape_times(t0: float, t1: float, sc: Scrape, rng: np.random.Generator) -> FloatArray:
    """When Prometheus scraped the exporter: a fixed offset, a little jitter, a few misses."""
    base = np.arange(t0 + float(rng.uniform(0, sc.interval)), t1, sc.interval)
    times = base + rng.normal(0.0, sc.jitter, size=base.size)
    keep = rng.random(base.size) >= sc.miss
    if sc.restart is not None:
        # the exporter is down for a scrape or two while it restarts
        keep &= ~((times > sc.restart) & (times < sc.restart + 1.5 * sc.interval))
    times = np.sort(times[keep])
    return times[np.concatenate(([True], np.diff(times) > 1e-3))] if times.size else times


def read_exporter(
    fine: FloatArray,
    names: Sequence[str],
    t_fine: FloatArray,
    sc: Scrape,
    grid: FloatArray,
    step: float,
    rng: np.random.Generator,
    *,
    dcgm_collect: float | None = None,
) -> dict[str, FloatArray]:
    """One exporter's signals of one pod, as the window holds them.

    Args:
        fine: the pod's timeline rows for ``names``: (len(names), len(t_fine)).
        names: the exporter's signals here.
        t_fine: the fine grid's times (seconds, absolute).
        sc: how the exporter is scraped.
        grid: the window's timestamps.
        step: the window's step.
        rng: the job's generator.
        dcgm_collect: dcgm-exporter's collection interval, None for other exporters.
    """
    dt = float(t_fine[1] - t_fine[0])
    t0, t1 = float(t_fine[0]), float(t_fine[-1]) + dt
    times = scrape_times(t0 + dt, t1, sc, rng)
    sampler = Sampler(times, grid, range_seconds=rate_range(step, sc.interval), window=gauge_window(step, sc.interval))
    idx = np.clip(((times - t0) // dt).astype(np.int64), 0, len(t_fine) - 1)
    out: dict[str, FloatArray] = {}
    counters = [i for i, n in enumerate(names) if is_counter(n)]
    gauges = [i for i, n in enumerate(names) if not is_counter(n)]
    if counters:
        values = counter_values(fine[counters], t_fine, times, sc.restart, rng)
        rated = sampler.rate(values)
        for j, i in enumerate(counters):
            out[names[i]] = rated[j]
    if gauges:
        rows = fine[gauges]
        if dcgm_collect is not None:
            # the value dcgm-exporter holds at each scrape: its last poll, averaged over the
            # collection interval for the fields DCGM reports as shares of it
            polls = np.floor((times - t0) / dcgm_collect) * dcgm_collect + t0
            span = max(1, round(dcgm_collect / dt))
            csum = np.concatenate([np.zeros((len(gauges), 1)), np.cumsum(rows, axis=1)], axis=1)
            end = np.clip(((polls - t0) // dt).astype(np.int64), 1, len(t_fine))
            start = np.maximum(end - span, 0)
            means = (csum[:, end] - csum[:, start]) / np.maximum(end - start, 1)
            inst = rows[:, end - 1]
            values = np.stack([means[j] if names[i] in DCGM_AVERAGED else inst[j] for j, i in enumerate(gauges)])
            # a mean of shares is a share (the running sums' rounding must not push it past 1)
            ratio = [j for j, i in enumerate(gauges) if names[i] in RATIO]
            values[ratio] = np.clip(values[ratio], 0.0, 1.0)
        else:
            values = rows[:, idx]
        read = sampler.last(values)
        for j, i in enumerate(gauges):
            out[names[i]] = read[j]
    return out


def counter_values(
    rows: FloatArray, t_fine: FloatArray, times: FloatArray, restart: float | None, rng: np.random.Generator
) -> FloatArray:
    """Counters integrating ``rows`` (per-second rates on the fine grid) as scraped at ``times``.

    They start from an arbitrary value (the exporter has been up a while) and, after a restart,
    count again from zero.
    """
    dt = float(t_fine[1] - t_fine[0])
    edges = np.concatenate([np.zeros((rows.shape[0], 1)), np.cumsum(rows * dt, axis=1)], axis=1)
    x = np.concatenate([t_fine, [t_fine[-1] + dt]])
    values = np.stack([np.interp(times, x, e) for e in edges])
    offset = rng.uniform(1e3, 1e6, size=(rows.shape[0], 1))
    values += offset
    if restart is not None:
        after = times >= restart
        at = np.stack([np.interp([restart], x, e) for e in edges]) + offset
        values[:, after] = np.maximum(values[:, after] - at, 0.0)
    return values


def family_signals(families: frozenset[Family]) -> dict[str, tuple[str, ...]]:
    """The signals each present exporter publishes, by exporter short name."""
    out: dict[str, list[str]] = {}
    for name, spec in SIGNALS.items():
        if spec.family in families:
            out.setdefault(spec.family.exporter_name, []).append(name)
    return {k: tuple(v) for k, v in out.items()}
