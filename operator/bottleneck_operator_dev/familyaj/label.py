"""The label: the stage that, made ample, shortens the Job's step most over its window.

For each segment, every pod's stages are costed; the Job steps at its slowest pod. Each class's
stages are then made free in turn and the step recomputed; the savings, weighted by the time each
segment covers in the window, rank the classes. The mechanism is the part of the winning class
that saves most on its own.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.verdict import Bottleneck, Mechanism
from bottleneck_operator_dev.familyaj.fleet import Placement
from bottleneck_operator_dev.familyaj.stepmodel import Stages, pod_step, settled_stages
from bottleneck_operator_dev.familyaj.workload import Workload

CLASS_PARTS: dict[Bottleneck, tuple[str, ...]] = {
    Bottleneck.IO: ("read",),
    Bottleneck.CPU: ("cpu",),
    Bottleneck.INTERCONNECT: ("h2d", "intra", "inter"),
    Bottleneck.GPU: ("compute", "launch"),
    Bottleneck.MEMORY: ("hbm", "memstall"),
}


@dataclass(frozen=True)
class Account:
    """Where the Job's step time goes over the window.

    Attributes:
        stages: per segment, per pod, the stage costs.
        steps: per segment, the Job's step time.
        weights: per segment, the share of the window it covers.
        savings: per class, the time-weighted share of the step its removal saves.
        label: the class that saves most.
        mechanism: its part that saves most on its own.
        margin: the winner's saving over the runner-up's (inf when the runner-up saves nothing).
    """

    stages: tuple[tuple[Stages, ...], ...]
    steps: tuple[float, ...]
    weights: tuple[float, ...]
    savings: dict[Bottleneck, float]
    label: Bottleneck
    mechanism: Mechanism
    margin: float


def _job_step(per_pod: tuple[Stages, ...], ample: tuple[str, ...] = ()) -> float:
    return max(pod_step(st, ample) for st in per_pod)


def _saving(
    stages: tuple[tuple[Stages, ...], ...], steps: tuple[float, ...], w: np.ndarray, ample: tuple[str, ...]
) -> float:
    return float(sum(wi * (t - _job_step(s, ample)) / t for s, t, wi in zip(stages, steps, w, strict=True)))


def account(w: Workload, pl: Placement, duration: float) -> Account:
    """The step-time account of a Job over a window of ``duration`` seconds."""
    edges = pl.seg_edges
    covered = np.clip(np.minimum(edges[1:], duration) - np.maximum(edges[:-1], 0.0), 0.0, None)
    weights = covered / covered.sum() if covered.sum() > 0 else np.full(covered.size, 1.0 / covered.size)
    stages = tuple(tuple(settled_stages(w, pl, p, s) for p in range(pl.pods)) for s in range(edges.size - 1))
    steps = tuple(_job_step(per_pod) for per_pod in stages)
    savings = {c: _saving(stages, steps, weights, parts) for c, parts in CLASS_PARTS.items()}
    ranked = sorted(savings, key=lambda c: savings[c], reverse=True)
    best, second = ranked[0], ranked[1]
    margin = savings[best] / savings[second] if savings[second] > 1e-9 else float("inf")
    mech = _mechanism(best, pl, stages, steps, weights)
    return Account(stages, steps, tuple(float(x) for x in weights), savings, best, mech, margin)


def _mechanism(
    label: Bottleneck,
    pl: Placement,
    stages: tuple[tuple[Stages, ...], ...],
    steps: tuple[float, ...],
    weights: np.ndarray,
) -> Mechanism:
    if label is Bottleneck.IO:
        return Mechanism.LOCAL_DISK if pl.storage.local else Mechanism.NETWORK_STORAGE
    if label is Bottleneck.CPU:
        votes: dict[str, float] = {}
        for per_pod, wi in zip(stages, weights, strict=True):
            slowest = max(per_pod, key=lambda st: st.cpu)
            votes[slowest.cpu_bound_by] = votes.get(slowest.cpu_bound_by, 0.0) + float(wi)
        bound = max(votes, key=lambda k: votes[k])
        return {"workers": Mechanism.TOO_FEW_WORKERS, "limit": Mechanism.THROTTLED}.get(bound, Mechanism.SATURATED)
    parts = {
        Bottleneck.GPU: {Mechanism.COMPUTE: ("compute",), Mechanism.LAUNCH_BOUND: ("launch",)},
        Bottleneck.MEMORY: {Mechanism.HBM_BANDWIDTH: ("hbm",), Mechanism.HOST_MEMORY_PRESSURE: ("memstall",)},
    }.get(label)
    if parts is None:  # Interconnect: which link would save most
        intra = Mechanism.NVLINK if stages[0][0].intra_link == "nvlink" else Mechanism.PCIE
        gains = {
            Mechanism.PCIE: _saving(stages, steps, weights, ("h2d",)),
            intra: _saving(stages, steps, weights, ("intra",)),
            Mechanism.NETWORK: _saving(stages, steps, weights, ("inter",)),
        }
        if intra is Mechanism.PCIE:
            gains[Mechanism.PCIE] = _saving(stages, steps, weights, ("h2d", "intra"))
        return max(gains, key=lambda m: gains[m])
    gains = {m: _saving(stages, steps, weights, ample) for m, ample in parts.items()}
    return max(gains, key=lambda m: gains[m])
