"""Family H: the public entry point that turns (seed, n) into labelled job windows."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.sampling import rate_range
from bottleneck_operator.contract.signals import Family
from bottleneck_operator.contract.verdict import CLASSES, Bottleneck, Mechanism
from bottleneck_operator.contract.window import DataQuality, JobWindow, families_and_coverage
from bottleneck_operator_dev.familyh.assemble import Sources, pod_window
from bottleneck_operator_dev.familyh.cluster import Accidents, Cluster, draw_accidents, draw_cluster, draw_power
from bottleneck_operator_dev.familyh.draft import Draft, draft_natural
from bottleneck_operator_dev.familyh.gpu import clock_factors, gpu_fields
from bottleneck_operator_dev.familyh.host import pod_signals
from bottleneck_operator_dev.familyh.naming import job_names, tags_of
from bottleneck_operator_dev.familyh.node import node_signals
from bottleneck_operator_dev.familyh.timeline import build
from bottleneck_operator_dev.familyh.tune import tune
from bottleneck_operator_dev.familyh.workloads import MECHANISM_MIX

Rng = np.random.Generator
Array = npt.NDArray[np.float64]


@dataclass(frozen=True)
class FamilyHJob:
    """One labelled job of family H.

    Attributes:
        namespace: the Job's namespace.
        name: the Job's name.
        label: the class whose stages, removed, would speed the job's iteration up most.
        mechanism: how that class limits it (a :class:`~bottleneck_operator.contract.verdict.Mechanism` value).
        tags: what the job is and what happened to it (workload, board, storage, exporters, accidents, hardness).
        window: its telemetry as the data layer would hand it to the analysis.
    """

    namespace: str
    name: str
    label: Bottleneck
    mechanism: str
    tags: tuple[str, ...]
    window: JobWindow


def _targets(seed: int, n: int) -> list[tuple[Bottleneck, int]]:
    """The classes in equal numbers, shuffled; with each Memory job's index among Memory jobs."""
    order = [CLASSES[k % len(CLASSES)] for k in range(n)]
    np.random.default_rng([seed, 2**31 - 1]).shuffle(order)  # type: ignore[arg-type]
    seen: dict[Bottleneck, int] = {}
    out = []
    for cls in order:
        out.append((cls, seen.get(cls, 0)))
        seen[cls] = seen.get(cls, 0) + 1
    return out


def _mechanism(rng: Rng, cls: Bottleneck, k: int) -> Mechanism:
    mix = MECHANISM_MIX[cls]
    if cls is Bottleneck.MEMORY:
        # both mechanisms of the class, alternating, so neither is ever missing
        return mix[k % 2][0]
    w = np.array([x for _, x in mix])
    return mix[int(rng.choice(len(mix), p=w / w.sum()))][0]


def _drafted(rng: Rng, cls: Bottleneck, mech: Mechanism) -> tuple[Draft, tuple[str, ...], Array, tuple[float, bool]]:
    """A job the step model labels ``cls``, its hardness tags, its GPUs' clocks and its power set-up."""
    for _ in range(200):
        power = draw_power(rng)
        natural = draft_natural(rng, cls, mech)
        clock = clock_factors(rng, natural, power)
        # a capped or slow board stretches math-bound kernels before anything is tuned; so does a GPU
        # time-sliced with another pod (no MIG), whose kernels take turns with the job's
        shared = float(rng.uniform(0.15, 0.5)) if natural.gpus == 1 and rng.random() < 0.1 else 0.0
        s = natural.stages
        slowed = replace(
            natural,
            timeslice=shared,
            stages=replace(s, tensor_s=s.tensor_s / clock.min() / (1 - shared), hbm_s=s.hbm_s / (1 - shared)),
        )
        tuned = tune(rng, slowed, cls, mech)
        if tuned is not None:
            return tuned[0], tuned[1], clock, power
    raise RuntimeError(f"no physically possible {cls.value}/{mech.value} job drawn in 200 tries")


