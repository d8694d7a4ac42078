"""Drawing one job whose step model is bound by a chosen class, at a drawn strength, maybe mixed.

The class is a quota (equal numbers per class), never a label: the stage times are drawn, the bound
stage is scaled until removing it would speed the window up by the drawn factor, a second stage of
another class may be given a phase in which it binds, and then the step model labels the window.
A draw whose model label differs from the quota is thrown away and drawn again.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.verdict import Bottleneck, Mechanism
from bottleneck_operator_dev.familyr import fleet, plan, steps
from bottleneck_operator_dev.familyr.plan import FINE_S, LEAD_S, JobPlan


@dataclass(frozen=True)
class Outcome:
    """What the step model says about a drawn job."""

    label: Bottleneck
    stage: str
    gains: steps.FloatArray
    speedup: float
    runner_up: float


def judge(p: JobPlan, start: float) -> Outcome:
    """Label a plan over its window only (the lead-in history does not count)."""
    inside = p.times >= start
    gains = steps.removal_gains(p.stages[:, inside], p.overlap[inside], p.weight[inside])
    label, stage = steps.label_of(gains)
    return Outcome(label, stage, gains, steps.speedup(float(gains.max())), steps.runner_up_ratio(gains))


def _strength(rng: np.random.Generator) -> float:
    """From barely there to overwhelming."""
    kind = rng.random()
    if kind < 0.3:
        return float(rng.uniform(1.05, 1.2))
    if kind < 0.7:
        return float(rng.uniform(1.2, 1.8))
    return float(rng.uniform(1.8, 5.0))


def _scale_to(p: JobPlan, stage: int, start: float, target_gain_of: int, want: float, phase: np.ndarray) -> None:
    """Scale ``stage`` (within ``phase``) until ``target_gain_of``'s removal gain reaches ``want``."""
    base = p.stages[stage].copy()

    inside = p.times >= start
    overlap, weight = p.overlap[inside], p.weight[inside]

    def gain_at(m: float) -> float:
        p.stages[stage] = np.where(phase, base * m, base)
        g = steps.removal_gains(p.stages[:, inside], overlap, weight, only=(stage, target_gain_of))
        if target_gain_of == stage:
            return float(g[stage])
        return float(g[stage] / max(g[target_gain_of], 1e-9))

    m = steps.solve_scale(gain_at, want)
    p.stages[stage] = np.where(phase, base * m, base)


def new_plan(rng: np.random.Generator, stage: str, start: float, step: float, samples: int) -> JobPlan:
    """Hardware, cluster and base stage times for one job bound (so far) by ``stage``."""
    workload = str(rng.choice(plan.WORKLOADS[stage]))
    board, pods, gpus = plan.draw_topology(rng, stage, workload)
    storage = fleet.STORAGES[int(rng.integers(len(fleet.STORAGES)))]
    if workload in ("vision-jpeg-on-nfs", "video-clips-object-store"):
        storage = fleet.STORAGES[2] if workload == "vision-jpeg-on-nfs" else fleet.STORAGES[3]
    fabric = fleet.FABRICS[int(rng.integers(len(fleet.FABRICS)))]
    if workload == "fsdp-over-ethernet":
        fabric = fleet.FABRICS[int(rng.integers(2))]
    tags: list[str] = []
    h2d, nvlink, net = plan.draw_links(rng, workload, board, fabric, tags)
    cluster = fleet.draw_cluster(rng)
    node_cpus = int(rng.choice([16, 32, 64, 96, 128, 192]))
    cpu_limit = None if "cadvisor_cfs" in cluster.families_off else float(rng.choice([4, 8, 16, 32]))
    workers = int(rng.choice([2, 4, 6, 8, 12, 16]))
    if stage == "preprocess" and cpu_limit is None and rng.random() < 0.5:
        node_cpus = workers = int(rng.choice([16, 32]))  # one worker per core of a small node
    times = np.asarray(
        start - LEAD_S + FINE_S * np.arange(int((LEAD_S + step * (samples - 1)) / FINE_S) + 1), dtype=np.float64
    )
    base, overlap = plan.base_stages(rng, workload, pods * gpus, board)
    cap = board.tdp_w * (float(rng.uniform(0.6, 0.95)) if rng.random() < 0.3 else 1.0)
    if cap < board.tdp_w:
        tags.append("power-capped-below-tdp")
    p = JobPlan(
        stage=stage, workload=workload, board=board, pods=pods, gpus=gpus, fabric=fabric, storage=storage,
        cluster=cluster, h2d_bps=h2d, nvlink_bps=nvlink, net_bps=net, cpu_limit=cpu_limit, node_cpus=node_cpus,
        workers=workers, power_limit_w=cap, times=times,
        stages=np.repeat(base[:, None], times.size, axis=1), overlap=np.full(times.size, overlap),
        weight=np.ones(times.size), tags=tags,
    )  # fmt: skip
    plan.profiles(rng, p, start)
    return p


def draw_job(
    rng: np.random.Generator, cls: Bottleneck, start: float, step: float, samples: int
) -> tuple[JobPlan, Outcome]:
    """A plan whose step model labels it ``cls``, with its outcome (redrawn until it does)."""
    stage = str(rng.choice(plan.CLASS_STAGES[cls]))  # kept through redraws, so mechanisms stay balanced
    for _ in range(200):
        p = new_plan(rng, stage, start, step, samples)
        s = steps.STAGES.index(stage)
        everywhere = np.ones(p.times.size, dtype=bool)
        _scale_to(p, s, start, s, 1.0 - 1.0 / _strength(rng), everywhere)
        if rng.random() < 0.25:  # with the mixes that happen on their own, about a third of all jobs
            peers = p.gpus * p.pods > 1
            other = [o for o in steps.STAGES if steps.STAGE_CLASS[o] is not cls and (o != "comm" or peers)]
            second = steps.STAGES.index(str(rng.choice(other)))
            rel = p.times - start
            a = rng.uniform(0.0, 0.5) * rel[-1]
            phase = (rel >= a) & (rel <= a + rng.uniform(0.3, 1.0) * rel[-1])
            _scale_to(p, second, start, s, float(rng.uniform(0.8, 0.97)), phase)
            p.tags.append(f"mixed-with-{steps.STAGES[second]}")
        out = judge(p, start)
        if out.label is cls and out.gains.max() > 0.04:
            return p, out
    raise RuntimeError(f"no draw labelled {cls} in 200 tries")  # the model makes this unreachable in practice


def mechanism(p: JobPlan, stage: str) -> str:
    """The contract's mechanism name for the bound stage."""
    if stage == "read":
        return Mechanism.LOCAL_DISK if p.storage.local else Mechanism.NETWORK_STORAGE
    if stage == "preprocess":
        cores = p.cpu_limit if p.cpu_limit is not None else p.node_cpus
        if p.workers < cores:
            return Mechanism.TOO_FEW_WORKERS
        return Mechanism.THROTTLED if p.cpu_limit is not None else Mechanism.SATURATED
    if stage == "comm":
        return Mechanism.NETWORK if p.pods > 1 else Mechanism.NVLINK
    return {
        "hostmem": Mechanism.HOST_MEMORY_PRESSURE,
        "h2d": Mechanism.PCIE,
        "compute": Mechanism.COMPUTE,
        "hbm": Mechanism.HBM_BANDWIDTH,
    }[stage]
