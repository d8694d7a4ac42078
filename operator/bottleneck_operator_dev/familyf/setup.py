"""How the job's cluster is set up to watch it: which exporters run, how often, and what goes wrong.

Clusters differ in what they collect (dcgm-exporter's shipped counters files carry no SM activity;
the sidecar is opt-out; kube-state-metrics or node-exporter's pressure collector may be missing;
the infiniband collector only matters on RDMA fabrics), in scrape intervals (5 to 60 s), and in
accidents: missed scrapes, an exporter restarted mid-window, a trainer container restarted.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.signals import Family
from bottleneck_operator_dev.familyf.design import Design

EXPORTERS = ("dcgm", "cadvisor", "ksm", "node", "sidecar")


@dataclass(frozen=True)
class Watch:
    """The job's monitoring set-up.

    Attributes:
        families: the signal families exported for this job.
        field_set: dcgm-exporter's counters file: "dev" (no profiling), "default" or "full".
        interval: exporter -> scrape interval (s).
        collect: dcgm-exporter's collection interval (s): readings repeat between collections.
        miss: exporter -> share of scrapes missed.
        down: (exporter, start, end) of a restart gap, or None.
        container_restart: (pod, time) the trainer container restarted (its cAdvisor counters
            restart from zero), or None.
        stuck_engine: dcgm-exporter on the first pod's node reads ``GR_ENGINE_ACTIVE`` as 0 (a known
            fault after weeks of uptime, dcgm-exporter issue 662).
    """

    families: frozenset[Family]
    field_set: str
    interval: dict[str, float]
    collect: float
    miss: dict[str, float]
    down: tuple[str, float, float] | None
    container_restart: tuple[int, float] | None
    stuck_engine: bool


def _families(rng: np.random.Generator, d: Design, field_set: str) -> frozenset[Family]:
    fam = {Family.DCGM_DEV}
    if field_set != "dev":
        fam.add(Family.DCGM_PROF)
    if field_set == "full":
        fam.add(Family.DCGM_PROF_SM)
        fam |= {
            f
            for f, p in ((Family.DCGM_PROF_NVLINK, 0.6), (Family.DCGM_PROF_PIPES, 0.5), (Family.DCGM_POWER_CLOCKS, 0.6))
            if rng.random() < p
        }
    if rng.random() < 0.95:
        fam.add(Family.CADVISOR)
        if d.cpu_limit is not None:
            fam.add(Family.CADVISOR_CFS)
    if rng.random() < 0.9:
        fam.add(Family.KSM)
    if rng.random() < 0.92:
        fam.add(Family.NODE)
        if rng.random() < 0.85:
            fam.add(Family.NODE_PSI)
        if d.fabric.rdma and rng.random() < 0.8:
            fam.add(Family.NODE_IB)
    if rng.random() < 0.65:
        fam.add(Family.SIDECAR)
    return frozenset(fam)


def draw_watch(rng: np.random.Generator, d: Design, start: float, end: float) -> Watch:
    """The set-up one job is watched with."""
    field_set = str(rng.choice(["dev", "default", "full"], p=[0.2, 0.45, 0.35]))
    interval = {
        "dcgm": float(rng.choice([5.0, 10.0, 15.0, 30.0, 60.0], p=[0.1, 0.15, 0.35, 0.3, 0.1])),
        "cadvisor": float(rng.choice([10.0, 15.0, 30.0, 60.0], p=[0.15, 0.3, 0.4, 0.15])),
        "ksm": float(rng.choice([15.0, 30.0, 60.0])),
        "node": float(rng.choice([5.0, 15.0, 30.0, 60.0], p=[0.1, 0.4, 0.4, 0.1])),
        "sidecar": float(rng.choice([5.0, 15.0, 30.0], p=[0.2, 0.5, 0.3])),
    }
    collect = 30.0 if rng.random() < 0.6 else min(interval["dcgm"], 30.0)
    miss = {e: float(rng.choice([0.0, 0.01, 0.04], p=[0.5, 0.35, 0.15])) for e in EXPORTERS}
    down = None
    if rng.random() < 0.15:
        when = float(rng.uniform(start, end))
        down = (str(rng.choice(EXPORTERS)), when, when + float(rng.uniform(45.0, 180.0)))
    restart = None
    if rng.random() < 0.06:
        restart = (int(rng.integers(d.pods)), float(rng.uniform(start, end)))
    stuck = field_set != "dev" and rng.random() < 0.03
    return Watch(_families(rng, d, field_set), field_set, interval, collect, miss, down, restart, stuck)
