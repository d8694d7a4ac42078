"""Family AI's Jobs: drawn, aimed, measured, watched and read into contract windows."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.signals import Family
from bottleneck_operator.contract.verdict import CLASSES, Bottleneck, Mechanism
from bottleneck_operator.contract.window import DataQuality, JobWindow, PodWindow, SignalBlock, families_and_coverage
from bottleneck_operator_dev.familyai.accounting import gpu_activity, gpu_bytes, host, power_and_clock
from bottleneck_operator_dev.familyai.aims import aim
from bottleneck_operator_dev.familyai.observed import node_view, pod_view
from bottleneck_operator_dev.familyai.plan import Plan, draw_plan, log_uniform
from bottleneck_operator_dev.familyai.podsignals import PodState, pod_signals
from bottleneck_operator_dev.familyai.scrapeconfig import ScrapeConfig, draw_scrapes
from bottleneck_operator_dev.familyai.stepmodel import Stages, measure, stage_series, step_times
from bottleneck_operator_dev.familyai.timeline import Timeline, draw_timeline

FloatArray = npt.NDArray[np.float64]
MAX_TRIES = 30
MAX_DRAWS = 400
NAMESPACES = ("ml-research", "vision", "llm-train", "recsys", "speech", "platform-ml", "default", "batch-gpu")


@dataclass(frozen=True)
class FamilyAIJob:
    """One labelled Job of family AI.

    Attributes:
        namespace: the Job's namespace.
        name: the Job's name.
        label: the class of the stage that limits its step (never Unknown).
        mechanism: how that class limits it (a ``Mechanism`` value of the label's class).
        tags: what was drawn for it (machines, telemetry, window), never its class.
        window: its telemetry, as the data layer would hand it to the analysis.
    """

    namespace: str
    name: str
    label: Bottleneck
    mechanism: str
    tags: tuple[str, ...]
    window: JobWindow


@dataclass(frozen=True)
class _Drawn:
    plan: Plan
    tl: Timeline
    st: Stages
    label: Bottleneck
    mechanism: Mechanism


def _steady(tl: Timeline, start: float, end: float) -> FloatArray:
    inside = (tl.t >= start) & (tl.t <= end)
    any_alive = np.asarray(tl.alive.any(axis=0), dtype=bool)
    all_alive = np.asarray(tl.alive.all(axis=0), dtype=bool)
    masks = (inside & all_alive & ~tl.pause & ~tl.warm, inside & any_alive, any_alive)
    for w in masks:
        if w.any():
            return np.asarray(w, dtype=np.float64)
    return np.ones_like(tl.t)


def _draw(rng: np.random.Generator, target: Bottleneck, way: float, start: float, end: float) -> _Drawn:
    drawn: _Drawn | None = None
    attempt = 0
    strength = log_uniform(rng, (0.3, 3.0))
    for _ in range(MAX_DRAWS):
        plan = draw_plan(rng)
        if not aim(plan, target, rng, strength * 1.2**attempt, way):
            continue
        attempt += 1
        restart = float(rng.uniform(0.5, 3.0)) if plan.fault_per_step > 0 and not plan.swap else 0.02
        tl = draw_timeline(rng, plan, start, end, restart)
        clock = tl.gpu_spread.min(axis=1)
        st = stage_series(plan, tl, clock)
        # power: clocks drop where the board would draw more than its limit
        act = gpu_activity(np.random.default_rng(0), plan, tl, st, step_times(st, plan, tl.alive))
        pw = power_and_clock(np.random.default_rng(0), plan, tl, act)
        weight = _steady(tl, start, end)
        scale = (pw["clock"] * weight).sum(axis=1) / max(weight.sum(), 1.0) / plan.gpu.boost_mhz
        st = stage_series(plan, tl, clock * np.clip(scale, 0.3, 1.0))
        label, mechanism, _ = measure(st, plan, tl, weight)
        drawn = _Drawn(plan, tl, st, label, mechanism)
        if label is target or attempt >= MAX_TRIES:
            break
    if drawn is None:  # no machine fitted the way: aim anywhere
        return _draw(rng, target, float(rng.random()), start, end)
    return drawn


def _tags(plan: Plan, cfg: ScrapeConfig, tl: Timeline, span: float, short: bool) -> tuple[str, ...]:
    tags = [
        f"model:{plan.gpu.short}",
        f"size:{plan.gpus_per_pod}x{plan.pods}",
        f"workload:{plan.workload.kind}",
        f"storage:{plan.storage.kind}",
        f"scrape:{cfg.interval['dcgm']:g}s",
        f"dcgm-collect:{cfg.collect:g}s",
        f"dcgm-fields:{cfg.field_set}",
        f"dcgm-labels:{cfg.layout['dcgm']}",
        f"node-labels:{cfg.layout['node']}",
        f"span:{'<5m' if span < 300 else '<20m' if span < 1200 else '<=1h'}",
    ]
    if plan.fabric is not None:
        tags.append(f"fabric:{plan.fabric.kind}")
    if plan.gpudirect:
        tags.append("gpudirect-rdma")
    if plan.power_limit < plan.gpu.tdp_w:
        tags.append("power-limit-below-tdp")
    if max(plan.neighbours) > 0:
        tags.append("shared-node")
    if plan.swap:
        tags.append("node-swap")
    if any(tl.restarts) or cfg.collector_reset is not None or cfg.ib_reset is not None:
        tags.append("counter-reset")
    if cfg.outage:
        tags.append("exporter-outage")
    for fam in (Family.CADVISOR, Family.KSM, Family.NODE, Family.NODE_PSI, Family.SIDECAR):
        if fam not in cfg.present:
            tags.append(f"missing:{fam.value}")
    if short:
        tags.append("too-short")
    return tuple(tags)


def make_job(seed: int, i: int, start: float, step: float) -> FamilyAIJob:
    """Job ``i`` of the family drawn from ``seed``: it depends on (seed, i, start, step) alone."""
    order = np.random.default_rng([seed, i // 5, 0xB10C]).permutation(len(CLASSES))
    target = CLASSES[int(order[i % 5])]
    rng = np.random.default_rng([seed, i, 0xA1])
    short = rng.random() < 0.03
    span = float(rng.uniform(20.0, 100.0)) if short else log_uniform(rng, (300.0, 3600.0))
    at: FloatArray = start + step * np.arange(int(span // step) + 1, dtype=np.float64)
    end = float(at[-1])
    way = float(np.random.default_rng([seed, i, 0xA2]).random())
    d = _draw(rng, target, way, start, max(end, start + step))
    plan, tl, st = d.plan, d.tl, d.st
    cfg = draw_scrapes(rng, start, span, plan.rdma_hw, plan.cpu_limit is not None)
    sp = step_times(st, plan, tl.alive)
    act = gpu_activity(rng, plan, tl, st, sp)
    h = host(rng, plan, tl, st, sp)
    pod = pod_view(rng, plan, tl, h, sp)
    state = PodState(
        act,
        power_and_clock(rng, plan, tl, act),
        gpu_bytes(rng, plan, tl, sp),
        pod,
        node_view(rng, plan, tl, h, pod, sp),
    )
    name = f"train-{seed % 1000:03d}-{i:05d}"
    pods = []
    for p in range(plan.pods):
        signals = pod_signals(rng, plan, tl, cfg, p, state, at, step)
        suffix = "".join(rng.choice(list("bcdfghjklmnpqrstvwxz2456789"), size=5))
        pods.append(
            PodWindow(
                pod=f"{name}-{p}-{suffix}",
                node=f"gpu-{plan.gpu.short}-{int(rng.integers(100, 999))}",
                gpu_model=plan.gpu.model_name,
                gpu_count=plan.gpus_per_pod,
                signals=SignalBlock.of(signals, length=at.size),
                co_located_pods=plan.neighbours[p],
            )
        )
    families, coverage = families_and_coverage(pods)
    notes = () if Family.DCGM_PROF in families else ("no PROF fields",)
    quality = DataQuality(families, coverage, cfg.interval["dcgm"], notes, dict(cfg.layout))
    window = JobWindow(NAMESPACES[int(rng.integers(len(NAMESPACES)))], name, start, end, step, at, tuple(pods), quality)
    return FamilyAIJob(window.namespace, name, d.label, d.mechanism.value, _tags(plan, cfg, tl, span, short), window)


def generate_family_ai(seed: int, n: int, *, start: float, step: float = 30.0) -> list[FamilyAIJob]:
    """``n`` labelled Jobs; Job ``i`` depends on (seed, i) only, and each block of five aims at every class once.

    Args:
        seed: the family's seed.
        n: how many Jobs (>= 0).
        start: the windows' start, unix seconds.
        step: seconds between the windows' timestamps (> 0).

    Raises:
        ValueError: ``n`` is negative or ``step`` is not positive.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, not {n}")
    if not step > 0:
        raise ValueError(f"step must be > 0, not {step}")
    return [make_job(seed, i, float(start), float(step)) for i in range(n)]
