"""One family-I job drawn for a target class: plan, step, label and mechanism, before any telemetry.

The draw is repeated (from the job's own generator) until the step model labels the job with the
target class and mechanism; the label is always the model's answer, so balance across classes never
bends a label.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from bottleneck_operator.contract.verdict import Bottleneck, Mechanism
from bottleneck_operator_dev.familyi.plan import Plan, draw_plan, loader_cores
from bottleneck_operator_dev.familyi.stages import Stages, label_of, mechanism_of
from bottleneck_operator_dev.familyi.workloads import Archetype, add_rival, base_stages, grow_to, pick_archetype


@dataclass(frozen=True)
class Draft:
    """A job before telemetry.

    Attributes:
        plan, arch, stages: the job.
        label: the class whose removal shortens the step most.
        mechanism: how it does (a :class:`Mechanism` value).
        margin: the label's saving over the runner-up's, as a share of the step.
        cores_eff: cores the loader workers get.
        rival: the stage of another class grown to just short of the lead (a mixed job), or None.
    """

    plan: Plan
    arch: Archetype
    stages: Stages
    label: Bottleneck
    mechanism: str
    margin: float
    cores_eff: float
    rival: str | None


def _mechanism_for(rng: np.random.Generator, target: Bottleneck, memory: str) -> str:
    if target is Bottleneck.MEMORY:
        return memory
    if target is Bottleneck.IO:
        return str(rng.choice([Mechanism.LOCAL_DISK.value, Mechanism.NETWORK_STORAGE.value]))
    if target is Bottleneck.INTERCONNECT:
        return str(
            rng.choice([Mechanism.PCIE.value, Mechanism.NVLINK.value, Mechanism.NETWORK.value], p=[0.25, 0.3, 0.45])
        )
    if target is Bottleneck.GPU:
        return Mechanism.COMPUTE.value if rng.random() < 0.85 else Mechanism.LAUNCH_BOUND.value
    return Bottleneck.CPU.value


def _plan_for(rng: np.random.Generator, mechanism: str) -> Plan:
    if mechanism == Mechanism.NETWORK.value:
        return draw_plan(rng, min_pods=2)
    if mechanism == Mechanism.NVLINK.value:
        return draw_plan(rng, min_gpus=2, nvlink=True)
    plan = draw_plan(rng)
    if mechanism == Bottleneck.CPU.value:
        return _cpu_plan(rng, plan)
    if mechanism in (Mechanism.LOCAL_DISK.value, Mechanism.NETWORK_STORAGE.value):
        block = mechanism == Mechanism.LOCAL_DISK.value
        while plan.storage.block != block:
            plan = draw_plan(rng)
        plan = replace(plan, cache_hit=0.0)  # a dataset served from the page cache does not wait on storage
    return plan


def _cpu_plan(rng: np.random.Generator, plan: Plan) -> Plan:
    """A plan whose loader is capped by one of the three causes, drawn evenly."""
    cause = str(rng.choice([Mechanism.THROTTLED.value, Mechanism.SATURATED.value, Mechanism.TOO_FEW_WORKERS.value]))
    g, cpus = plan.gpus, plan.node.cpus
    if cause == Mechanism.THROTTLED.value:
        workers = int(rng.integers(6, 17)) * g
        return replace(
            plan, workers=workers, cpu_limit=float(g + rng.integers(2, 7) * g), neighbour_cpu=0.0, neighbours=0
        )
    if cause == Mechanism.SATURATED.value:
        workers = int(rng.integers(8, 25)) * g
        free = min(workers, cpus - g) * rng.uniform(0.3, 0.8)
        return replace(
            plan, workers=workers, cpu_limit=None, neighbours=int(rng.integers(2, 9)), neighbour_cpu=cpus - g - free
        )
    return replace(plan, workers=int(rng.integers(1, 4)) * g, cpu_limit=None if rng.random() < 0.6 else float(16 * g))


def _actual_mechanism(plan: Plan, stages: Stages, label: Bottleneck, cpu_cause: str) -> str:
    if label is Bottleneck.IO:
        return (Mechanism.LOCAL_DISK if plan.storage.block else Mechanism.NETWORK_STORAGE).value
    if label is Bottleneck.CPU:
        return cpu_cause
    return mechanism_of(stages, label, cpu_cause=Mechanism.SATURATED, nvlink=plan.board.nvlink_bps > 0).value


def draft(rng: np.random.Generator, target: Bottleneck, memory: str) -> Draft:
    """A job whose step model labels it ``target`` (with ``memory`` as the mechanism for Memory)."""
    last: Draft | None = None
    for _ in range(60):
        mechanism = _mechanism_for(rng, target, memory)
        plan = _plan_for(rng, mechanism)
        key = mechanism if target is Bottleneck.MEMORY else target.value
        arch = pick_archetype(rng, key)
        stages = grow_to(
            rng, base_stages(rng, arch, plan), mechanism if target is not Bottleneck.CPU else "CPU", target
        )
        stages, rival = add_rival(rng, stages, target)
        label, margin = label_of(stages)
        cores, cause = loader_cores(plan)
        actual = _actual_mechanism(plan, stages, label, cause)
        last = Draft(plan, arch, stages, label, actual, margin, cores, rival)
        wanted = None if target in (Bottleneck.IO, Bottleneck.CPU) else mechanism
        if label is target and margin > 0.005 and (wanted is None or actual == wanted):
            return last
    assert last is not None
    return last
