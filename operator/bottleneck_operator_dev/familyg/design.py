"""One job's design: a workload on a cluster, its stage times, and the label the step model gives.

A target class (and, for Memory, a mechanism) steers which workload, storage and fabric are drawn
and which stage is made long, but never decides the label: after the draw, the step model of
stages.py is asked which class's removal shortens the step most, and the target stage is
lengthened (or, for GPU, the other stages shortened) until the model agrees with a drawn lead.
Leads range from borderline (a few per cent) to extreme, so moderate bottlenecks are common.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator_dev.familyg.hardware import FABRICS, STORAGES, Cluster, Fabric, Storage, draw_cluster
from bottleneck_operator_dev.familyg.stages import Stages, gains, label, single_gain
from bottleneck_operator_dev.familyg.workloads import WORKLOADS, Workload, fits

B = Bottleneck
# How strongly the label's class binds, drawn per job: (weight, share of the step its removal saves,
# lead of its saving over the runner-up's), borderline, moderate and extreme. A GPU-bound job's own
# saving is most of its step, so for GPU only the lead is asked.
STRENGTHS = (
    (0.25, (0.04, 0.12), (1.02, 1.15)),
    (0.5, (0.12, 0.4), (1.15, 2.0)),
    (0.25, (0.4, 0.8), (2.0, 5.0)),
)
_GROW, _SHRINK, _ROUNDS = 1.1, 0.9, 120


@dataclass(frozen=True)
class Design:
    """Everything about one job that the telemetry is made from.

    Attributes:
        workload: the kind of job.
        cluster: the cluster it runs on.
        pods: number of pods (one per node).
        gpus: GPUs per pod.
        stages: the step's stages (seconds per micro-batch per rank).
        label: the class the step model names.
        mechanism: the mechanism the step model names within that class.
        lead: the label's saving over the runner-up's (>= 1).
        saving: the share of the step the label's removal saves.
        clock_factor: mean SM clock as a share of the board's maximum (power cap), <= 1.
        cpu_limit: the pod's CPU limit in cores, None without one.
        workers: loader worker processes per pod.
        cores_for_loader: cores the loader of one pod actually gets.
        tags: what makes this job what it is, for reading the family.
    """

    workload: Workload
    cluster: Cluster
    pods: int
    gpus: int
    stages: Stages
    label: Bottleneck
    mechanism: str
    lead: float
    saving: float
    clock_factor: float
    cpu_limit: float | None
    workers: int
    cores_for_loader: float
    tags: tuple[str, ...]


def _u(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(rng.uniform(lo, hi))


def _workload(rng: np.random.Generator, target: Bottleneck) -> Workload:
    w = np.array([fits(wl, target) for wl in WORKLOADS])
    return WORKLOADS[int(rng.choice(len(WORKLOADS), p=w / w.sum()))]


def _storage_fabric(rng: np.random.Generator, target: Bottleneck, mech: str) -> tuple[Storage, Fabric]:
    if target is B.IO:
        local = mech == "local-disk"
        pool = [s for s in STORAGES if s.remote != local]
    else:
        pool = list(STORAGES)
    storage = pool[int(rng.integers(len(pool)))]
    fabric = FABRICS[int(rng.choice(len(FABRICS), p=[0.3, 0.15, 0.2, 0.15, 0.1, 0.1]))]
    return storage, fabric


def _shape(rng: np.random.Generator, target: Bottleneck, mech: str, cluster: Cluster) -> tuple[int, int]:
    """Pods and GPUs per pod: multi-node jobs where the network is meant to bind."""
    if mech == "network":
        return int(rng.integers(2, 17)), int(rng.choice([1, 2, 4, 8]))
    if mech == "nvlink":
        return int(rng.choice([1, 1, 2, 4])), int(rng.choice([2, 4, 8]))
    pods = int(rng.choice([1, 1, 1, 2, 2, 4, 8, 16]))
    return pods, int(rng.choice([1, 2, 4, 8], p=[0.25, 0.2, 0.2, 0.35]))


def _clock_factor(rng: np.random.Generator, cluster: Cluster, precision: str) -> float:
    """Mean clock under the enforced power limit: dynamic power grows ~ f^2.5 with DVFS."""
    heavy = precision in ("bf16", "fp16")
    demand = cluster.board.tdp_w * (_u(rng, 0.85, 1.08) if heavy else _u(rng, 0.65, 0.9))
    idle = cluster.board.idle_w
    if demand <= cluster.power_limit_w:
        return _u(rng, 0.97, 1.0)
    return float(((cluster.power_limit_w - idle) / (demand - idle)) ** 0.4)


def _cpu_setup(
    rng: np.random.Generator, target: Bottleneck, mech: str, wl: Workload, gpus: int, cluster: Cluster
) -> tuple[float | None, int, float]:
    """CPU limit, loader workers and the cores the loader really gets, per pod."""
    per_gpu = cluster.node_cpus / 8
    workers = gpus * int(rng.integers(wl.workers[0], wl.workers[1] + 1))
    limit: float | None = float(np.ceil(gpus * per_gpu * _u(rng, 0.5, 1.0))) if rng.random() < 0.6 else None
    if mech == "throttled":
        limit = float(max(2, np.ceil(gpus * per_gpu * _u(rng, 0.2, 0.6))))
        workers = max(workers, int(limit * 1.5) + gpus)
    elif mech == "too-few-workers":
        workers = gpus * int(rng.integers(1, 3))
        limit = None if rng.random() < 0.5 else float(gpus * per_gpu)
    elif mech == "saturated":
        workers = max(workers, int(gpus * per_gpu * _u(rng, 1.0, 2.0)))
        limit = None
    free = gpus * per_gpu - gpus  # the trainer processes keep about a core each
    cores = min(float(workers), free if limit is None else max(1.0, limit - gpus), free)
    return limit, workers, max(1.0, cores)


def _background(rng: np.random.Generator, wl: Workload, pods: int, gpus: int, cf: float) -> Stages:
    kernels = _u(rng, *wl.kernels_s)
    hbm = kernels * _u(rng, *wl.hbm_share)
    pinned = rng.random() < 0.8
    return Stages(
        math=(kernels - hbm) / cf,
        hbm=hbm / cf**0.2,  # memory-bound kernels barely care about the SM clock
        intra=kernels * _u(rng, 0.05, 0.35) if gpus > 1 else 0.0,
        inter=kernels * _u(rng, 0.1, 0.7) if pods > 1 else 0.0,
        overlap=_u(rng, 0.5, 0.95) if wl.comm in ("ddp", "fsdp") else _u(rng, 0.0, 0.4),
        accum=int(rng.choice(wl.accum)),
        h2d=kernels * _u(rng, 0.01, 0.08),
        h2d_exposed=_u(rng, 0.05, 0.3) if pinned else 1.0,
        read=kernels * _u(rng, 0.03, 0.7),
        cpu=kernels * _u(rng, 0.05, 0.75),
        launch=_u(rng, 0.01, 0.06),
        # some jobs live with mild host memory pressure they are not bound by (page cache churn)
        hostmem=kernels * _u(rng, 0.002, 0.03) if rng.random() < 0.15 else 0.0,
    )


def _lengthen(st: Stages, target: Bottleneck, mech: str) -> Stages:
    """The stages one round closer to the target's stage binding."""
    g = _GROW
    if target is B.IO:
        return replace(st, read=max(st.read, 1e-3) * g)
    if target is B.CPU:
        return replace(st, cpu=max(st.cpu, 1e-3) * g)
    if target is B.GPU:
        s = _SHRINK
        return replace(
            st,
            hbm=st.hbm * s,
            intra=st.intra * s,
            inter=st.inter * s,
            h2d=st.h2d * s,
            read=st.read * s,
            cpu=st.cpu * s,
            hostmem=st.hostmem * s,
            loader_slow=st.loader_slow * s,
        )
    if mech == "hbm-bandwidth":
        return replace(st, hbm=st.hbm * g, math=st.math / g**0.5)
    if mech == "host-memory-pressure":
        base = max(st.hostmem, 0.01 * st.kernels)
        return replace(st, hostmem=base * g, loader_slow=max(st.loader_slow, 0.05) * g**0.5)
    if mech == "network":
        return replace(st, inter=max(st.inter, 1e-3) * g, overlap=st.overlap * 0.97)
    if mech == "nvlink":
        return replace(st, intra=max(st.intra, 1e-3) * g, overlap=st.overlap * 0.97)
    return replace(st, h2d=max(st.h2d, 1e-3) * g, h2d_exposed=min(1.0, st.h2d_exposed * 1.05))


