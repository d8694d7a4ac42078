"""Family P: labelled job windows from a shared, heterogeneous, multi-tenant GPU cluster.

Each job is drawn from its own generator (seeded ``(seed, i)``): a team's workload and launch
settings on one node pool, its step model (which decides the label), the cluster's exporter setup,
then what those exporters would have let Prometheus hold over the window.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.signals import SIGNALS, Family
from bottleneck_operator.contract.verdict import CLASSES, Bottleneck
from bottleneck_operator.contract.window import DataQuality, JobWindow, PodWindow, SignalBlock, families_and_coverage
from bottleneck_operator_dev.familyp.fleet import Exporters, draw_exporters
from bottleneck_operator_dev.familyp.gpu import dcgm_truth
from bottleneck_operator_dev.familyp.host import node_truth, pod_truth
from bottleneck_operator_dev.familyp.scrape import read_series, scrape_indices
from bottleneck_operator_dev.familyp.timeline import Timeline, build_timeline
from bottleneck_operator_dev.familyp.workloads import Plan, draw_plan

NAMESPACES = ("team-llm", "recsys-prod", "vision-research", "speech", "genai", "ml-platform", "graph-lab")
DCGM_SETS = {
    "dev": {Family.DCGM_DEV},
    "default": {Family.DCGM_DEV, Family.DCGM_PROF},
    "full": {Family.DCGM_DEV, Family.DCGM_PROF, Family.DCGM_PROF_SM, Family.DCGM_PROF_PIPES, Family.DCGM_PROF_NVLINK},
}
POD_SCOPED = ("dcgm", "cadvisor", "ksm", "sidecar")  # series that vanish while the pod restarts


@dataclass(frozen=True)
class FamilyPJob:
    """One labelled job of family P.

    Attributes:
        namespace, name: the Job's namespace and name.
        label: the class whose removal shortens the job's step most, from its step model.
        mechanism: how that class limits it (e.g. "hbm-bandwidth", "host-memory-pressure", "network").
        tags: workload, pool, storage, launch settings and cluster quirks, for slicing results.
        window: the telemetry a Prometheus would hold for it.
    """

    namespace: str
    name: str
    label: Bottleneck
    mechanism: str
    tags: tuple[str, ...]
    window: JobWindow


def _mechanism(plan: Plan) -> str:
    m = plan.model
    cls = m.bound()[0]
    if cls is Bottleneck.MEMORY:
        return m.memory_mechanism()
    if cls is Bottleneck.INTERCONNECT:
        if m.h2d >= m.comm:
            return "pcie"
        if plan.pods > plan.pods_per_node:
            return "network"
        return "nvlink" if plan.board.nvlink_bps > 0 else "pcie"
    return plan.mechanism


def _wanted(name: str, plan: Plan, ex: Exporters, row: np.ndarray) -> bool:
    """Whether this cluster's exporters publish the signal for this job at all."""
    spec = SIGNALS[name]
    fam = spec.family
    if fam.exporter_name not in ex.present or (np.isnan(row).all() and name != "mem_limit_bytes"):
        return False
    if fam.exporter_name == "dcgm":
        if fam is Family.DCGM_POWER_CLOCKS:
            return ex.power_clocks
        if name == "gpu_util" and plan.partition == "mig":
            return False  # not supported under MIG
        if plan.board.prof == "engine" and fam is not Family.DCGM_DEV:
            return name == "gr_engine_active"
        return fam in DCGM_SETS[ex.dcgm_fields]
    if fam is Family.NODE_PSI:
        return ex.psi
    if fam is Family.NODE_IB:
        return ex.ib_collector and plan.pool.fabric != "tcp"
    return True


def _down(tl: Timeline, pod: int) -> tuple[int, int]:
    """The fine-index span while a restarted pod was gone ([a, a) when it never restarted)."""
    at = tl.restart[pod]
    if at < 0:
        return 0, 0
    back = np.flatnonzero(tl.active[pod, at:] > 0)
    return at, at + (int(back[0]) if back.size else tl.active.shape[1] - at)


