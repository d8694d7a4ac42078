"""The label: the class whose resources hold the largest share of the step's critical path."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.verdict import Bottleneck, Mechanism
from bottleneck_operator_dev.familyac.hardware import LOCAL_STORAGE
from bottleneck_operator_dev.familyac.stages import Stages
from bottleneck_operator_dev.familyac.timeline import (
    COMM,
    DECODE,
    FAULT,
    H2D,
    HBM,
    LAUNCH,
    MATH,
    PIN,
    READ,
    RESOURCES,
    RESTART,
    Timeline,
)

HARD_MARGIN = 0.05  # the runner-up within 5 % of the winner: a hard Job


@dataclass(frozen=True)
class Label:
    """The class, its mechanism, the class shares of the critical path and whether it was close."""

    bottleneck: Bottleneck
    mechanism: Mechanism
    shares: dict[Bottleneck, float]
    hard: bool


def resource_mechanisms(storage: str, s: Stages) -> dict[int, Mechanism]:
    """What each resource is, in the contract's terms, for this Job."""
    cpu = Mechanism(s.cpu_source) if s.cpu_source else Mechanism.TOO_FEW_WORKERS
    return {
        READ: Mechanism.LOCAL_DISK if storage in LOCAL_STORAGE else Mechanism.NETWORK_STORAGE,
        DECODE: cpu,
        PIN: cpu,
        H2D: Mechanism.PCIE,
        LAUNCH: Mechanism.LAUNCH_BOUND,
        MATH: Mechanism.COMPUTE,
        HBM: Mechanism.HBM_BANDWIDTH,
        COMM: Mechanism(s.comm_mech) if s.comm_mech else Mechanism.NVLINK,
        FAULT: Mechanism.HOST_MEMORY_PRESSURE,
        RESTART: Mechanism.HOST_MEMORY_PRESSURE,
    }


CLASS_OF: dict[Mechanism, Bottleneck] = {
    Mechanism.LOCAL_DISK: Bottleneck.IO,
    Mechanism.NETWORK_STORAGE: Bottleneck.IO,
    Mechanism.THROTTLED: Bottleneck.CPU,
    Mechanism.SATURATED: Bottleneck.CPU,
    Mechanism.TOO_FEW_WORKERS: Bottleneck.CPU,
    Mechanism.PCIE: Bottleneck.INTERCONNECT,
    Mechanism.NVLINK: Bottleneck.INTERCONNECT,
    Mechanism.NETWORK: Bottleneck.INTERCONNECT,
    Mechanism.COMPUTE: Bottleneck.GPU,
    Mechanism.LAUNCH_BOUND: Bottleneck.GPU,
    Mechanism.HOST_MEMORY_PRESSURE: Bottleneck.MEMORY,
    Mechanism.HBM_BANDWIDTH: Bottleneck.MEMORY,
}


def label(tl: Timeline, storage: str, s: Stages) -> Label:
    """Sum the critical path by mechanism and by class; the larger class wins, ties are hard."""
    total = float(tl.critical.sum()) or 1.0
    by_mech: dict[Mechanism, float] = {}
    for res, mech in resource_mechanisms(storage, s).items():
        by_mech[mech] = by_mech.get(mech, 0.0) + float(tl.critical[res]) / total
    shares = {
        c: 0.0 for c in (Bottleneck.IO, Bottleneck.CPU, Bottleneck.INTERCONNECT, Bottleneck.GPU, Bottleneck.MEMORY)
    }
    for mech, share in by_mech.items():
        shares[CLASS_OF[mech]] += share
    ranked = sorted(shares.items(), key=lambda kv: (-kv[1], kv[0].value))
    (top, first), (_, second) = ranked[0], ranked[1]
    mech = max((m for m in by_mech if CLASS_OF[m] is top), key=lambda m: (by_mech[m], m.value))
    return Label(top, mech, shares, bool(second >= (1.0 - HARD_MARGIN) * first))


def describe(tl: Timeline) -> str:
    """The critical path's shares by resource, for reading a Job by eye."""
    total = float(tl.critical.sum()) or 1.0
    return " ".join(
        f"{name}={share / total:.2f}" for name, share in zip(RESOURCES, tl.critical, strict=True) if share > 0
    ) + (f" steps={tl.steps} step_s={(tl.t1 - tl.t0) / max(tl.steps, 1):.4f}" if np.isfinite(tl.t1) else "")
