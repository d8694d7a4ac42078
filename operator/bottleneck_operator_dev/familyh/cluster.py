"""What differs between the clusters a job may run on: exporters, their settings, and accidents.

None of this touches the label: it decides only what the telemetry of a job looks like (which
families exist, how often they are scraped, which exporter restarted when), as real clusters
differ on exactly these points.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.signals import Family

Rng = np.random.Generator

# dcgm-exporter field sets: DEV fields only (profiling off, or a board/driver without it), the
# shipped counters file, or a custom file that adds SM activity, pipes, NVLink bytes, power and clocks.
FIELD_SETS = ("dev-only", "default", "full")


@dataclass(frozen=True)
class Cluster:
    """The monitoring stack and habits of the cluster one job ran on.

    Attributes:
        scrape_s: the ServiceMonitors' scrape interval (s).
        dcgm_collect_s: dcgm-exporter's own collection interval (s): faster scrapes repeat its values.
        field_set: one of :data:`FIELD_SETS`.
        families: the exporter families the cluster publishes at all.
        prometheus_major: the Prometheus major version that evaluates rate() (2 or 3).
        clocks_locked: the admins lock SM clocks (``nvidia-smi -lgc``), so clocks hardly move.
        power_cap_frac: the enforced power limit as a share of the board's TDP.
        swap: "none", "zram" or "disk": how the nodes swap (Kubernetes' NodeSwap, LimitedSwap).
        kernel_psi: the nodes' kernel exposes PSI (>= 4.20 and not disabled).
    """

    scrape_s: float
    dcgm_collect_s: float
    field_set: str
    families: frozenset[Family]
    prometheus_major: int
    clocks_locked: bool
    power_cap_frac: float
    swap: str
    kernel_psi: bool


def draw_power(rng: Rng) -> tuple[float, bool]:
    """The enforced power limit as a share of TDP (most clusters keep the default) and whether clocks are locked."""
    cap = 1.0 if rng.random() < 0.6 else float(rng.uniform(0.62, 0.95))
    return cap, bool(rng.random() < 0.12)


def draw_cluster(
    rng: Rng, power: tuple[float, bool], *, rdma: bool, prof_capable: bool, has_nvlink: bool, cpu_limit: bool
) -> Cluster:
    """One cluster's monitoring set-up, independent of what bounds the job."""
    scrape = float(rng.choice((5.0, 10.0, 15.0, 15.0, 20.0, 30.0, 30.0, 30.0, 60.0)))
    collect = float(rng.choice((30.0, 30.0, 30.0, 10.0, 15.0, 5.0)))
    field_set = str(rng.choice(FIELD_SETS, p=(0.22, 0.43, 0.35))) if prof_capable else "dev-only"
    fams: set[Family] = {Family.DCGM_DEV}
    if field_set != "dev-only":
        fams.add(Family.DCGM_PROF)
    if field_set == "full":
        fams |= {Family.DCGM_PROF_SM, Family.DCGM_PROF_PIPES, Family.DCGM_POWER_CLOCKS}
        if has_nvlink:
            fams.add(Family.DCGM_PROF_NVLINK)
    elif field_set == "default" and rng.random() < 0.3:
        fams.add(Family.DCGM_POWER_CLOCKS)
    if rng.random() < 0.95:
        fams.add(Family.CADVISOR)
        if cpu_limit:
            fams.add(Family.CADVISOR_CFS)
    if rng.random() < 0.9:
        fams.add(Family.KSM)
    kernel_psi = rng.random() < 0.88
    if rng.random() < 0.92:
        fams.add(Family.NODE)
        if kernel_psi:
            fams.add(Family.NODE_PSI)
        if rdma and rng.random() < 0.8:
            fams.add(Family.NODE_IB)
    if rng.random() < 0.65:
        fams.add(Family.SIDECAR)
    if rng.random() < 0.03:
        # dcgm-exporter not deployed on this pool at all: the job has no GPU telemetry
        fams -= {
            Family.DCGM_DEV,
            Family.DCGM_PROF,
            Family.DCGM_PROF_SM,
            Family.DCGM_PROF_PIPES,
            Family.DCGM_POWER_CLOCKS,
            Family.DCGM_PROF_NVLINK,
        }
    swap = str(rng.choice(("none", "zram", "disk"), p=(0.5, 0.25, 0.25)))
    return Cluster(
        scrape_s=scrape,
        dcgm_collect_s=collect,
        field_set=field_set,
        families=frozenset(fams),
        prometheus_major=int(rng.choice((2, 3))),
        clocks_locked=power[1],
        power_cap_frac=power[0],
        swap=swap,
        kernel_psi=kernel_psi,
    )


@dataclass(frozen=True)
class Accidents:
    """Things that happen to a job during the window; they shape telemetry, not the label.

    Attributes:
        checkpoint_every_s: seconds between checkpoint pauses (0: none in the window).
        checkpoint_s: how long one pause stops training (s).
        eval_every_s: seconds between evaluation passes (0: none in the window).
        eval_s: how long one evaluation pass runs (s): forward passes only, no gradients to exchange.
        warmup_s: seconds at the window's start spent loading a checkpoint before training.
        exporter_gap: (exporter short name, pod index, start offset s, length s), or None.
        container_restart: (pod index, offset s, down s): the trainer container restarts, its cAdvisor
            counters start again from zero; or None.
        ib_reset_at: offset (s) at which the IB port counters were cleared, or None.
        ib_saturating: the HCA exposes only legacy 32-bit port data counters, which stop at their maximum.
        missed_scrape_p: chance of any single scrape being lost.
        neighbours: other pods on each node (0: the node is the job's alone).
    """

    checkpoint_every_s: float
    checkpoint_s: float
    eval_every_s: float
    eval_s: float
    warmup_s: float
    exporter_gap: tuple[str, int, float, float] | None
    container_restart: tuple[int, float, float] | None
    ib_reset_at: float | None
    ib_saturating: bool
    missed_scrape_p: float
    neighbours: int


def draw_accidents(rng: Rng, *, span_s: float, pods: int, shared_node: bool, oom_prone: bool) -> Accidents:
    """What goes wrong, or just happens, during one window of ``span_s`` seconds."""
    every = float(rng.uniform(600, 2400)) if rng.random() < 0.3 else 0.0
    gap = None
    if rng.random() < 0.15:
        exporter = str(rng.choice(("dcgm", "node", "cadvisor", "sidecar", "ksm")))
        gap = (exporter, int(rng.integers(pods)), float(rng.uniform(0.1, 0.8) * span_s), float(rng.uniform(45, 300)))
    restart = None
    if rng.random() < (0.25 if oom_prone else 0.04):
        restart = (int(rng.integers(pods)), float(rng.uniform(0.2, 0.8) * span_s), float(rng.uniform(40, 150)))
    return Accidents(
        checkpoint_every_s=every,
        checkpoint_s=float(rng.uniform(20, 150)),
        eval_every_s=float(rng.uniform(900, 3600)) if rng.random() < 0.2 else 0.0,
        eval_s=float(rng.uniform(60, 300)),
        # never more than a fifth of the window: the window is about training, not start-up
        warmup_s=min(float(rng.uniform(60, 300)), 0.2 * span_s) if rng.random() < 0.1 else 0.0,
        exporter_gap=gap,
        container_restart=restart,
        ib_reset_at=float(rng.uniform(0.1, 0.9) * span_s) if rng.random() < 0.06 else None,
        ib_saturating=bool(rng.random() < 0.04),
        missed_scrape_p=float(rng.choice((0.0, 0.005, 0.02))),
        neighbours=int(rng.integers(1, 5)) if shared_node else 0,
    )
