"""How the cluster exports and how Prometheus scrapes: the job's tick, scrapes, counters and caches.

The job runs on a 5 s tick. Counters integrate a unit's rate over the ticks (restarting from zero
when an exporter restarts); gauges are read at the scrape instant, except dcgm-exporter's fields,
which are busy shares averaged over the exporter's own collection interval and cached between
collections.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.window import FloatArray

TICK = 5.0


@dataclass(frozen=True)
class Cluster:
    """How the cluster exports: one draw per job."""

    scrape: float  # seconds between scrapes (all exporters; one ServiceMonitor interval)
    collect: float  # dcgm-exporter's collection interval
    fields: str  # "dev", "default" or "full"
    power_fields: bool
    psi: bool  # node-exporter pressure (kernel >= 4.20)
    ib: bool  # node-exporter's infiniband collector on
    sidecar: bool
    ksm: bool
    neighbours: int  # other pods on each node
    restarts: tuple[str, ...]  # exporters that restart once in the window
    miss: float  # share of scrapes missed


def draw_cluster(rng: np.random.Generator) -> Cluster:
    scrape = float(rng.choice([10.0, 15.0, 20.0, 30.0, 30.0, 60.0]))
    exporters = ("dcgm", "cadvisor", "node", "sidecar")
    return Cluster(
        scrape=scrape,
        collect=float(rng.choice([10.0, 15.0, 30.0, 30.0])),
        fields=str(rng.choice(["dev", "default", "default", "full", "full"])),
        power_fields=bool(rng.random() < 0.5),
        psi=bool(rng.random() < 0.85),
        ib=bool(rng.random() < 0.85),
        sidecar=bool(rng.random() < 0.8),
        ksm=bool(rng.random() < 0.95),
        neighbours=int(rng.integers(1, 6)) if rng.random() < 0.4 else 0,
        restarts=tuple(e for e in exporters if rng.random() < 0.08),
        miss=float(rng.uniform(0.0, 0.05)),
    )


def phases(rng: np.random.Generator, ticks: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Per tick: training share, evaluation share, checkpoint share (they sum to one)."""
    train = np.ones_like(ticks)
    evals = np.zeros_like(ticks)
    ckpt = np.zeros_like(ticks)
    period, length = rng.uniform(600, 1800), rng.uniform(20, 150)
    offset = rng.uniform(0, period)
    ckpt[((ticks - ticks[0] + offset) % period) < length] = 1.0
    if rng.random() < 0.4:
        eperiod, elength = rng.uniform(900, 2400), rng.uniform(60, 240)
        eoff = rng.uniform(0, eperiod)
        evals[(((ticks - ticks[0] + eoff) % eperiod) < elength) & (ckpt == 0)] = 1.0
    train -= ckpt + evals
    return train, evals, ckpt


def scrapes(rng: np.random.Generator, t0: float, t1: float, si: float, miss: float) -> FloatArray:
    times = np.arange(t0 + rng.uniform(0, si), t1 + si, si)
    times = times + rng.normal(0.0, 0.01 * si, size=times.size)
    keep = rng.random(times.size) >= miss
    times = np.round(times[keep] * 1000.0) / 1000.0
    return np.asarray(times[times <= t1], dtype=np.float64)


def integral(ticks: FloatArray, rates: FloatArray, at: FloatArray) -> FloatArray:
    """The integral from the first tick of each row of ``rates`` (rows x ticks), read at ``at``."""
    cum = np.concatenate([np.zeros((rates.shape[0], 1)), np.cumsum(rates * TICK, axis=1)], axis=1)
    pos = np.clip((at - ticks[0]) / TICK, 0.0, ticks.size - 1e-9)
    idx = pos.astype(np.int64)
    frac = pos - idx
    return np.asarray(cum[:, idx] * (1.0 - frac) + cum[:, idx + 1] * frac, dtype=np.float64)


def counters(ticks: FloatArray, rates: FloatArray, at: FloatArray, reset: float | None) -> FloatArray:
    """Counters integrating ``rates`` read at ``at``, restarting from zero at ``reset``."""
    values = integral(ticks, rates, at) + 1e3  # the counters started before the window
    if reset is not None:
        values = np.where(at >= reset, values - integral(ticks, rates, np.array([reset])), values)
    return values


def gauge(ticks: FloatArray, value: FloatArray, at: FloatArray) -> FloatArray:
    idx = np.clip(np.searchsorted(ticks, at, side="right") - 1, 0, ticks.size - 1)
    return np.asarray(value[idx], dtype=np.float64)


def dcgm_cached(ticks: FloatArray, values: FloatArray, at: FloatArray, collect: float) -> FloatArray:
    """dcgm-exporter's cached values: each row's busy share averaged over the last collection interval."""
    tc = np.floor((at - ticks[0]) / collect) * collect + ticks[0]
    lo = np.maximum(tc - collect, ticks[0])
    span = np.maximum(tc - lo, TICK)
    return np.asarray((integral(ticks, values, tc) - integral(ticks, values, lo)) / span, dtype=np.float64)