def mechanism_of(st: Stages, cls: Bottleneck, io_remote: bool, cpu_mech: str, nvlink: bool) -> str:
    """The single stage of the label's class whose removal helps most, as a mechanism name."""
    if cls is B.IO:
        return "network-storage" if io_remote else "local-disk"
    if cls is B.CPU:
        return cpu_mech
    if cls is B.GPU:
        return "compute"
    if cls is B.MEMORY:
        return "hbm-bandwidth" if single_gain(st, "hbm") >= single_gain(st, "host") else "host-memory-pressure"
    saved = {k: single_gain(st, k) for k in ("h2d", "intra", "inter")}
    best = max(saved, key=lambda k: saved[k])
    return {"h2d": "pcie", "intra": "nvlink" if nvlink else "pcie", "inter": "network"}[best]


def _strength(rng: np.random.Generator, target: Bottleneck) -> tuple[float, float, float]:
    """The share of the step to save, the lead over the runner-up to reach, and the most lead wanted."""
    weight = np.array([w for w, _, _ in STRENGTHS])
    _, share, lead = STRENGTHS[int(rng.choice(len(STRENGTHS), p=weight / weight.sum()))]
    return (0.0 if target is B.GPU else _u(rng, *share)), _u(rng, *lead), lead[1]


def _grow(st: Stages, cls: Bottleneck, pods: int) -> Stages:
    """One class's stage a little longer (a runner-up growing beside the label's)."""
    if cls is B.IO:
        return replace(st, read=max(st.read, 1e-3) * _GROW)
    if cls is B.CPU:
        return replace(st, cpu=max(st.cpu, 1e-3) * _GROW)
    if cls is B.GPU:
        return replace(st, math=st.math * _GROW)
    if cls is B.MEMORY:
        return replace(st, hbm=max(st.hbm, 1e-3) * _GROW)
    if pods > 1:
        return replace(st, inter=max(st.inter, 1e-3) * _GROW)
    return replace(st, h2d=max(st.h2d, 1e-3) * _GROW, h2d_exposed=min(1.0, st.h2d_exposed * 1.05))


