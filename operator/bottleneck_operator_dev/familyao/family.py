"""The family's entry point: labelled Jobs of shared GPUs and elastic training, one window each."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.sampling import rate_range
from bottleneck_operator.contract.signals import SIGNALS, Family
from bottleneck_operator.contract.verdict import CLASSES, Bottleneck, Mechanism
from bottleneck_operator.contract.window import DataQuality, JobWindow, PodWindow, families_and_coverage
from bottleneck_operator_dev.familyao.activity import JobDraws, gpu_series, host_series
from bottleneck_operator_dev.familyao.cluster import Cluster, draw_cluster
from bottleneck_operator_dev.familyao.exporters import RESETTING, sample_pod
from bottleneck_operator_dev.familyao.hardware import Sharing
from bottleneck_operator_dev.familyao.plan import Plan, draw_plan
from bottleneck_operator_dev.familyao.steps import Label, account, label
from bottleneck_operator_dev.familyao.timeline import TICK, Timeline, build_timeline

ATTEMPTS = 8  # redraws towards the intended class; the label is always the counterfactual's
TOO_SHORT = 0.05  # share of Jobs whose window holds too few samples to judge
NAMESPACES = ("vision", "nlp-research", "recsys", "speech", "platform-ml")


@dataclass(frozen=True)
class FamilyAOJob:
    """One labelled Job.

    Attributes:
        namespace, name: the Job's.
        label: the class whose stage's removal speeds the step most (never Unknown).
        mechanism: how that stage limits it, one of ``MECHANISMS[label]``.
        tags: what was drawn; ``too-short`` for a window too short to judge, ``hard`` for a close call.
        window: the telemetry, one PodWindow per pod.
    """

    namespace: str
    name: str
    label: Bottleneck
    mechanism: Mechanism
    tags: tuple[str, ...]
    window: JobWindow


def _intents(seed: int, block: int) -> list[Bottleneck]:
    order = np.random.default_rng((seed, block, 5)).permutation(len(CLASSES))
    return [CLASSES[int(k)] for k in order]


def _plan(rng: np.random.Generator, intent: Bottleneck) -> tuple[Plan, Label]:
    plan = draw_plan(rng, intent)
    lab = label(plan.times, plan.causes)
    for _ in range(ATTEMPTS - 1):
        if lab.bottleneck is intent:
            break
        plan = draw_plan(rng, intent)
        lab = label(plan.times, plan.causes)
    return plan, lab


def _draws(rng: np.random.Generator, plan: Plan, n_ticks: int) -> JobDraws:
    return JobDraws(
        tensor_eff=float(rng.uniform(0.5, 0.75)) if plan.amp else (0.35 if plan.board.tf32 else 0.0),
        fb_frac=float(rng.uniform(0.82, 0.97)),
        occupancy=float(rng.uniform(0.3, 0.6)),
        neighbour_net=float(rng.uniform(1e6, 5e7)),
        node_mem=plan.mem_limit * float(rng.uniform(2.0, 6.0)),
        mmap_dataset=bool(rng.random() < 0.3),
        sidecar_reset=int(rng.integers(n_ticks)) if rng.random() < 0.1 else -1,
    )


def _oom_ticks(rng: np.random.Generator, plan: Plan, n_ticks: int) -> list[int]:
    """Without swap, a working set past the limit gets the cgroup's OOM killer now and then."""
    if plan.times.hostmem <= 0 or plan.swap:
        return []
    return sorted(int(k) for k in rng.integers(0, n_ticks, size=int(rng.integers(1, 4))))


