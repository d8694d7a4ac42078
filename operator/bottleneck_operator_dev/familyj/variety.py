"""What differs between real clusters: neighbours, caps, clocks, pauses, and how they are observed.

Two kinds of variety. The first changes the job itself (power caps below TDP slow the clock, a
neighbour's reads share the disk, a slow node makes every rank wait, checkpoints pause the run):
it is drawn before the recipe settles the bottleneck, so the step model sees it. The second only
changes what the exporters show (scrape intervals, DCGM field sets, missing exporter families,
restarted exporters): it is drawn after, in :class:`Telemetry`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.sampling import rate_range
from bottleneck_operator.contract.signals import Family
from bottleneck_operator_dev.familyj.hardware import MIG_PROFILES
from bottleneck_operator_dev.familyj.plan import Plan, Rng, loguniform
from bottleneck_operator_dev.familyj.stepmodel import Factors

FloatArray = npt.NDArray[np.float64]


def draw_cluster(rng: Rng, plan: Plan) -> None:
    """Variety that changes the job's own step: sharing, caps, clocks, neighbours, pauses, stragglers."""
    if plan.board.mig and plan.gpus_per_pod == 1 and plan.pods <= 2 and rng.random() < 0.12:
        plan.mig = MIG_PROFILES[int(rng.integers(len(MIG_PROFILES)))]
        plan.tags.append(f"mig:{plan.mig[0]}")
    elif not plan.board.mig and plan.gpus_per_pod == 1 and rng.random() < 0.12:
        plan.timeslice = rng.uniform(0.15, 0.5)
        plan.tags.append("time-sliced")
    if rng.random() < 0.2:
        plan.power_limit_frac = rng.uniform(0.65, 0.95)
    plan.clock_spread = rng.uniform(0.005, 0.05)
    if rng.random() < 0.45:
        plan.neighbours = int(rng.integers(1, 6))
        plan.neighbour_cpu = plan.node_cpus * rng.uniform(0.05, 0.5)
        plan.neighbour_disk = loguniform(rng, 1e6, 1.5e9)
        plan.neighbour_net = loguniform(rng, 1e6, 3e9)
        plan.neighbour_rdma = loguniform(rng, 1e7, 2e10) if plan.fabric.rdma and rng.random() < 0.5 else 0.0
        plan.tags.append("shared-node")
    if rng.random() < 0.4:
        plan.checkpoint_every = rng.uniform(420.0, 1800.0)
        plan.checkpoint_len = rng.uniform(15.0, 150.0)
        plan.tags.append("checkpoints")
    if plan.pods > 1 and rng.random() < 0.15:
        stage = str(rng.choice(["store", "cpu", "clock"]))
        plan.straggler = (int(rng.integers(plan.pods)), stage, rng.uniform(1.3, 2.5))
        plan.tags.append(f"straggler:{stage}")


@dataclass(frozen=True)
class Grid:
    """The window's timestamps and the finer ticks the telemetry's truth is held on.

    Attributes:
        timestamps: the window's sample times (``start + k * step``).
        ticks: tick start times, seconds; the first lies early enough for every rate() range.
        dt: tick length, seconds.
        window: the ticks that fall inside the window.
    """

    timestamps: FloatArray
    ticks: FloatArray
    dt: float
    window: slice


def make_grid(start: float, step: float, samples: int, longest_scrape: float) -> Grid:
    """Ticks covering the window and the longest rate() range before it."""
    dt = min(5.0, step)
    lead = rate_range(step, longest_scrape) + 2 * longest_scrape
    first = start - math.ceil(lead / dt) * dt
    end = start + (samples - 1) * step + dt
    ticks = first + dt * np.arange(math.ceil((end - first) / dt), dtype=np.float64)
    inside = round((start - first) / dt)
    stamps = start + step * np.arange(samples, dtype=np.float64)
    return Grid(stamps, ticks, dt, slice(inside, ticks.size))


def smooth(rng: Rng, rows: int, grid: Grid, sigma: float, corr_s: float) -> FloatArray:
    """Slowly varying log-normal factors with mean ~1: Gaussian knots every ``corr_s`` s, interpolated."""
    pos = (grid.ticks - grid.ticks[0]) / corr_s
    knots = rng.standard_normal((rows, int(pos[-1]) + 2))
    i0 = pos.astype(np.int64)
    w = pos - i0
    z = knots[:, i0] * (1.0 - w) + knots[:, i0 + 1] * w
    return np.asarray(np.exp(sigma * z - 0.5 * sigma * sigma * 0.6))


def draw_factors(rng: Rng, plan: Plan, grid: Grid) -> Factors:
    """Per-pod, per-tick factors: work jitter, storage and fabric weather, clocks, reclaim bursts."""
    p = plan.pods
    work = smooth(rng, p, grid, rng.uniform(0.02, 0.12), rng.uniform(20.0, 120.0))
    remote = not plan.storage.block
    store = smooth(rng, p, grid, rng.uniform(0.1, 0.35) if remote else rng.uniform(0.03, 0.12), 60.0)
    if plan.storage.block and plan.neighbour_disk:
        store = store / (1.0 + plan.neighbour_disk / (plan.store_bps * plan.pods_per_node))
    cpu = smooth(rng, p, grid, rng.uniform(0.02, 0.08), 45.0)
    if plan.neighbour_cpu and plan.cpu_limit is None:
        cpu = cpu * (1.0 - 0.3 * plan.neighbour_cpu / plan.node_cpus)
    net = np.broadcast_to(smooth(rng, 1, grid, rng.uniform(0.03, 0.25), 40.0), (p, grid.ticks.size))
    spread = 1.0 + plan.clock_spread * rng.standard_normal((p, 1)) / max(1.0, math.sqrt(plan.gpus_per_pod))
    clock = np.minimum(1.0, spread * plan.cap_clock * smooth(rng, p, grid, rng.uniform(0.005, 0.03), 20.0))
    mem = smooth(rng, p, grid, rng.uniform(0.2, 0.5), 30.0)
    if plan.straggler is not None:
        pod, stage, slow = plan.straggler
        {"store": store, "cpu": cpu, "clock": clock}[stage][pod] /= slow
    return Factors(work, store, cpu, np.array(net), clock, mem)


