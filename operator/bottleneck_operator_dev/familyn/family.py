"""Family N: labelled job windows for a blind evaluation, one generator per job.

Each job is built in this order: its class (the family keeps the five balanced), a plan (workload,
machines, stage times), a timeline (launch, warm-up, first epoch, checkpoints, elastic pods), the
scaling that makes the class lead by a drawn margin over the window as a whole, and the check that
the step model indeed names that class. Only then are the exporters' views drawn from the step
model's account of where each pod's time went.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.signals import SIGNALS, Family, signals_of
from bottleneck_operator.contract.verdict import CLASSES, Bottleneck
from bottleneck_operator.contract.window import DataQuality, JobWindow, PodWindow, SignalBlock, families_and_coverage
from bottleneck_operator_dev.familyn.activity import run_activity
from bottleneck_operator_dev.familyn.gpu import gpu_truth
from bottleneck_operator_dev.familyn.host import node_truth, pod_truth
from bottleneck_operator_dev.familyn.plans import Plan, draw_plan
from bottleneck_operator_dev.familyn.scrape import draw_exporters, read_exporter
from bottleneck_operator_dev.familyn.steps import class_gains, label_of, scale_to_strength
from bottleneck_operator_dev.familyn.timeline import Timeline, draw_timeline, stage_series

FloatArray = npt.NDArray[np.float64]
ATTEMPTS = 40
NAMESPACES = ("ml-research", "recsys", "vision", "speech", "llm-train", "genai")


@dataclass(frozen=True)
class FamilyNJob:
    """One labelled job of family N.

    Attributes:
        namespace: the Job's namespace.
        name: the Job's name.
        label: the class whose removal shortens the window's steps most (the step model's answer).
        mechanism: how that class limits the job ("network-storage", "hbm-bandwidth", ...).
        tags: the workload and what makes the job's telemetry unusual (warm-up, mixed boards, ...).
        window: the job's telemetry as the data layer hands it over.
    """

    namespace: str
    name: str
    label: Bottleneck
    mechanism: str
    tags: tuple[str, ...]
    window: JobWindow


def _segments(line: Timeline, start: float, end: float) -> tuple[npt.NDArray[np.int64], FloatArray]:
    """The window's grid points grouped by what the label depends on: (a representative index, weight)."""
    inside = np.flatnonzero((line.grid >= start) & (line.grid <= end))
    keys = np.vstack([line.io_scale[inside], line.progress[inside], line.alive[:, inside]])
    _, first, counts = np.unique(keys, axis=1, return_index=True, return_counts=True)
    return inside[first], counts.astype(np.float64)


def _fit(
    plan: Plan, line: Timeline, start: float, end: float
) -> tuple[dict[str, FloatArray], FloatArray, float] | None:
    """Scale the plan's class to its drawn lead; None when the step model then names another class."""
    stages, comm = stage_series(plan, line)
    idx, weight = _segments(line, start, end)
    seg = {k: v[:, idx] for k, v in stages.items()}
    progress = weight * line.progress[idx]
    if progress.sum() <= 0:
        return None
    alive = line.alive[:, idx]
    kw = {"bubble": plan.bubble, "overlap": plan.overlap}
    _, _, x = scale_to_strength(
        seg, comm[idx], alive, progress, target=plan.label, grow=plan.grow, strength=plan.strength, **kw
    )
    scaled = {k: v * x if k in plan.grow else v for k, v in stages.items()}
    comm = comm * x if "comm" in plan.grow else comm
    gains = class_gains({k: v[:, idx] for k, v in scaled.items()}, comm[idx], alive, progress, **kw)
    label, lead = label_of(gains)
    if label is not plan.label or lead < 1.02:
        return None
    plan.strength = lead
    plan.tags.append("barely" if lead < 1.2 else "moderate" if lead < 2.0 else "overwhelming")
    return scaled, comm, lead


def _families(rng: np.random.Generator, plan: Plan) -> set[Family]:
    """Which exporters (and exporter configurations) this cluster runs."""
    fields = str(rng.choice(("dev", "default", "full"), p=(0.25, 0.4, 0.35)))
    if fields == "dev" and plan.mig_slice < 1.0:
        fields = "default"  # under MIG, GPU_UTIL is unsupported: GR_ENGINE_ACTIVE is the instance's only activity
    fams = {Family.DCGM_DEV}
    if fields != "dev":
        fams.add(Family.DCGM_PROF)
        if rng.random() < 0.3:
            fams.add(Family.DCGM_POWER_CLOCKS)
    if fields == "full":
        fams |= {Family.DCGM_PROF_SM, Family.DCGM_PROF_PIPES, Family.DCGM_POWER_CLOCKS}
        if rng.random() < 0.4:
            fams.add(Family.DCGM_PROF_NVLINK)
    plan.tags.append(f"dcgm-{fields}")
    optional = {Family.CADVISOR: 0.95, Family.KSM: 0.85, Family.NODE: 0.95, Family.NODE_PSI: 0.85, Family.SIDECAR: 0.7}
    fams |= {f for f, p in optional.items() if rng.random() < p}
    if Family.NODE not in fams:
        fams.discard(Family.NODE_PSI)
    if plan.cpu_limit is not None and Family.CADVISOR in fams:
        fams.add(Family.CADVISOR_CFS)
    if plan.cpu_limit is None:
        fams.discard(Family.KSM)
    if plan.fabric.kind == "ib" and Family.NODE in fams:
        fams.add(Family.NODE_IB)
    return fams


