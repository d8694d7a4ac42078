"""What differs between real clusters: field sets, scrape intervals, label layouts, missing families.

None of it changes the Job's step (the label); all of it changes what the window shows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.signals import Family
from bottleneck_operator_dev.familyao.exporters import Scrapes
from bottleneck_operator_dev.familyao.hardware import Fabric, Sharing
from bottleneck_operator_dev.familyao.plan import Plan

# dcgm-exporter field sets (TELEMETRY.md): DEV fields only (no profiling, e.g. GeForce-class or a
# counters file without PROF), the shipped default (GR_ENGINE, tensor, DRAM, PCIe), or a custom file
# with full profiling (SM activity and occupancy, pipes, NVLink bytes).
FIELD_SETS = {
    "dev-only": frozenset({Family.DCGM_DEV}),
    "default": frozenset({Family.DCGM_DEV, Family.DCGM_PROF}),
    "full-profiling": frozenset(
        {Family.DCGM_DEV, Family.DCGM_PROF, Family.DCGM_PROF_SM, Family.DCGM_PROF_PIPES, Family.DCGM_PROF_NVLINK}
    ),
}
DCGM_SCRAPES = (5.0, 10.0, 15.0, 30.0, 60.0)  # the brief's 5-60 s; the chart's ServiceMonitor: 15 s
PROM_SCRAPES = (10.0, 15.0, 30.0, 60.0)  # kube-prometheus-stack's default: 30 s

LAYOUTS = {
    "dcgm": ("exported-labels", "pod-labels"),  # honorLabels false (chart default) or true
    "node": ("instance-ip", "node-label"),
    "cadvisor": ("pod-cgroup", "containers"),
}


@dataclass(frozen=True)
class Cluster:
    """One cluster's telemetry set-up as a Job sees it."""

    families: frozenset[Family]
    field_set: str
    scrapes: Scrapes
    layout: dict[str, str]
    tags: tuple[str, ...]


def _families(rng: np.random.Generator, plan: Plan, field_set: str) -> tuple[frozenset[Family], list[str]]:
    """The exported families: the field set, then what this cluster lacks."""
    fams = set(FIELD_SETS[field_set]) | {Family.CADVISOR, Family.KSM, Family.NODE, Family.NODE_PSI, Family.SIDECAR}
    fams |= {Family.SIDECAR_NET}
    tags: list[str] = []
    if not plan.board.prof:  # T4: GR_ENGINE_ACTIVE only; handled by dropping the other PROF fields
        fams -= {Family.DCGM_PROF_SM, Family.DCGM_PROF_PIPES, Family.DCGM_PROF_NVLINK}
    if rng.random() < 0.5:
        fams.add(Family.DCGM_POWER_CLOCKS)
    if plan.cpu_limit is not None:
        fams.add(Family.CADVISOR_CFS)
    if plan.fabric in (Fabric.INFINIBAND, Fabric.ROCE) or rng.random() < 0.15:
        fams.add(Family.NODE_IB)  # an idle HCA on the node still exports its ports
    for fam, p in ((Family.SIDECAR, 0.15), (Family.SIDECAR_NET, 0.35), (Family.NODE_PSI, 0.1), (Family.KSM, 0.1)):
        if fam in fams and rng.random() < p:
            fams.discard(fam)
            tags.append(f"missing-{fam.value}")
    if Family.SIDECAR not in fams:
        fams.discard(Family.SIDECAR_NET)
    if plan.cpu_limit is None:
        fams.discard(Family.KSM)  # its one signal is the CPU limit
    return frozenset(fams), tags


def draw_cluster(rng: np.random.Generator, plan: Plan) -> Cluster:
    """Draw the cluster's field set, scrape intervals and phases, label layouts and gaps."""
    field_set = str(rng.choice(list(FIELD_SETS), p=[0.3, 0.4, 0.3]))
    families, tags = _families(rng, plan, field_set)
    dcgm_si = float(rng.choice(DCGM_SCRAPES))
    prom_si = float(rng.choice(PROM_SCRAPES))
    interval = {"dcgm": dcgm_si, "cadvisor": prom_si, "ksm": prom_si, "node": prom_si, "sidecar": prom_si}
    phase = {e: float(np.round(rng.uniform(0, s), 3)) for e, s in interval.items()}
    collect = float(rng.choice([10.0, 30.0]))
    scrapes = Scrapes(interval, phase, collect, int(rng.choice([2, 3])))
    layout = {e: str(rng.choice(opts)) for e, opts in LAYOUTS.items()}
    tags += [f"fields-{field_set}", f"dcgm-scrape-{int(dcgm_si)}s", f"scrape-{int(prom_si)}s"]
    if plan.sharing is Sharing.MIG:
        tags.append("no-gpu-util")
    return Cluster(families, field_set, scrapes, layout, tuple(tags))
