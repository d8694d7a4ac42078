"""What the exporters make of a Job's signals, and what Prometheus makes of the exporters.

Drawn per Job: which families exist (dcgm-exporter's DEV-only, default or full field set; the
collector opted out; no PSI on an old kernel; the infiniband collector off; no CPU limit, so no CFS
series), each exporter's scrape interval (5-60 s), dcgm-exporter's collect interval (it repeats its
cached value between collects), missed scrapes and an exporter outage, counter resets (a restarted
container or collector, cleared port counters). Counters are integrated from the fine grid and read
with the contract's ``rate()``; gauges are read with its ``last_over_time``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.sampling import Sampler, gauge_window, rate_range
from bottleneck_operator.contract.signals import SIGNALS, Family, Kind
from bottleneck_operator_dev.familyaf.cluster import Cluster
from bottleneck_operator_dev.familyaf.timeline import CELL, Timeline

FloatArray = npt.NDArray[np.float64]
F = Family
INTERVALS = (5.0, 10.0, 15.0, 30.0, 60.0)
FIELD_SETS = {
    "dev-only": frozenset({F.DCGM_DEV}),
    "default": frozenset({F.DCGM_DEV, F.DCGM_PROF}),
    "full": frozenset({F.DCGM_DEV, F.DCGM_PROF, F.DCGM_PROF_SM, F.DCGM_PROF_PIPES, F.DCGM_POWER_CLOCKS}),
}
# Counters an exporter restart or a cleared port sets back to zero (node-exporter's come from the
# kernel and survive its restarts; the infiniband ports' can be cleared).
RESETTABLE = {"cadvisor": 0.08, "sidecar": 0.1, "node_ib": 0.05}


@dataclass(frozen=True)
class Setup:
    """The exporters of one Job.

    Attributes:
        fields: dcgm-exporter's field set ("dev-only", "default", "full").
        families: the families exported.
        interval: scrape interval per exporter short name ("dcgm", "node", ...).
        collect: dcgm-exporter's collect interval, seconds.
        miss: share of scrapes missed.
        outage: (exporter, start, end) of an exporter outage, or None.
        resets: (exporter key, time) of counter resets: "cadvisor", "sidecar" or "node_ib".
        layout: label layout per exporter, as the data quality reports it.
    """

    fields: str
    families: frozenset[Family]
    interval: Mapping[str, float]
    collect: float
    miss: float
    outage: tuple[str, float, float] | None
    resets: tuple[tuple[str, float], ...]
    layout: Mapping[str, str]


def _families(rng: np.random.Generator, cl: Cluster) -> tuple[str, frozenset[Family]]:
    fields = ("dev-only", "default", "full")[int(rng.choice(3, p=(0.2, 0.45, 0.35)))]
    fams = set(FIELD_SETS[fields])
    if fields == "full" and cl.gpu.nvlink_bps > 0:
        fams.add(F.DCGM_PROF_NVLINK)
    if fields == "default" and rng.random() < 0.3:
        fams.add(F.DCGM_POWER_CLOCKS)
    for fam, chance in ((F.CADVISOR, 0.95), (F.KSM, 0.9), (F.NODE, 0.97), (F.NODE_PSI, 0.9), (F.SIDECAR, 0.85)):
        if rng.random() < chance:
            fams.add(fam)
    if F.CADVISOR in fams and cl.cpu_limit is not None:
        fams.add(F.CADVISOR_CFS)
    if F.NODE in fams and cl.fabric is not None and cl.fabric.rdma and rng.random() < 0.7:
        fams.add(F.NODE_IB)
    if F.NODE not in fams:
        fams.discard(F.NODE_PSI)
    if F.SIDECAR in fams and rng.random() < 0.5:
        fams.add(F.SIDECAR_NET)
    return fields, frozenset(fams)


def draw_setup(rng: np.random.Generator, cl: Cluster, start: float, end: float) -> Setup:
    """The exporters of one Job over a window from ``start`` to ``end``."""
    fields, fams = _families(rng, cl)
    common = float(rng.choice(INTERVALS, p=(0.1, 0.15, 0.3, 0.35, 0.1)))
    interval = {
        name: (common if rng.random() < 0.7 else float(rng.choice(INTERVALS)))
        for name in ("dcgm", "cadvisor", "ksm", "node", "sidecar")
    }
    outage = None
    if rng.random() < 0.15:
        at = float(rng.uniform(start, end))
        outage = (("dcgm", "node", "cadvisor", "sidecar")[int(rng.integers(4))], at, at + rng.uniform(120, 480))
    resets = tuple((k, float(rng.uniform(start, end))) for k, chance in RESETTABLE.items() if rng.random() < chance)
    layout = {
        "dcgm": "exported-labels" if rng.random() < 0.6 else "pod-labels",
        "node": "pod-join" if rng.random() < 0.7 else "node-label",
    }
    miss = float(rng.choice((0.0, 0.01, 0.03)))
    collect = float(rng.choice((1.0, 5.0, 10.0, 30.0), p=(0.1, 0.2, 0.2, 0.5)))
    return Setup(fields, fams, interval, collect, miss, outage, resets, layout)


def scrape_times(rng: np.random.Generator, setup: Setup, exporter: str, tl: Timeline, end: float) -> FloatArray:
    """One target's scrape times from the grid's start to ``end``, with misses and an outage."""
    si = setup.interval[exporter]
    t = tl.t0 + rng.uniform(0, si) + si * np.arange(int((end - tl.t0) / si) + 1)
    t = t + rng.normal(0, 0.002 * si, t.size)
    keep = rng.random(t.size) >= setup.miss
    if setup.outage is not None and setup.outage[0] == exporter:
        keep &= (t < setup.outage[1]) | (t > setup.outage[2])
    t = np.round(t[keep & (t <= end)], 3)
    return np.asarray(t[np.concatenate([[True], np.diff(t) > 0])], dtype=np.float64)


def _reset_key(family: Family) -> str:
    return "node_ib" if family is F.NODE_IB else family.exporter_name


def counter_samples(
    values: FloatArray, tl: Timeline, times: FloatArray, resets: tuple[float, ...], start: float
) -> FloatArray:
    """A counter's samples at ``times``: the grid's per-second values integrated from ``start``.

    Args:
        values: per-second values on the grid, shape (cells,).
        tl: the grid.
        times: the sample times.
        resets: times at which the counter restarts from zero.
        start: the counter's value at the grid's start.
    """
    cum = np.concatenate([[0.0], np.cumsum(values) * CELL]) + start
    c = np.interp(times, tl.edges, cum)
    for at in resets:
        after = times >= at
        if after.any():
            c = np.where(after, c - float(np.interp(at, tl.edges, cum)), c)
    return np.asarray(c, dtype=np.float64)


def sample_pod(
    rng: np.random.Generator,
    setup: Setup,
    tl: Timeline,
    series: Mapping[str, FloatArray],
    ts: FloatArray,
    step: float,
) -> dict[str, FloatArray]:
    """One pod's window: each exported signal sampled as Prometheus reads it at the window's times."""
    out: dict[str, FloatArray] = {}
    samplers: dict[str, tuple[Sampler, FloatArray]] = {}
    for name, grid in series.items():
        spec = SIGNALS[name]
        if spec.family not in setup.families:
            continue
        exporter = spec.family.exporter_name
        if exporter not in samplers:
            times = scrape_times(rng, setup, exporter, tl, float(ts[-1]))
            si = setup.interval[exporter]
            rs = rate_range(step, si)
            samplers[exporter] = (Sampler(times, ts, range_seconds=rs, window=gauge_window(step, si)), times)
        sampler, times = samplers[exporter]
        if spec.kind is Kind.COUNTER:
            resets = tuple(at for key, at in setup.resets if key == _reset_key(spec.family))
            counter = counter_samples(grid, tl, times, resets, float(rng.uniform(0, 1e6)) * max(grid.mean(), 1e-3))
            out[name] = sampler.rate(counter)
        else:
            out[name] = sampler.last(_gauge_samples(rng, setup, tl, grid, times, spec.family))
    return out


def _gauge_samples(
    rng: np.random.Generator, setup: Setup, tl: Timeline, grid: FloatArray, times: FloatArray, family: Family
) -> FloatArray:
    """A gauge's samples: dcgm-exporter repeats the value of its last collect, read over a short period."""
    if family.exporter_name != "dcgm":
        return np.asarray(grid[tl.cell_of(times)], dtype=np.float64)
    ci = setup.collect
    collected = np.floor((times - tl.t0) / ci) * ci + tl.t0
    v = grid[tl.cell_of(collected)]
    if SIGNALS_NOISY.get(family, False):
        v = v * np.exp(rng.normal(0.0, 0.06, v.shape))
    return np.asarray(v, dtype=np.float64)


# dcgm fields read over a short sample period (1/6 s to 1 s): noisier than the grid's 5 s cells.
SIGNALS_NOISY = {F.DCGM_DEV: True, F.DCGM_PROF: True, F.DCGM_PROF_SM: True, F.DCGM_PROF_PIPES: True}
