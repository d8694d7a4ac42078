"""Family M's entry point: labelled job windows drawn from the step model and the exporters' view.

Job i is drawn from its own generator seeded (seed, i), so one job never depends on another's draws.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.signals import SIGNALS
from bottleneck_operator.contract.verdict import CLASSES, Bottleneck
from bottleneck_operator.contract.window import DataQuality, JobWindow, PodWindow, SignalBlock, families_and_coverage
from bottleneck_operator_dev.familym.dynamics import Power, draw_power, pauses, stages_over_time
from bottleneck_operator_dev.familym.exporters import node_gaps, observe, present_families
from bottleneck_operator_dev.familym.gpu import gpu_signals
from bottleneck_operator_dev.familym.host import host_signals
from bottleneck_operator_dev.familym.node import node_signals
from bottleneck_operator_dev.familym.plans import MECHANISMS, Plan, draw_plan
from bottleneck_operator_dev.familym.stages import Stages, label_of, removal_speedups, timing

NAMESPACES = ("ml-research", "team-nlp", "recsys-prod", "vision", "speech", "genai", "batch-train")
ATTEMPTS = 40


@dataclass(frozen=True)
class FamilyMJob:
    """One labelled job of family M.

    Attributes:
        namespace, name: the Job's.
        label: the class whose stage's removal speeds the step up most (the step model decides).
        mechanism: how that class limits the job (the contract's mechanism spelling).
        tags: workload, storage, fabric, strength and hard-case markers.
        window: the telemetry the operator would read.
    """

    namespace: str
    name: str
    label: Bottleneck
    mechanism: str
    tags: tuple[str, ...]
    window: JobWindow


def _targets(seed: int, n: int) -> list[tuple[Bottleneck, str]]:
    """Equal numbers of each class in shuffled order; each class's mechanisms in turn."""
    rng = np.random.default_rng([seed, 2**31 - 1])
    classes = [CLASSES[i % len(CLASSES)] for i in range(n)]
    order = rng.permutation(n)
    seen: dict[Bottleneck, int] = {}
    out = []
    for idx in order:
        cls = classes[int(idx)]
        k = seen.get(cls, 0)
        seen[cls] = k + 1
        out.append((cls, MECHANISMS[cls][k % len(MECHANISMS[cls])]))
    return out


def _accepted(
    rng: np.random.Generator, cls: Bottleneck, mechanism: str, length: int, step: float
) -> tuple[Plan, Stages, npt.NDArray[np.bool_], Power, dict[Bottleneck, float]]:
    """Draw plans until the step model labels one with the target class."""
    for _ in range(ATTEMPTS):
        plan = draw_plan(rng, cls, mechanism)
        power = draw_power(rng, plan)
        stages = stages_over_time(rng, plan, power, length)
        training = pauses(rng, length, step)
        speedups = removal_speedups(stages, training)
        if label_of(speedups) is cls:
            return plan, stages, training, power, speedups
    raise RuntimeError(f"no {cls} plan for mechanism {mechanism} in {ATTEMPTS} draws")


def _scrapes(rng: np.random.Generator) -> tuple[float, dict[str, float]]:
    interval = float(rng.choice([5.0, 10.0, 15.0, 30.0, 60.0], p=[0.1, 0.15, 0.35, 0.3, 0.1]))
    dcgm = max(interval, float(rng.choice([1.0, 10.0, 30.0], p=[0.2, 0.3, 0.5])))
    return interval, {"dcgm": dcgm, "cadvisor": interval, "ksm": interval, "node": interval, "sidecar": interval}


def _hard_tags(plan: Plan, speedups: dict[Bottleneck, float], capped: bool) -> tuple[str, ...]:
    ranked = sorted(speedups.values(), reverse=True)
    strength = speedups[plan.target]
    tags = ["strength:" + ("barely" if strength < 1.2 else "moderate" if strength < 2.0 else "strong")]
    if ranked[1] > 1.03 and ranked[1] > 1.0 + 0.6 * (ranked[0] - 1.0):
        runner = max((c for c in speedups if c is not plan.target), key=lambda c: speedups[c])
        tags.append(f"mixed:{runner.value}")
    if capped:
        tags.append("power-capped")
    return tuple(tags)


def _job(seed: int, i: int, cls: Bottleneck, mechanism: str, start: float, step: float) -> FamilyMJob:
    rng = np.random.default_rng([seed, i])
    length = int(rng.integers(20, 121))
    plan, stages, training, power, speedups = _accepted(rng, cls, mechanism, length, step)
    tm = timing(stages)
    cold = int(rng.integers(0, max(1, length // 3)))
    truth = gpu_signals(rng, plan, power, stages, tm, training)
    pod = host_signals(rng, plan, stages, tm, cold)
    no_swap = np.array([n.swap_bytes == 0 for n in plan.nodes])
    pod["sc_swapin_ps"][no_swap] = 0.0  # without swap, reclaim evicts file pages: refaults, not swap-ins
    truth.update(pod)
    truth.update(node_signals(rng, plan, stages, tm, pod))
    families, field_set = present_families(rng, plan)
    interval, scrapes = _scrapes(rng)
    seen = observe(rng, truth, families, step, scrapes)
    gaps = node_gaps(rng, len(plan.nodes))
    name = f"{plan.workload}-{i:04d}"
    pods = []
    for p, node in enumerate(plan.nodes):
        signals = {k: v[p] for k, v in seen.items() if not any(gaps[f][p] and SIGNALS[k].family is f for f in gaps)}
        pods.append(
            PodWindow(
                f"{name}-worker-{p}",
                node.name,
                plan.board.model,
                plan.gpus,
                SignalBlock.of(signals, length),
                co_located_pods=node.neighbours,
            )
        )
    fams, coverage = families_and_coverage(pods)
    timestamps = start + step * np.arange(length, dtype=np.float64)
    quality = DataQuality(families=fams, coverage=coverage, scrape_interval=interval)
    window = JobWindow(
        str(rng.choice(NAMESPACES)), name, start, float(timestamps[-1]), step, timestamps, tuple(pods), quality
    )
    tags = (*plan.tags, f"dcgm:{field_set}", f"scrape:{int(interval)}s", *_hard_tags(plan, speedups, power.capped))
    return FamilyMJob(window.namespace, name, cls, mechanism, tags, window)


def generate_family_m(seed: int, n: int, *, start: float, step: float = 30.0) -> list[FamilyMJob]:
    """Family M: ``n`` labelled job windows, the five classes in equal numbers, in shuffled order.

    Args:
        seed: the family's seed; job i draws from its own generator seeded (seed, i).
        n: number of jobs.
        start: every window's first timestamp, unix seconds (never the clock).
        step: seconds between timestamps.
    """
    if n < 0 or step <= 0:
        raise ValueError("n must be >= 0 and step > 0")
    return [_job(seed, i, cls, mech, start, step) for i, (cls, mech) in enumerate(_targets(seed, n))]
