"""What a platform team's cluster actually exports: drawn before the workload.

Real clusters differ in their exporter set-up more than in their hardware: dcgm-exporter with its
shipped counters file (no SM activity), with a custom one, or with the profiling fields off;
node-exporter with or without the pressure and InfiniBand collectors; cgroup v1 nodes without
per-cgroup PSI; a collector sidecar on only some pods; each exporter scraped at its own interval.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.signals import Family


@dataclass(frozen=True)
class Site:
    """One cluster's telemetry set-up.

    Attributes:
        dcgm_fields: "dev" (profiling fields off or unsupported), "default" (shipped counters
            file: no SM activity/occupancy, NVLink bytes or pipes) or "full" (a custom file).
        power_clocks: the enforced power limit and clock-event reasons are exported.
        dcgm_collect_s: dcgm-exporter's own collect interval: a faster scrape repeats its cache.
        node_exporter: node-exporter runs on the GPU nodes.
        node_psi: its pressure collector works (kernel >= 4.20 with PSI enabled).
        node_ib: its infiniband collector is on (only meaningful on RDMA fabrics).
        ksm: kube-state-metrics is scraped.
        cgroup_v1: nodes run cgroup v1: no per-cgroup pressure files for the sidecar.
        sidecar_share: share of the job's pods that got the collector.
        scrape_s: each exporter's scrape interval, seconds, by short exporter name.
        restart: (exporter name, window fraction) of one exporter restart, or None.
        power_cap: enforced power limit as a share of TDP (1.0: at TDP).
    """

    dcgm_fields: str
    power_clocks: bool
    dcgm_collect_s: float
    node_exporter: bool
    node_psi: bool
    node_ib: bool
    ksm: bool
    cgroup_v1: bool
    sidecar_share: float
    scrape_s: dict[str, float]
    restart: tuple[str, float] | None
    power_cap: float

    def has(self, family: Family, *, rdma: bool) -> bool:
        """Whether this site exports ``family`` at all (the sidecar is decided per pod)."""
        table = {
            Family.DCGM_DEV: True,
            Family.DCGM_PROF: self.dcgm_fields != "dev",
            Family.DCGM_PROF_SM: self.dcgm_fields == "full",
            Family.DCGM_PROF_NVLINK: self.dcgm_fields == "full",
            Family.DCGM_PROF_PIPES: self.dcgm_fields == "full",
            Family.DCGM_POWER_CLOCKS: self.power_clocks,
            Family.CADVISOR: True,
            Family.KSM: self.ksm,
            Family.NODE: self.node_exporter,
            Family.NODE_PSI: self.node_exporter and self.node_psi,
            Family.NODE_IB: self.node_exporter and self.node_ib and rdma,
        }
        return table.get(family, True)


_SCRAPES = (5.0, 10.0, 15.0, 15.0, 30.0, 30.0, 30.0, 60.0)


def draw_site(rng: np.random.Generator) -> Site:
    """A cluster's telemetry set-up, drawn from the spread seen across real installations."""
    fields = str(rng.choice(["dev", "default", "default", "default", "full", "full"]))
    base = float(rng.choice(_SCRAPES))
    scrape = {}
    for exporter in ("dcgm", "cadvisor", "ksm", "node", "sidecar"):
        # Most stacks share one interval; some scrape one exporter on its own schedule.
        scrape[exporter] = base if rng.random() < 0.6 else float(rng.choice(_SCRAPES))
    restart = None
    if rng.random() < 0.25:
        restart = (str(rng.choice(["dcgm", "node", "cadvisor", "sidecar"])), float(rng.uniform(0.2, 0.8)))
    cap = 1.0 if rng.random() < 0.55 else float(rng.uniform(0.6, 0.95))
    return Site(
        dcgm_fields=fields,
        power_clocks=bool(rng.random() < 0.45),
        dcgm_collect_s=float(rng.choice([1.0, 10.0, 30.0, 30.0])),
        node_exporter=bool(rng.random() < 0.88),
        node_psi=bool(rng.random() < 0.7),
        node_ib=bool(rng.random() < 0.6),
        ksm=bool(rng.random() < 0.9),
        cgroup_v1=bool(rng.random() < 0.2),
        sidecar_share=float(rng.choice([0.0, 0.5, 1.0, 1.0, 1.0])),
        scrape_s=scrape,
        restart=restart,
        power_cap=cap,
    )
