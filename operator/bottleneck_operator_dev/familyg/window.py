"""From raw scrapes to the window the data layer would hand over: rates, last samples, ratios.

Counters are read with the contract's ``rate()`` over ``rate_range(step, si)`` and gauges with
``last_over_time`` over ``gauge_window(step, si)`` (contract/sampling.py), so the numbers are made
as they would be from a real Prometheus. Which signals a pod carries depends on what the cluster
exports: a family that is not there is absent from the mapping, not NaN.
"""

from __future__ import annotations

import numpy as np

from bottleneck_operator.contract.sampling import Sampler, gauge_window, rate_range
from bottleneck_operator.contract.signals import SIGNALS, Family
from bottleneck_operator_dev.familyg.design import Design
from bottleneck_operator_dev.familyg.node_view import JobLevels
from bottleneck_operator_dev.familyg.scrape import COUNTERS, GAUGES, Schedule, Scrapes, exporter_scrapes, scrape_times

EXPORTER_OF = {
    "dcgm": Family.DCGM_DEV,
    "cadvisor": Family.CADVISOR,
    "ksm": Family.KSM,
    "node": Family.NODE,
    "sidecar": Family.SIDECAR,
}


def schedule(rng: np.random.Generator, start: float, end: float) -> Schedule:
    """Checkpoints every 10-60 minutes for 10-180 s (70 % of jobs), a container restart in 6 %."""
    period = float(rng.uniform(600, 3600)) if rng.random() < 0.7 else float("inf")
    restart = None
    if rng.random() < 0.06:
        at = float(rng.uniform(start, end))
        restart = (at, at + float(rng.uniform(60, 240)))
    return Schedule(period, float(rng.uniform(10, 180)), start - float(rng.uniform(0, 3600)), restart)


def present(d: Design) -> frozenset[Family]:
    """The signal families this job's cluster exports for it."""
    c = d.cluster
    fams = {Family.DCGM_DEV, Family.CADVISOR, Family.NODE}
    if c.dcgm_fields in ("default", "full"):
        fams.add(Family.DCGM_PROF)
    if c.dcgm_fields == "full":
        fams |= {Family.DCGM_PROF_SM, Family.DCGM_PROF_PIPES}
        if c.board.nvlink_bps > 0:
            fams.add(Family.DCGM_PROF_NVLINK)
    if c.power_fields:
        fams.add(Family.DCGM_POWER_CLOCKS)
    if d.cpu_limit is not None:
        fams.add(Family.CADVISOR_CFS)
        if c.ksm:
            fams.add(Family.KSM)
    if c.psi:
        fams.add(Family.NODE_PSI)
    if c.ib_collector and (c.fabric.ib_counters or c.storage.rdma):
        fams.add(Family.NODE_IB)
    if c.sidecar:
        fams.add(Family.SIDECAR)
    return frozenset(fams)


def _wanted(key: str, fams: frozenset[Family]) -> bool:
    base = key.split("#")[0]
    name = "node_cpu_busy_frac" if base == "node_cpu" else base
    spec = SIGNALS.get(name)
    if spec is None or spec.family not in fams:
        return False
    return not (name.startswith("sc_psi") and Family.NODE_PSI not in fams)  # no PSI in the kernel, none in cgroups


def raw_scrapes(
    d: Design, jl: JobLevels, rng: np.random.Generator, start: float, end: float, step: float
) -> dict[str, Scrapes]:
    """Every exporter's samples for the job: its grid, its restarts, its gaps.

    Args:
        d: the design.
        jl: its levels.
        rng: the job's generator.
        start: window start.
        end: window end.
        step: the window's step.

    Returns:
        Exporter short name -> its scrapes (exporters with nothing to export are left out).
    """
    si = d.cluster.scrape
    lead = rate_range(step, si) + 2 * si
    sched = schedule(rng, start, end)
    fams = present(d)
    # an exporter restarted mid-window: a gap, and the collector's own counters start again from zero
    restarted = ("dcgm", "node", "sidecar", "ksm")[int(rng.integers(4))] if rng.random() < 0.2 else ""
    out: dict[str, Scrapes] = {}
    for exporter, gauges in GAUGES.items():
        keys = tuple(k for k in (*gauges, *COUNTERS[exporter]) if _wanted(k, fams))
        if not keys:
            continue
        times = scrape_times(rng, start, end, si, lead)
        resets: tuple[int, ...] = ()
        if exporter == restarted:
            cut = int(rng.integers(times.size // 3, max(times.size // 3 + 1, times.size - 2)))
            gap = int(rng.integers(1, 4))
            times = np.delete(times, np.arange(cut, min(cut + gap, times.size - 1)))
            resets = (cut,) if exporter == "sidecar" else ()
        if exporter == "cadvisor" and sched.restart is not None:
            # the trainer container restarted: a new container, its counters from zero
            after = int(np.searchsorted(times, sched.restart[0]))
            resets = (after,) if 0 < after < times.size else ()
        out[exporter] = exporter_scrapes(
            rng,
            jl,
            times,
            keys,
            frozenset(COUNTERS[exporter]),
            sched,
            hold=d.cluster.dcgm_collect if exporter == "dcgm" else 0.0,
            resets=resets,
            gpus=d.gpus,
            caps={"sm_clock_mhz": d.cluster.board.max_clock},
        )
    return out


def sample(scrapes: dict[str, Scrapes], at: np.ndarray, step: float, si: float) -> list[dict[str, np.ndarray]]:
    """Per pod: signal name -> values at ``at``, read as the data layer reads them."""
    rr, gw = rate_range(step, si), gauge_window(step, si)
    pods: list[dict[str, np.ndarray]] = []
    for sc in scrapes.values():
        s = Sampler(sc.times, at, range_seconds=rr, window=gw)
        cmask = np.array([k in sc.counters for k in sc.keys])
        read = np.empty((len(sc.keys), sc.values.shape[1], at.size))
        if cmask.any():
            read[cmask] = s.rate(sc.values[cmask])
        if (~cmask).any():
            read[~cmask] = s.last(sc.values[~cmask])
        while len(pods) < sc.values.shape[1]:
            pods.append({})
        for p, signals in enumerate(pods):
            _assemble(signals, sc.keys, read[:, p])
    return pods


def _assemble(signals: dict[str, np.ndarray], keys: tuple[str, ...], read: np.ndarray) -> None:
    rows = dict(zip(keys, read, strict=True))
    for key, row in rows.items():
        if "#" not in key:
            signals[key] = row
            continue
        base, half = key.split("#")
        if half != "num":
            continue
        den = rows["node_cpu#den" if base.startswith("node_cpu") else f"{base}#den"]
        with np.errstate(divide="ignore", invalid="ignore"):
            signals[base] = np.where(den > 0, row / den, np.nan)