def _sources(rng: Rng, d: Draft, cl: Cluster, acc: Accidents, at: Array, step: float, clock: Array) -> Sources:
    lead = rate_range(step, cl.scrape_s) + 2 * cl.scrape_s
    h = 2.5 if cl.scrape_s <= 10 else 5.0
    grid = np.arange(at[0] - lead, at[-1] + h, h)
    tl = build(rng, d, acc, grid, float(at[0]), clock)
    gpu = gpu_fields(rng, d, cl, tl)
    # DEV fields are snapshots over a sub-second sample period: a slow, bursty step shows as on or off
    burst = float(np.clip((np.median(tl.step) - 0.3) / 3.0, 0.0, 0.85))
    if burst > 0:
        u = gpu["gpu_util"]
        gpu["gpu_util"] = (1 - burst) * u + burst * (rng.random(u.shape) < u)
    rates, gauges = pod_signals(rng, d, cl, acc, tl)
    if acc.container_restart is not None and d.mechanism is Mechanism.HOST_MEMORY_PRESSURE:
        pod, offset, _ = acc.container_restart
        rates["sc_oom_kills"][pod, int(np.searchsorted(grid, at[0] + offset))] = 1.0 / h
    node_rates, node_gauges = node_signals(rng, d, cl, acc, tl, {**rates, **gauges})
    return Sources(grid, at, gpu, {**rates, **node_rates}, {**gauges, **node_gauges})


def _job(seed: int, i: int, cls: Bottleneck, k: int, start: float, step: float) -> FamilyHJob:
    rng = np.random.default_rng([seed, i])
    mech = _mechanism(rng, cls, k)
    d, hardness, clock, power = _drafted(rng, cls, mech)
    cl = draw_cluster(
        rng,
        power,
        rdma=bool((d.fabric and d.fabric.rdma) or d.storage.rdma),
        prof_capable=d.board.prof,
        has_nvlink=d.board.nvlink_bps > 0,
        cpu_limit=d.cpu_limit is not None,
    )
    n = int(rng.integers(20, 121))
    at = start + step * np.arange(n, dtype=np.float64)
    free = d.node_cpus - d.gpus * (d.stages.cores + d.main_cores)
    shared = (d.cpu_limit is None and free > 0.1 * d.node_cpus) or (d.gpus < 8 and rng.random() < 0.4)
    shared = shared or d.timeslice > 0
    acc = draw_accidents(
        rng,
        span_s=float(at[-1] - at[0]),
        pods=d.pods,
        shared_node=shared,
        oom_prone=d.mechanism is Mechanism.HOST_MEMORY_PRESSURE,
    )
    src = _sources(rng, d, cl, acc, at, step, clock)
    namespace, name, pods = job_names(rng, d, i)
    # the pod's own network counters draw from a generator of their own: the other signals keep their draws
    net_rng = np.random.default_rng([seed, i, 0x4E7])
    windows = tuple(pod_window(rng, d, cl, acc, src, p, pods[p], step, net_rng) for p in range(d.pods))
    families, coverage = families_and_coverage(windows)
    notes = () if Family.DCGM_PROF in families or Family.DCGM_DEV not in families else ("no PROF fields",)
    quality = DataQuality(families=families, coverage=coverage, scrape_interval=cl.scrape_s, notes=notes)
    window = JobWindow(namespace, name, float(at[0]), float(at[-1]), step, at, windows, quality)
    return FamilyHJob(namespace, name, d.label, d.mechanism.value, tags_of(d, cl, acc, hardness), window)


def generate_family_h(seed: int, n: int, *, start: float, step: float = 30.0) -> list[FamilyHJob]:
    """``n`` labelled jobs of family H, every window starting at ``start`` on a ``step``-second grid.

    Deterministic per seed: job ``i`` is drawn from its own generator seeded ``(seed, i)``; the five
    classes come in equal numbers (to within one when ``n`` is not a multiple of five), shuffled.

    Args:
        seed: the family's seed.
        n: how many jobs.
        start: the windows' first timestamp (unix seconds); never the clock.
        step: seconds between a window's timestamps.

    Raises:
        ValueError: ``n`` negative or ``step`` not positive.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, not {n}")
    if not step > 0:
        raise ValueError(f"step must be > 0, not {step}")
    return [_job(seed, i, cls, k, start, step) for i, (cls, k) in enumerate(_targets(seed, n))]