def pauses(rng: Rng, plan: Plan, grid: Grid) -> FloatArray:
    """Share of each tick spent in a checkpoint or evaluation pause (0 outside pauses)."""
    share = np.zeros(grid.ticks.size)
    if not plan.checkpoint_every:
        return share
    t = grid.ticks[0] + rng.uniform(0.0, plan.checkpoint_every)
    while t < grid.ticks[-1] + grid.dt:
        lo = np.clip((t - grid.ticks) / grid.dt, 0.0, 1.0)
        hi = np.clip((t + plan.checkpoint_len - grid.ticks) / grid.dt, 0.0, 1.0)
        share += hi - lo
        t += plan.checkpoint_every * rng.uniform(0.9, 1.1)
    return np.clip(share, 0.0, 1.0)


@dataclass(frozen=True)
class Telemetry:
    """How the cluster observes the job.

    Attributes:
        scrape: exporter short name -> scrape interval, seconds.
        field_set: dcgm-exporter's counters file: "dev" (DEV fields only), "default" (the shipped
            file: DEV plus GR engine, tensor, DRAM and PCIe), "full" (a custom file adding SM
            activity/occupancy, FP pipes and, on NVLink boards, NVLink bytes).
        dcgm_collect: dcgm-exporter's own collection interval (its gauges hold between collections).
        families: the families this cluster publishes for the job.
        restart: (exporter, node, share of the window) of an exporter restarted mid-window, or None.
        missed: probability that one scrape is missed.
        prometheus_major: the Prometheus major that evaluates rate() (2 or 3).
        layout: how the exporters' series were labelled (dcgm-exporter behind a ServiceMonitor with
            honorLabels false puts the workload in exported_*; node-exporter has no node label).
    """

    scrape: dict[str, float]
    field_set: str
    dcgm_collect: float
    families: frozenset[Family]
    restart: tuple[str, int, float] | None
    missed: float
    prometheus_major: int
    layout: dict[str, str]


def draw_telemetry(rng: Rng, plan: Plan) -> Telemetry:
    """Scrape intervals 5-60 s, DEV-only/default/full DCGM fields, absent exporters, restarts."""
    base = float(rng.choice([5.0, 10.0, 15.0, 15.0, 20.0, 30.0, 30.0, 30.0, 60.0]))
    scrape = {name: base for name in ("dcgm", "cadvisor", "ksm", "node", "sidecar")}
    if rng.random() < 0.3:
        scrape["dcgm"] = float(rng.choice([15.0, 30.0]))
    fam = {Family.DCGM_DEV, Family.CADVISOR, Family.KSM, Family.NODE, Family.NODE_PSI}
    field_set = str(rng.choice(["dev", "default", "default", "full", "full"]))
    if plan.mig is not None and field_set == "dev":
        field_set = "default"  # under MIG the PROF fields are the only activity signal
    if field_set != "dev" and plan.board.prof:
        fam.add(Family.DCGM_PROF)
    if field_set == "full" and plan.board.prof:
        fam |= {Family.DCGM_PROF_SM, Family.DCGM_PROF_PIPES}
        if plan.board.nvlink_bps and rng.random() < 0.5:
            fam.add(Family.DCGM_PROF_NVLINK)
    if rng.random() < 0.45:
        fam.add(Family.DCGM_POWER_CLOCKS)
    if plan.cpu_limit is not None:
        fam.add(Family.CADVISOR_CFS)
    if rng.random() < 0.7:
        fam.add(Family.SIDECAR)
    if plan.fabric.ib_counters and rng.random() < 0.85:
        fam.add(Family.NODE_IB)
    for gone, chance in ((Family.NODE_PSI, 0.15), (Family.KSM, 0.05), (Family.NODE, 0.04), (Family.CADVISOR, 0.03)):
        if rng.random() < chance:
            fam.discard(gone)
    if Family.NODE not in fam:
        fam -= {Family.NODE_PSI, Family.NODE_IB}
    if Family.CADVISOR not in fam:
        fam.discard(Family.CADVISOR_CFS)
    restart = None
    if rng.random() < 0.15:
        who = str(rng.choice(["node", "dcgm", "cadvisor", "sidecar"]))
        restart = (who, int(rng.integers(plan.nodes)), rng.uniform(0.15, 0.85))
    return Telemetry(
        scrape=scrape,
        field_set=field_set,
        dcgm_collect=float(rng.choice([5.0, 10.0, 30.0, 30.0])),
        families=frozenset(fam),
        restart=restart,
        missed=rng.uniform(0.0, 0.03),
        prometheus_major=int(rng.choice([2, 3])),
        layout={
            "dcgm": str(rng.choice(["exported-labels", "pod-labels"], p=[0.7, 0.3])),
            "node": str(rng.choice(["pod-join", "node-label"], p=[0.75, 0.25])),
        },
    )
