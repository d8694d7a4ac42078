"""How the cluster watches the Job: scrape intervals, DCGM field sets, missing exporters, layouts."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.signals import Family

FIELD_SETS: dict[str, frozenset[Family]] = {
    "dev-only": frozenset({Family.DCGM_DEV}),
    "default": frozenset({Family.DCGM_DEV, Family.DCGM_PROF}),
    "chart": frozenset({Family.DCGM_DEV, Family.DCGM_PROF, Family.DCGM_PROF_SM, Family.DCGM_POWER_CLOCKS}),
    "full": frozenset(
        {
            Family.DCGM_DEV,
            Family.DCGM_PROF,
            Family.DCGM_PROF_SM,
            Family.DCGM_PROF_NVLINK,
            Family.DCGM_PROF_PIPES,
            Family.DCGM_POWER_CLOCKS,
        }
    ),
}


@dataclass(frozen=True)
class ScrapeConfig:
    """The monitoring stack around one Job.

    Attributes:
        interval: seconds between scrapes, per exporter short name.
        collect: dcgm-exporter's collection interval, seconds.
        field_set: which DCGM counters file is deployed (a key of ``FIELD_SETS``).
        present: exporters (and optional families) deployed.
        lost: share of scrapes lost at random.
        outage: per exporter, an interval (seconds after the window start) with no scrapes at all.
        collector_reset: the collector restarted at this time (its counters start from zero).
        ib_reset: the InfiniBand port counters were cleared at this time.
        layout: label layout each exporter's series came in.
        xid: an XID error code the GPUs reported (0: none).
    """

    interval: dict[str, float]
    collect: float
    field_set: str
    present: frozenset[Family]
    lost: float
    outage: dict[str, tuple[float, float]]
    collector_reset: float | None
    ib_reset: float | None
    layout: dict[str, str]
    xid: float


def draw_scrapes(rng: np.random.Generator, start: float, span: float, rdma: bool, cpu_limit: bool) -> ScrapeConfig:
    """One cluster's monitoring set-up, drawn from what real stacks run."""
    base = float(rng.choice([5.0, 10.0, 15.0, 30.0, 60.0], p=[0.08, 0.14, 0.33, 0.35, 0.1]))
    interval = {
        "dcgm": base,
        "cadvisor": base,
        "ksm": float(rng.choice([base, 30.0, 60.0])),
        "node": base if rng.random() < 0.7 else 30.0,
        "sidecar": base if rng.random() < 0.7 else float(rng.choice([5.0, 15.0])),
    }
    field_set = str(rng.choice(list(FIELD_SETS), p=[0.15, 0.35, 0.35, 0.15]))
    present: set[Family] = set(FIELD_SETS[field_set])
    optional = (
        (Family.CADVISOR, 0.95),
        (Family.KSM, 0.9),
        (Family.NODE, 0.95),
        (Family.SIDECAR, 0.7),
    )
    present |= {f for f, p in optional if rng.random() < p}
    if Family.NODE in present and rng.random() < 0.88:
        present.add(Family.NODE_PSI)
    if Family.NODE in present and rdma:
        present.add(Family.NODE_IB)
    if Family.CADVISOR in present and cpu_limit:
        present.add(Family.CADVISOR_CFS)
    if Family.SIDECAR in present and rng.random() < 0.7:
        present.add(Family.SIDECAR_NET)
    outage = {}
    for name in interval:
        if rng.random() < 0.1:
            at = float(rng.uniform(0.0, span))
            outage[name] = (start + at, start + at + float(rng.uniform(30.0, 240.0)))
    return ScrapeConfig(
        interval=interval,
        collect=float(rng.choice([1.0, 5.0, 10.0, 30.0], p=[0.15, 0.2, 0.25, 0.4])),
        field_set=field_set,
        present=frozenset(present),
        lost=float(rng.uniform(0.0, 0.03)),
        outage=outage,
        collector_reset=start + float(rng.uniform(0.0, span)) if rng.random() < 0.1 else None,
        ib_reset=start + float(rng.uniform(0.0, span)) if rdma and rng.random() < 0.06 else None,
        layout={
            "dcgm": "exported-labels" if rng.random() < 0.6 else "pod-labels",
            "node": "instance-ip" if rng.random() < 0.6 else "node-label",
            "cadvisor": "spec-dropped" if rng.random() < 0.6 else "spec-kept",
        },
        xid=float(rng.choice([13.0, 31.0, 43.0])) if rng.random() < 0.03 else 0.0,
    )