def _mix(
    rng: np.random.Generator, st: Stages, target: Bottleneck, pods: int, lo: float, hi: float, keep: object
) -> Stages:
    """Grow a runner-up class until the label's lead is at most ``hi``, never below ``lo`` nor flipping
    the label (or, for Memory, its mechanism: ``keep`` checks it). Real jobs are seldom bound by one
    stage alone."""
    others = [c for c in (B.IO, B.CPU, B.INTERCONNECT, B.GPU, B.MEMORY) if c is not target]
    runner = others[int(rng.integers(len(others)))]
    for _ in range(_ROUNDS):
        if label(st)[1] <= hi:
            break
        trial = _grow(st, runner, pods)
        cls, lead = label(trial)
        if cls is not target or lead < lo or not keep(trial):  # type: ignore[operator]
            break
        st = trial
    return st


def _interconnect_mech(rng: np.random.Generator) -> str:
    return ("network", "nvlink", "pcie")[int(rng.choice(3, p=[0.5, 0.25, 0.25]))]


def _target_mech(rng: np.random.Generator, target: Bottleneck, memory_mech: str) -> str:
    if target is B.MEMORY:
        return memory_mech
    if target is B.INTERCONNECT:
        return _interconnect_mech(rng)
    if target is B.CPU:
        return ("throttled", "saturated", "too-few-workers")[int(rng.integers(3))]
    if target is B.IO:
        return ("local-disk", "network-storage")[int(rng.choice(2, p=[0.4, 0.6]))]
    return "compute"


def draw_design(rng: np.random.Generator, target: Bottleneck, memory_mech: str = "hbm-bandwidth") -> Design:
    """A job steered towards ``target``, labelled by the step model.

    Args:
        rng: the job's own generator.
        target: the class to steer towards.
        memory_mech: for Memory, "hbm-bandwidth" or "host-memory-pressure".

    Returns:
        The design; its ``label`` is the step model's answer.
    """
    mech = _target_mech(rng, target, memory_mech)
    wl = _workload(rng, target)
    storage, fabric = _storage_fabric(rng, target, mech)
    cluster = draw_cluster(rng, storage, fabric)
    pods, gpus = _shape(rng, target, mech, cluster)
    cf = _clock_factor(rng, cluster, wl.precision)
    limit, workers, cores = _cpu_setup(rng, target, mech, wl, gpus, cluster)
    st = _background(rng, wl, pods, gpus, cf)
    want_share, want_lead, most = _strength(rng, target)
    nvlink = cluster.board.nvlink_bps > 0
    cpu_mech = mech if target is B.CPU else "saturated"
    for _ in range(_ROUNDS):
        saved = gains(st)
        cls, lead = label(st, saved)
        strong = cls is target and lead >= want_lead and saved[target] >= want_share * st.step
        if strong and (target is not B.MEMORY or mechanism_of(st, cls, storage.remote, cpu_mech, nvlink) == mech):
            break
        st = _lengthen(st, target, mech)
    if rng.random() < 0.6:

        def keep(trial: Stages) -> bool:
            if gains(trial)[target] < want_share * trial.step:
                return False
            return target is not B.MEMORY or mechanism_of(trial, target, storage.remote, cpu_mech, nvlink) == mech

        st = _mix(rng, st, target, pods, want_lead, most, keep)
    cls, lead = label(st)
    saving = gains(st)[cls] / st.step
    tags = _tags(wl, cluster, st, pods, gpus, lead, saving)
    return Design(
        wl,
        cluster,
        pods,
        gpus,
        st,
        cls,
        mechanism_of(st, cls, storage.remote, cpu_mech, nvlink),
        lead,
        saving,
        cf,
        limit,
        workers,
        cores,
        tags,
    )


def _tags(
    wl: Workload, cluster: Cluster, st: Stages, pods: int, gpus: int, lead: float, saving: float
) -> tuple[str, ...]:
    tags = [wl.name, cluster.storage.kind, cluster.board.model, f"dcgm-{cluster.dcgm_fields}"]
    if pods > 1:
        tags.append(cluster.fabric.kind)
    if lead < 1.15 or saving < 0.12:
        tags.append("borderline")
    if cluster.power_limit_w < cluster.board.tdp_w:
        tags.append("power-capped")
    if st.accum > 1 and st.intra + st.inter > st.kernels:
        tags.append("accumulation-hides-comm")
    if wl.mmap:
        tags.append("mmap-dataset")
    return tuple(tags)