def _pod_signals(
    rng: np.random.Generator,
    plan: Plan,
    ex: Exporters,
    tl: Timeline,
    truth: dict[str, np.ndarray],
    grid: np.ndarray,
    step: float,
    pod: int,
) -> SignalBlock:
    n = tl.times.size
    names: list[str] = []
    rows: list[np.ndarray] = []
    for exporter in ("dcgm", "cadvisor", "ksm", "node", "sidecar"):
        group = [k for k in truth if k in SIGNALS and SIGNALS[k].family.exporter_name == exporter]
        group = [k for k in group if _wanted(k, plan, ex, truth[k][pod])]
        if not group:
            continue
        interval = ex.scrape[exporter]
        at = scrape_indices(rng, n, interval)
        a, b = _down(tl, pod) if exporter in POD_SCOPED else (0, 0)
        keep = (at < a) | (at >= b)
        if exporter == "dcgm":
            keep &= (at < tl.dcgm_gap[0]) | (at >= tl.dcgm_gap[1])
        reset = a if exporter in ("cadvisor", "sidecar") and b > a else -1
        specs = [SIGNALS[k] for k in group]
        block = np.stack([np.nan_to_num(truth[k][pod], nan=0.0) for k in group])
        values = read_series(specs, block, tl.times, at[keep], grid, interval, step, reset, rng)
        if "mem_limit_bytes" in group:
            values[group.index("mem_limit_bytes")] = np.where(
                np.isnan(truth["mem_limit_bytes"][pod, 0]), np.nan, values[group.index("mem_limit_bytes")]
            )
        names += group
        rows.append(values)
    return SignalBlock(names, np.concatenate(rows) if rows else np.empty((0, grid.size)))


def _job(seed: int, i: int, target: Bottleneck, memory: str | None, start: float, step: float) -> FamilyPJob:
    rng = np.random.default_rng([seed, i])
    samples = int(rng.integers(20, 121))
    grid = start + step * np.arange(samples, dtype=np.float64)
    plan = draw_plan(rng, target, memory)
    ex = draw_exporters(rng)
    tl = build_timeline(rng, plan, start, float(grid[-1]))
    truth = dcgm_truth(rng, plan, tl)
    pod = pod_truth(rng, plan, tl)
    truth.update(pod)
    truth.update(node_truth(rng, plan, tl, pod))
    name = f"{plan.workload}-{i:04d}-{int(rng.integers(16**5)):05x}"
    base = int(rng.integers(100))
    pods = tuple(
        PodWindow(
            pod=f"{name}-{p}-{int(rng.integers(36**5)):07x}",
            node=f"{plan.pool.name}-{base + p // plan.pods_per_node:03d}",
            gpu_model=plan.board.model,
            gpu_count=plan.gpus,
            signals=_pod_signals(rng, plan, ex, tl, truth, grid, step, p),
            co_located_pods=plan.neighbours,
        )
        for p in range(plan.pods)
    )
    families, coverage = families_and_coverage(pods)
    notes = ("no PROF fields",) if ex.dcgm_fields == "dev" else ()
    namespace = NAMESPACES[int(rng.integers(len(NAMESPACES)))]
    window = JobWindow(
        namespace,
        name,
        float(grid[0]),
        float(grid[-1]),
        step,
        grid,
        pods,
        DataQuality(families, coverage, ex.scrape["dcgm"], notes),
    )
    label, best, second = plan.model.bound()
    lead = best / second
    strength = "borderline" if lead < 1.2 else "moderate" if lead < 2.0 else "strong"
    tags = (*plan.tags, strength, f"dcgm-{ex.dcgm_fields}", f"scrape-{ex.scrape['dcgm']:.0f}s")
    tags += tuple(t for t, on in (("pod-restart", max(tl.restart) >= 0), ("dcgm-gap", tl.dcgm_gap[1] > 0)) if on)
    return FamilyPJob(namespace, name, label, _mechanism(plan), tags, window)


def generate_family_p(seed: int, n: int, *, start: float, step: float = 30.0) -> list[FamilyPJob]:
    """``n`` labelled jobs, the five classes in equal numbers (up to n mod 5) in shuffled order.

    Args:
        seed: the family's seed; job ``i`` is drawn from its own generator seeded ``(seed, i)``.
        n: how many jobs.
        start: unix time every window starts at (never the clock).
        step: seconds between a window's timestamps.

    Returns:
        The jobs, deterministic for a given ``(seed, n, start, step)``.

    Raises:
        ValueError: ``n`` is negative or ``step`` is not positive.
    """
    if n < 0 or not step > 0:
        raise ValueError(f"n must be >= 0 and step > 0 (got n={n}, step={step})")
    order = [CLASSES[k % len(CLASSES)] for k in range(n)]
    np.random.default_rng([seed, 2**31]).shuffle(order)  # type: ignore[arg-type]
    jobs, memory_seen = [], 0
    for i, target in enumerate(order):
        memory = None
        if target is Bottleneck.MEMORY:
            memory = ("host-memory-pressure", "hbm-bandwidth")[memory_seen % 2]
            memory_seen += 1
        jobs.append(_job(seed, i, target, memory, start, step))
    return jobs
