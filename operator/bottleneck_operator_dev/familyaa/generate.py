"""Family AA's jobs: draw the causal model, label it by intervention, emit its window.

Job ``i`` draws everything from ``default_rng((seed, i))``; its class target comes from the
shuffled block of five it belongs to (``default_rng((seed, BLOCK_KEY, i // 5))``), so the classes
balance as near as ``n`` allows and no job depends on ``n``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.sampling import rate_range
from bottleneck_operator.contract.signals import SIGNALS, Family
from bottleneck_operator.contract.verdict import CLASSES, Bottleneck
from bottleneck_operator.contract.window import DataQuality, JobWindow, PodWindow, SignalBlock, families_and_coverage
from bottleneck_operator_dev.familyaa.causal import (
    COMM,
    COMPUTE,
    DECODE,
    H2D,
    HBM,
    HOST_MEM,
    LAUNCH,
    READ,
    REGIMES,
    STAGE_CLASS,
    STAGES,
    Environment,
    Stages,
    build_stages,
    draw_environment,
    intervention_gains,
    mechanism_of,
)
from bottleneck_operator_dev.familyaa.hardware import EXPORTERS, Cluster, draw_cluster
from bottleneck_operator_dev.familyaa.observe import DT, apply_noise, copula_noise, observe_pod
from bottleneck_operator_dev.familyaa.regimes import draw_path, occupancy
from bottleneck_operator_dev.familyaa.truth import truth_tables
from bottleneck_operator_dev.familyaa.workload import Workload, draw_workload

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BLOCK_KEY = 27  # separates the class-order streams from the jobs' own
NAMESPACES = ("ml-research", "vision", "nlp", "recsys", "speech", "platform")


@dataclass(frozen=True)
class FamilyAAJob:
    """One labelled job of family AA.

    Attributes:
        namespace: the Job's namespace.
        name: the Job's name.
        label: the class whose do(stage = 0) shortens the mean step most.
        mechanism: that stage's mechanism (a ``Mechanism`` value).
        tags: what was drawn (board, storage, fabric, field set, regimes, hard-case marks).
        window: the telemetry as the data layer would hand it to the analysis.
    """

    namespace: str
    name: str
    label: Bottleneck
    mechanism: str
    tags: tuple[str, ...]
    window: JobWindow


def class_of(seed: int, i: int) -> Bottleneck:
    """Job ``i``'s class target: its place in a shuffled block of the five classes."""
    order = np.random.default_rng((seed, BLOCK_KEY, i // len(CLASSES))).permutation(len(CLASSES))
    return CLASSES[int(order[i % len(CLASSES)])]


def _push(cluster: Cluster, workload: Workload, stage: int, f: float) -> tuple[Cluster, Workload]:
    """Make one stage ``f`` times more demanding through the structural parameter behind it."""
    if stage == READ:
        return replace(cluster, storage_gbs=cluster.storage_gbs / f), workload
    if stage == COMM:
        return replace(cluster, nic_gbs=cluster.nic_gbs / f), workload
    field = {
        DECODE: "cpu_s",
        HOST_MEM: "ws_gb",
        H2D: "device_bytes",
        COMPUTE: "gflop",
        HBM: "hbm_bytes",
        LAUNCH: "kernels",
    }[stage]
    return cluster, replace(workload, **{field: getattr(workload, field) * f})


def _stage_for(rng: np.random.Generator, target: Bottleneck, cluster: Cluster) -> int:
    if target is Bottleneck.IO:
        return READ
    if target is Bottleneck.CPU:
        return DECODE
    if target is Bottleneck.INTERCONNECT:
        return COMM if cluster.pods > 1 else H2D
    if target is Bottleneck.GPU:
        return LAUNCH if rng.random() < 0.3 else COMPUTE
    return HBM if rng.random() < 0.5 else HOST_MEM


def draw_model(
    rng: np.random.Generator, target: Bottleneck
) -> tuple[Cluster, Workload, Environment, IntArray, FloatArray, int, str]:
    """Cluster, workload, neighbours and regime path whose interventional label is ``target``.

    The draw leans towards the target (its storage, its span), then the structural parameter
    behind the target's stage is raised step by step until that stage's removal saves the most:
    stopping at the first crossing leaves a close second stage; some jobs are then pushed further.
    """
    storage = str(rng.choice(["nfs", "object", "sata", "nvme"])) if target is Bottleneck.IO else None
    multi = bool(rng.random() < 0.6) if target is Bottleneck.INTERCONNECT else None
    family = None
    if target is Bottleneck.MEMORY and rng.random() < 0.4:
        family = "dlrm"
    elif target is Bottleneck.GPU and rng.random() < 0.25:
        family = "small"
    cluster = draw_cluster(rng, storage=storage, multi=multi)
    workload = draw_workload(rng, family)
    env = draw_environment(rng, cluster)
    duration = float(rng.uniform(25.0, 90.0)) * 60.0
    lead = 400.0
    ticks = int((duration + lead) / DT) + 2
    lead_ticks = int(lead / DT)
    path = draw_path(rng, ticks, DT, shared=cluster.shared, multi=cluster.pods > 1, lead_ticks=lead_ticks)
    weights = occupancy(path, lead_ticks)
    stage = _stage_for(rng, target, cluster)
    if stage == HOST_MEM:  # the working set overruns its room a little to begin with
        room = cluster.mem_limit_gb if cluster.mem_limit_gb > 0 else cluster.node_mem_gb
        workload = replace(workload, ws_gb=max(workload.ws_gb, room * float(rng.uniform(1.01, 1.1))))
    for _ in range(80):
        gains = intervention_gains(build_stages(cluster, workload, env), weights)
        if STAGE_CLASS[int(np.argmax(gains))] is target and int(np.argmax(gains)) == stage:
            break
        cluster, workload = _push(cluster, workload, stage, 1.25)
    hardness = "close-second"
    if rng.random() < 0.6:
        cluster, workload = _push(cluster, workload, stage, float(rng.uniform(1.3, 4.0)))
        hardness = "clear"
    return cluster, workload, env, path, weights, lead_ticks, hardness


def _families(rng: np.random.Generator, cluster: Cluster) -> frozenset[Family]:
    fams = {Family.DCGM_DEV, Family.CADVISOR, Family.NODE}
    if cluster.field_set in ("default", "full"):
        fams.add(Family.DCGM_PROF)
    if cluster.field_set == "full":
        fams |= {Family.DCGM_PROF_SM, Family.DCGM_PROF_NVLINK, Family.DCGM_PROF_PIPES, Family.DCGM_POWER_CLOCKS}
    if cluster.cpu_limit > 0:
        fams.add(Family.CADVISOR_CFS)
        if rng.random() < 0.9:
            fams.add(Family.KSM)
    if rng.random() < 0.9:
        fams.add(Family.NODE_PSI)
    if cluster.fabric == "rdma" and rng.random() < 0.85:
        fams.add(Family.NODE_IB)
    if rng.random() < 0.8:
        fams.add(Family.SIDECAR)
        if rng.random() < 0.75:
            fams.add(Family.SIDECAR_NET)
    return frozenset(fams)


def _pods(
    rng: np.random.Generator,
    cluster: Cluster,
    tables: list[dict[str, FloatArray]],
    families: frozenset[Family],
    name: str,
    grid: FloatArray,
    step: float,
    path: IntArray,
    lead_ticks: int,
) -> tuple[list[PodWindow], dict[str, float]]:
    """Each pod's window: per-tick readings with copula noise, scraped and sampled on ``grid``."""
    start = float(grid[0])
    lead = max(rate_range(step, si) for si in cluster.scrape.values()) + 2 * max(cluster.scrape.values())
    t0 = start - np.ceil(lead / DT) * DT
    n_ticks = int(np.ceil((grid[-1] - t0) / DT)) + 2
    tick_times = t0 + DT * np.arange(n_ticks, dtype=np.float64)
    # the regime path covers the window; ticks before it hold the regime it opened in
    offset = round(float(start - t0) / DT)
    tick_regime = path[np.clip(np.arange(n_ticks) - offset + lead_ticks, 0, path.size - 1)]
    miss = float(rng.uniform(0.0, 0.03))
    restarts = {e: float(rng.uniform(start, grid[-1])) for e in EXPORTERS if rng.random() < 0.1}
    caps = {"power_w": cluster.power_cap_w, "sm_clock_mhz": cluster.gpu.max_clock_mhz}
    node_ids = rng.integers(1, 400, size=cluster.pods)
    pods = []
    for p, table in enumerate(tables):
        z = copula_noise(rng, n_ticks)
        per_tick = {sig: apply_noise(v[tick_regime], sig, z, caps) for sig, v in table.items() if sig in SIGNALS}
        if table["sc_psi_mem_some"].max() > 0.3 and rng.random() < 0.3:  # an OOM kill of a loader worker
            oom = np.zeros(n_ticks)
            oom[int(rng.integers(n_ticks // 3, n_ticks))] = 1.0 / DT
            per_tick["sc_oom_kills"] = oom
        signals = observe_pod(
            rng, tick_times, per_tick, families, grid, step, cluster.scrape, cluster.collect_s, restarts, miss
        )
        pods.append(
            PodWindow(
                pod=f"{name}-worker-{p}",
                node=f"gpu-node-{int(node_ids[p]):03d}",
                gpu_model=cluster.gpu.model,
                gpu_count=cluster.gpus_per_pod,
                signals=SignalBlock.of(signals, length=grid.size),
                co_located_pods=int(rng.integers(1, 6)) if cluster.shared else 0,
            )
        )
    return pods, restarts


def _tags(
    cluster: Cluster, workload: Workload, gains: FloatArray, hardness: str, seen: list[str], restarts: dict[str, float]
) -> tuple[str, ...]:
    """What was drawn, for reading the results by slice (board, storage, fabric, hard cases, regimes)."""
    order = np.argsort(gains)[::-1]
    ratio = float(gains[order[1]] / gains[order[0]]) if gains[order[0]] > 0 else 1.0
    return (
        f"gpu:{cluster.gpu.model}",
        f"workload:{workload.family}",
        f"precision:{workload.precision}",
        f"storage:{cluster.storage}",
        f"fabric:{cluster.fabric}",
        f"fields:{cluster.field_set}",
        f"scrape:{cluster.scrape['dcgm']:g}s",
        f"pods:{cluster.pods}x{cluster.gpus_per_pod}",
        "shared" if cluster.shared else "dedicated",
        "power-capped" if cluster.power_cap_w < cluster.gpu.tdp_w else "tdp",
        f"stage:{STAGES[int(order[0])]}",
        f"runner-up:{STAGE_CLASS[int(order[1])].value}:{ratio:.2f}",
        hardness,
        *(f"regime:{r}" for r in seen),
        *(f"restart:{e}" for e in sorted(restarts)),
    )


def build_job(seed: int, i: int, *, start: float, step: float) -> FamilyAAJob:
    """Job ``i`` of the family for ``seed``: its model, its label and its window."""
    rng = np.random.default_rng((seed, i))
    cluster, workload, env, path, weights, lead_ticks, hardness = draw_model(rng, class_of(seed, i))
    stages: Stages = build_stages(cluster, workload, env)
    gains = intervention_gains(stages, weights)
    best = int(np.argmax(gains))
    mechanism = mechanism_of(best, cluster, workload, stages)
    duration = (path.size - lead_ticks - 2) * DT
    grid = start + step * np.arange(max(int(duration // step) + 1, 2), dtype=np.float64)
    families = _families(rng, cluster)
    tables = truth_tables(rng, cluster, workload, env, stages)
    name = f"{workload.family}-{i:04d}"
    pods, restarts = _pods(rng, cluster, tables, families, name, grid, step, path, lead_ticks)
    fams, coverage = families_and_coverage(pods)
    window = JobWindow(
        namespace=str(rng.choice(NAMESPACES)),
        job=name,
        start=float(grid[0]),
        end=float(grid[-1]),
        step=step,
        timestamps=grid,
        pods=tuple(pods),
        quality=DataQuality(
            families=fams,
            coverage=coverage,
            scrape_interval=cluster.scrape["dcgm"],
            notes=() if Family.DCGM_PROF in fams else ("no PROF fields",),
        ),
    )
    seen = sorted({REGIMES[r] for r in np.unique(path[lead_ticks:])})
    tags = _tags(cluster, workload, gains, hardness, seen, restarts)
    return FamilyAAJob(window.namespace, name, STAGE_CLASS[best], mechanism.value, tags, window)


def generate_family_aa(seed: int, n: int, *, start: float, step: float = 30.0) -> list[FamilyAAJob]:
    """``n`` labelled jobs of family AA, every window opening at ``start``.

    Raises:
        ValueError: ``n`` is negative or ``step`` is not positive.
    """
    if n < 0:
        raise ValueError(f"n must be zero or more, not {n}")
    if not step > 0:
        raise ValueError(f"step must be a positive number of seconds, not {step}")
    return [build_job(seed, i, start=start, step=step) for i in range(n)]
