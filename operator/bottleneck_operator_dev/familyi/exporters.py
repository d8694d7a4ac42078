"""Which exporters a family-I cluster runs, how it scrapes them, and what goes wrong mid-window.

Clusters differ: dcgm-exporter with its DEV fields only (an old release, or profiling unsupported),
its shipped counters file (DEV plus the default PROF fields) or a full custom file (SM activity,
pipes, NVLink bytes, power limit and clock-event reasons); cAdvisor always, its CFS counters only
under a CPU limit; kube-state-metrics' limits only for containers that set one; node-exporter with
or without PSI (kernel >= 4.20) and its infiniband collector on RDMA nodes; the sidecar only in pods
that did not opt out. Exporters restart (a gap, stale series), containers restart (cAdvisor's
counters start again from zero, with a pause in the work), and port counters are cleared.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.signals import Family
from bottleneck_operator_dev.familyi.plan import Plan
from bottleneck_operator_dev.familyi.scrape import Exporter, FloatArray, schedule

FIELD_SETS = ("dev-only", "default", "full")


@dataclass(frozen=True)
class Stack:
    """The job's monitoring stack over its window.

    Attributes:
        families: the families whose series exist.
        field_set: dcgm-exporter's counters file.
        exporters: each exporter's scrape schedule, by short name ("dcgm", "cadvisor", "ksm", "node", "sidecar").
        pauses: the job's pauses (checkpoints, a container restart), rows of [start, end).
        tags: what went wrong or differs, for the job's tags.
    """

    families: frozenset[Family]
    field_set: str
    exporters: dict[str, Exporter]
    pauses: FloatArray
    tags: tuple[str, ...]


def _families(rng: np.random.Generator, plan: Plan, field_set: str) -> set[Family]:
    fams = {Family.DCGM_DEV}
    if field_set != "dev-only":
        fams.add(Family.DCGM_PROF)
    if field_set == "full":
        fams |= {Family.DCGM_PROF_SM, Family.DCGM_PROF_PIPES, Family.DCGM_POWER_CLOCKS}
        if plan.board.nvlink_bps > 0 and rng.random() < 0.5:
            fams.add(Family.DCGM_PROF_NVLINK)
    elif rng.random() < 0.25:
        fams.add(Family.DCGM_POWER_CLOCKS)
    if rng.random() < 0.95:
        fams.add(Family.CADVISOR)
        if plan.cpu_limit is not None:
            fams.add(Family.CADVISOR_CFS)
    if plan.cpu_limit is not None and rng.random() < 0.85:
        fams.add(Family.KSM)
    if rng.random() < 0.92:
        fams.add(Family.NODE)
        if rng.random() < 0.9:
            fams.add(Family.NODE_PSI)
        if plan.fabric.rdma and rng.random() < 0.85:
            fams.add(Family.NODE_IB)
    if rng.random() < 0.7:
        fams.add(Family.SIDECAR)
    return fams


def _pauses(rng: np.random.Generator, start: float, end: float) -> tuple[FloatArray, list[str]]:
    rows: list[tuple[float, float]] = []
    tags: list[str] = []
    if rng.random() < 0.5:
        every, length = rng.uniform(600.0, 2400.0), rng.uniform(20.0, 150.0)
        t = start + rng.uniform(0.0, every)
        while t < end:
            rows.append((t, t + length))
            t += every
        tags.append("checkpoint-pauses")
    restart_at = None
    if rng.random() < 0.06:
        restart_at = float(rng.uniform(start + 0.2 * (end - start), start + 0.8 * (end - start)))
        rows.append((restart_at, restart_at + rng.uniform(60.0, 240.0)))
        tags.append("container-restart")
    arr = np.asarray(rows, dtype=np.float64).reshape(-1, 2)
    return arr, tags + ([f"restart@{restart_at:.0f}"] if restart_at is not None else [])


def draw_stack(rng: np.random.Generator, plan: Plan, start: float, end: float) -> Stack:
    """The job's exporters, scrape schedules and pauses."""
    field_set = str(rng.choice(FIELD_SETS, p=[0.15, 0.45, 0.4]))
    fams = _families(rng, plan, field_set)
    pauses, ptags = _pauses(rng, start, end)
    restart_at = next((float(t.split("@")[1]) for t in ptags if t.startswith("restart@")), None)
    tags = [t for t in ptags if not t.startswith("restart@")]
    exporters: dict[str, Exporter] = {}
    for name in ("dcgm", "cadvisor", "ksm", "node", "sidecar"):
        down = bool(rng.random() < 0.12)
        reset = restart_at if name == "cadvisor" else None
        exporters[name] = schedule(rng, plan.scrape[name], start, end, restart=down, reset_at=reset)
        if down:
            tags.append(f"{name}-exporter-restart")
    if Family.NODE_IB in fams and rng.random() < 0.1:
        # port counters cleared (perfquery -R): node-exporter's infiniband counters start again from zero
        exporters["ib"] = schedule(
            rng, plan.scrape["node"], start, end, restart=False, reset_at=float(rng.uniform(start, end))
        )
        tags.append("ib-counters-cleared")
    else:
        exporters["ib"] = exporters["node"]
    if restart_at is not None:
        tags.append("counter-reset")
    return Stack(frozenset(fams), field_set, exporters, pauses, tuple(tags))
