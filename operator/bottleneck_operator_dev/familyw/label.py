"""The counterfactual label: rerun the Job with one resource doubled for it alone, and see what helps most.

Every variant reuses the Job's own draws (the same cells, the same noise), so the only difference
between two runs is the doubled capacity. The class whose doubling raises the window's steps per
second most is the label; the mechanism is the variant that won, read finer where the class has
several (which CPU limit bound, whether kernels were launch-bound).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.verdict import Bottleneck, Mechanism
from bottleneck_operator_dev.familyw.fluid import Run, integrate
from bottleneck_operator_dev.familyw.model import VARIANT_CLASS, VARIANTS, JobPlan, Rates, loader_limit, stage_rates


@dataclass
class Outcome:
    """What the counterfactual runs of one Job say."""

    label: Bottleneck
    mechanism: Mechanism
    winner: str
    gains: dict[str, float]  # variant -> steps/s with it doubled over the baseline's
    base: Run


def applicable(p: JobPlan, base: Rates | None = None) -> tuple[str, ...]:
    """The variants worth a run: the others would rerun the baseline exactly, or nearly so.

    Exactly: a limit nothing reaches (no swap, no exposed communication, no HBM-bound kernel
    group). Nearly: a host stage (storage, loader, copy) whose capacity in its worst second is still
    half as much again as the devices could take in their best; doubling it leaves the flow as it was.
    """
    out = []
    if base is not None:
        live = p.pause < 1
        peak = float(base.gpu.max()) if live.any() else 0.0
        ample = {
            "storage": float(base.io.min()) >= 1.5 * peak,
            "cpu": float(base.dec.min()) >= 1.5 * peak,
            "pcie": (float(base.copy.min()) >= 1.5 * peak and p.nvl_bw > 0)
            or (p.gpus < 2 and float(base.copy.min()) >= 1.5 * peak),
            "nvlink": float(base.exposed.max()) <= 0.0,
            "network": float(base.exposed.max()) <= 0.0 and float(base.copy.min()) >= 1.5 * peak,
            "hbm": float(base.mem_share.max()) <= 0.0,
        }
    else:
        ample = {}
    for v in VARIANTS:
        if ample.get(v, False):
            continue
        if v == "memory" and float(p.ws.max()) <= 0.8 * p.mem_limit:
            continue  # nothing swaps and the page cache is not squeezed: a higher limit changes nothing
        if v == "nvlink" and (p.gpus < 2 or p.nvl_bw <= 0):
            continue
        if v == "network" and p.nodes < 2:
            continue
        out.append(v)
    return tuple(out)


def mechanism_of(p: JobPlan, winner: str, base: Rates | None = None) -> Mechanism:
    """The mechanism a winning variant stands for in this Job."""
    base = base if base is not None else stage_rates(p)
    if winner == "storage":
        return Mechanism.LOCAL_DISK if p.storage.local else Mechanism.NETWORK_STORAGE
    if winner == "cpu":
        kind = loader_limit(p)
        return {"workers": Mechanism.TOO_FEW_WORKERS, "quota": Mechanism.THROTTLED}.get(kind, Mechanism.SATURATED)
    if winner == "compute":
        launch = float(np.mean(base.launch_share))
        return Mechanism.LAUNCH_BOUND if launch > 0.5 else Mechanism.COMPUTE
    return {
        "memory": Mechanism.HOST_MEMORY_PRESSURE,
        "hbm": Mechanism.HBM_BANDWIDTH,
        "pcie": Mechanism.PCIE,
        "nvlink": Mechanism.NVLINK,
        "network": Mechanism.NETWORK,
    }[winner]


def decide(gains: dict[str, float]) -> str:
    """The variant with the largest gain; ties go to the earlier variant of :data:`VARIANTS`."""
    best = max(gains.values())
    return next(v for v in VARIANTS if v in gains and gains[v] >= best - 1e-12)


def counterfactuals(plans: list[JobPlan]) -> list[Outcome]:
    """Run every Job's baseline (recorded) and its applicable variants together, and label each Job."""
    groups: list[tuple[Run, dict[str, Run]]] = []
    runs: list[Run] = []
    for p in plans:
        base = Run(p, stage_rates(p), record=True)
        variants = {v: Run(p, stage_rates(p, v)) for v in applicable(p, base.rates)}
        groups.append((base, variants))
        runs += [base, *variants.values()]
    integrate(runs)
    out = []
    for base, variants in groups:
        ref = max(base.steps_per_s, 1e-12)
        gains = {v: r.steps_per_s / ref for v, r in variants.items()}
        winner = decide(gains) if gains else "compute"
        out.append(Outcome(VARIANT_CLASS[winner], mechanism_of(base.plan, winner, base.rates), winner, gains, base))
    return out