def _names(fams: set[Family], plan: Plan) -> dict[str, tuple[str, ...]]:
    """The signals each exporter serves in this job."""
    by_exporter: dict[str, list[str]] = {}
    for fam in sorted(fams):  # a set iterates in string-hash order, which changes from process to process
        for name in signals_of(fam, context=True):
            if name == "gpu_util" and plan.mig_slice < 1.0:
                continue  # GPU_UTIL is not supported under MIG
            by_exporter.setdefault(fam.exporter_name, []).append(name)
    return {k: tuple(sorted(v)) for k, v in by_exporter.items()}


def _pod_names(rng: np.random.Generator, name: str, pods: int) -> list[str]:
    style = int(rng.integers(3))
    if style == 0:
        return [f"{name}-{i}-{_suffix(rng)}" for i in range(pods)]
    if style == 1:
        return [f"{name}-master-0" if i == 0 else f"{name}-worker-{i - 1}" for i in range(pods)]
    return [f"{name}-trainer-0-{i}-{_suffix(rng)}" for i in range(pods)]


def _suffix(rng: np.random.Generator) -> str:
    return "".join(str(c) for c in rng.choice(list("bcdfghjklmnpqrstvwxz2456789"), 5))


def _job(
    rng: np.random.Generator, index: int, label: Bottleneck, variant: int, start: float, step: float
) -> FamilyNJob:
    samples = int(rng.integers(20, 121))
    at = start + step * np.arange(samples, dtype=np.float64)
    end = float(at[-1])
    for _ in range(ATTEMPTS):
        plan = draw_plan(rng, label, variant)
        line = draw_timeline(rng, plan, start, end)
        fitted = _fit(plan, line, start, end)
        if fitted is not None:
            break
    else:
        raise RuntimeError(f"family N job {index}: no plan of class {label} after {ATTEMPTS} attempts")
    stages, comm, _ = fitted
    act = run_activity(plan, line, stages, comm)
    truth = gpu_truth(rng, plan, act)
    pod = pod_truth(rng, plan, act)
    truth.update(pod)
    truth.update(node_truth(rng, plan, act, pod))
    truth["__live"] = act.live
    busy = truth["node_cpu_busy_frac"][act.stepping > 0]
    exporters = draw_exporters(rng, start, end, float(np.median(busy)) if busy.size else 0.0)
    fams = _families(rng, plan)
    read: dict[str, FloatArray] = {}
    for exporter, names in _names(fams, plan).items():
        read.update(read_exporter(rng, exporters[exporter], truth, names, line.grid, at, step))
    idx = np.clip(((at - line.grid[0]) // (line.grid[1] - line.grid[0])).astype(np.int64), 0, line.grid.size - 1)
    present = line.alive[:, idx]
    name = f"{plan.workload}-{_suffix(rng)}"
    pods = []
    for p, pod_name in enumerate(_pod_names(rng, name, plan.pods)):
        signals = {n: np.where(present[p], v[p], np.nan) for n, v in sorted(read.items()) if n in SIGNALS}
        pods.append(
            PodWindow(
                pod=pod_name,
                node=f"gpu-{plan.boards[p].model_name.split()[-1].lower()}-{_suffix(rng)}",
                gpu_model=plan.boards[p].model_name,
                gpu_count=plan.gpus,
                signals=SignalBlock.of(signals, samples),
                co_located_pods=int(rng.integers(1, 6)) if plan.neighbour_cores[p] > 0 else 0,
            )
        )
    families, coverage = families_and_coverage(pods)
    notes = () if Family.DCGM_PROF in fams else ("no PROF fields",)
    quality = DataQuality(families, coverage, exporters["dcgm"].interval, notes)
    window = JobWindow(str(rng.choice(NAMESPACES)), name, start, end, step, at, tuple(pods), quality)
    return FamilyNJob(window.namespace, name, plan.label, plan.mechanism, tuple(plan.tags), window)


def generate_family_n(seed: int, n: int, *, start: float, step: float = 30.0) -> list[FamilyNJob]:
    """``n`` labelled jobs of family N, the same for the same arguments.

    Args:
        seed: the family's seed (>= 0); job i draws from its own generator seeded (seed, i).
        n: how many jobs; the five classes come in equal numbers (to within one) in shuffled order.
        start: every window's first timestamp, unix seconds.
        step: seconds between a window's timestamps.

    Returns:
        The jobs, in order.

    Raises:
        ValueError: a negative seed or count, or a step that is not positive.
    """
    if seed < 0 or n < 0:
        raise ValueError(f"seed and n must be >= 0, not {seed} and {n}")
    if not step > 0:
        raise ValueError(f"step must be positive, not {step}")
    order = [CLASSES[i % len(CLASSES)] for i in range(n)]
    np.random.default_rng([seed, n, 1]).shuffle(order)  # three words: never a job's (seed, i)
    jobs = []
    memory_seen = 0
    for i, label in enumerate(order):
        variant = memory_seen if label is Bottleneck.MEMORY else 0
        memory_seen += label is Bottleneck.MEMORY
        rng = np.random.default_rng([seed, i])
        jobs.append(_job(rng, i, label, variant, float(start), float(step)))
    return jobs
