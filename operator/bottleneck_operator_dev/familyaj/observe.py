"""How a cluster observes a Job: which exporters and fields it runs, how often, and how it labels them.

Drawn per Job, because clusters differ: dcgm-exporter with its DEV fields only, its shipped
counters file (DEV and the usual PROF fields) or a full custom file (SM activity and occupancy,
NVLink bytes, pipe activities); power and clock-reason fields where exported; scrape intervals of
5 to 60 s (dcgm-exporter collects every 30 s by default); cAdvisor CFS counters only for
containers with a CPU limit; kube-state-metrics, node pressure (kernel >= 4.20), the infiniband
collector and the collector sidecar each sometimes missing; label layouts as the stacks make them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from bottleneck_operator_dev.familyaj.fleet import Placement
from bottleneck_operator_dev.familyaj.scrape import Schedule
from bottleneck_operator_dev.familyaj.workload import Workload

EXPORTERS = ("dcgm", "cadvisor", "ksm", "node", "sidecar")


@dataclass(frozen=True)
class Observation:
    """The observability setup of a Job's cluster.

    Attributes:
        field_set: "dev", "default" or "full" (dcgm-exporter counters file).
        power_clocks: whether the power limit and clock-event reasons are exported.
        ksm, node_psi, node_ib, sidecar, sidecar_net, spec_memory: whether each is there.
        schedules: per exporter, per pod, how its series were scraped.
        layout: the label layout of each exporter's series.
        notes: what a reader of the window would be told about it.
    """

    field_set: str
    power_clocks: bool
    ksm: bool
    node_psi: bool
    node_ib: bool
    sidecar: bool
    sidecar_net: bool
    spec_memory: bool
    schedules: dict[str, tuple[Schedule, ...]]
    layout: dict[str, str]
    notes: tuple[str, ...]


def _schedule(
    rng: np.random.Generator, interval: float, collect: float, first: float, duration: float, resets: bool
) -> Schedule:
    outage = None
    if rng.random() < 0.08 and duration > 600:
        a = float(rng.uniform(0.0, duration - 300.0))
        outage = (a, a + float(rng.uniform(60.0, 240.0)))
    reset = float(rng.uniform(0.1, 0.9) * duration) if (resets and rng.random() < 0.12 and duration > 300) else None
    return Schedule(
        interval=interval,
        offset=float(rng.uniform(0.0, interval)),
        miss=float(rng.choice([0.0, 0.0, 0.005, 0.02, 0.05])),
        outage=outage,
        collect=collect,
        reset_at=reset,
        first=first,
    )


def draw_observation(
    rng: np.random.Generator, pl: Placement, w: Workload, duration: float, first: float
) -> Observation:
    """A cluster's observability setup for one Job (``first``: seconds from the window start of the first scrape)."""
    field_set = str(rng.choice(["dev", "default", "default", "full", "full"]))
    intervals = {
        "dcgm": float(rng.choice([5.0, 10.0, 15.0, 15.0, 30.0, 30.0, 60.0])),
        "cadvisor": float(rng.choice([10.0, 15.0, 30.0, 30.0, 60.0])),
        "ksm": float(rng.choice([30.0, 30.0, 60.0])),
        "node": float(rng.choice([5.0, 15.0, 15.0, 30.0, 30.0, 60.0])),
        "sidecar": float(rng.choice([5.0, 10.0, 15.0, 30.0])),
    }
    collect = min(float(rng.choice([5.0, 10.0, 30.0, 30.0, 30.0])), max(intervals["dcgm"], 5.0))
    if intervals["dcgm"] > collect:
        collect = intervals["dcgm"]
    schedules: dict[str, tuple[Schedule, ...]] = {}
    for name in EXPORTERS:
        c = collect if name == "dcgm" else intervals[name]
        resets = name in ("cadvisor", "sidecar")
        schedules[name] = tuple(_schedule(rng, intervals[name], c, first, duration, resets) for _ in range(pl.pods))
    rdma = pl.kind.fabric != "tcp" or pl.storage.transport == "rdma"
    obs = Observation(
        field_set=field_set,
        power_clocks=bool(rng.random() < 0.5),
        ksm=bool(rng.random() < 0.93),
        node_psi=bool(rng.random() < 0.9),
        node_ib=rdma and bool(rng.random() < 0.75),
        sidecar=bool(rng.random() < 0.85),
        sidecar_net=bool(rng.random() < 0.7),
        spec_memory=bool(rng.random() < 0.4),
        schedules=schedules,
        layout={
            "dcgm": str(rng.choice(["exported-labels", "pod-labels"])),
            "node": str(rng.choice(["instance-ip", "node-label"])),
            "cadvisor": str(rng.choice(["containers+pod-cgroup", "containers"])),
            "dcgm_host": str(rng.choice(["Hostname", "hostname"])),
        },
        notes=(),
    )
    notes = []
    if field_set == "dev":
        notes.append("no PROF fields")
    elif field_set == "default":
        notes.append("no SM activity/occupancy (shipped counters file)")
    if not obs.sidecar:
        notes.append("no collector sidecar (opted out)")
    if not obs.ksm:
        notes.append("no kube-state-metrics")
    if not obs.node_psi:
        notes.append("no node pressure metrics")
    if rdma and not obs.node_ib:
        notes.append("infiniband collector off")
    return replace(obs, notes=tuple(notes))