def _pods(
    rng: np.random.Generator, plan: Plan, tl: Timeline, cluster: Cluster, at: np.ndarray, step: float
) -> tuple[PodWindow, ...]:
    acct = account(plan.times)
    draws = _draws(rng, plan, tl.ticks.size)
    oom = _oom_ticks(rng, plan, tl.ticks.size)
    pods = []
    for k, track in enumerate(tl.pods):
        values = gpu_series(plan, acct, track, draws) | host_series(plan, acct, track, tl, draws, oom)
        keep = {n: v for n, v in values.items() if SIGNALS[n].family in cluster.families}
        if plan.sharing is Sharing.MIG:
            keep.pop("gpu_util", None)  # not supported under MIG (TELEMETRY.md)
        if not plan.board.prof:
            for name in ("tensor_active", "dram_active", "pcie_tx_bps", "pcie_rx_bps"):
                keep.pop(name, None)
        resets = {e: list(track.resets) for e in RESETTING}
        if draws.sidecar_reset >= 0:
            resets["sidecar"].append(draws.sidecar_reset)
        signals = sample_pod(rng, keep, tl.ticks, track.present, resets, cluster.scrapes, at, step)
        neighbours = int(plan.neighbour_cores // 8) + (1 if plan.tenant_load > 0 else 0)
        gpus = plan.gpus if Family.DCGM_DEV in cluster.families else 0
        pods.append(PodWindow(track.name, f"gpu-node-{k:02d}", plan.board.model_name, gpus, signals, neighbours))
    return tuple(pods)


def _tags(plan: Plan, lab: Label, cluster: Cluster, tl: Timeline, intent: Bottleneck) -> list[str]:
    tags = [f"intent-{intent.value}", f"stage-{lab.stage}", plan.board.model_name, plan.sharing.value]
    tags += [f"mig-{plan.mig.name}"] if plan.mig else []
    tags += [f"fabric-{plan.fabric.value}"] if plan.fabric else []
    tags += [f"storage-{plan.storage.value}", plan.kind, "amp" if plan.amp else "fp32"]
    tags += ["recompute"] if plan.recompute else []
    tags += [f"grad-accum-{plan.accum}"] if plan.accum > 1 else []
    tags += ["power-capped"] if plan.power_limit < plan.board.tdp_w else []
    tags += [f"pods-{plan.pods}", f"gpus-per-pod-{plan.gpus}", *tl.events, *cluster.tags]
    tags += ["counter-reset"] if any(t.resets for t in tl.pods) else []
    return tags


def make_job(seed: int, i: int, intent: Bottleneck, start: float, step: float) -> FamilyAOJob:
    """Job ``i``: everything from ``default_rng((seed, i))``."""
    rng = np.random.default_rng((seed, i))
    plan, lab = _plan(rng, intent)
    cluster = draw_cluster(rng, plan)
    short = bool(rng.random() < TOO_SHORT)
    samples = int(rng.integers(4, 12)) if short else int(rng.integers(60, 200))
    at = start + step * np.arange(samples, dtype=np.float64)
    end = float(at[-1])
    lookback = rate_range(step, max(cluster.scrapes.interval.values())) + 2 * TICK
    name = f"ao-{i:04d}-{plan.kind}"
    tl = build_timeline(rng, name, plan.pods, plan.clock, start - lookback, end, start)
    pods = _pods(rng, plan, tl, cluster, at, step)
    families, coverage = families_and_coverage(pods)
    notes = [f"dcgm fields: {cluster.field_set}"] + (["MIG instance: no GPU_UTIL"] if plan.mig else [])
    quality = DataQuality(families, coverage, cluster.scrapes.interval["dcgm"], tuple(notes), cluster.layout)
    namespace = NAMESPACES[int(rng.integers(len(NAMESPACES)))]
    window = JobWindow(namespace, name, float(at[0]), end, step, at, pods, quality)
    tags = _tags(plan, lab, cluster, tl, intent) + (["too-short"] if short else []) + (["hard"] if lab.hard else [])
    return FamilyAOJob(namespace, name, lab.bottleneck, lab.mechanism, tuple(tags), window)


def generate_family_ao(seed: int, n: int, start: float = 1_700_000_000.0, step: float = 30.0) -> list[FamilyAOJob]:
    """``n`` labelled Jobs; Job ``i`` depends on ``seed`` and ``i`` alone.

    Raises:
        ValueError: ``n`` is negative or ``step`` is not positive.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, not {n}")
    if not step > 0:
        raise ValueError(f"step must be > 0, not {step}")
    return [make_job(seed, i, _intents(seed, i // 5)[i % 5], start, step) for i in range(n)]
