"""One account of step time: the share of wall time in which each pipeline stage keeps the GPUs waiting.

Over training-phase samples (:mod:`.summary_phases`) the GPUs are time-busy a fraction ``b``
(``GR_ENGINE_ACTIVE``: any kernel running). Part of that busy time can be communication that the
compute does not hide: NCCL kernels keep the engine busy while only a handful of SMs spin, so with
``SM_ACTIVE`` at hand the compute share is ``min(b, SM_ACTIVE / SM_FILL)`` and the rest of ``b`` is
exposed communication. The idle share ``1 - b`` is the time the GPUs wait on the host side (storage,
CPU, host-to-device copies, host memory); it is split between the stages whose own evidence holds
(:mod:`.evidence_gates`) in proportion to the classifier's probabilities of each (between all of them
when none holds).

Removing a stall of share ``s`` makes a step ``1 / (1 - s)`` times faster at most; the verdict's class,
confidence, headroom and capacity figures all read this account, so they cannot disagree. A stall
whose removal gains less than ``STALL_FLOOR`` is not a stall: the job is GPU-bound.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from bottleneck_operator.analysis.features import value
from bottleneck_operator.analysis.summary_phases import Phases
from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator.contract.window import FloatArray

STALL_FLOOR = 1.15  # below this speed-up a stall costs too little to be the job's bottleneck
MAX_SPEEDUP = 10.0
# SM activity of compute kernels on a GPU that runs them all the time; SM_ACTIVE also measures spatial
# fill, so a lower reading is not idleness by itself (DCGM profiling metrics documentation).
SM_FILL = 0.85
HOST_STAGES: tuple[Bottleneck, ...] = (Bottleneck.IO, Bottleneck.CPU, Bottleneck.INTERCONNECT, Bottleneck.MEMORY)


@dataclass(frozen=True)
class StepAccount:
    """Where the wall time of training goes, as shares that add up to 1.

    Attributes:
        busy: GPU time-busy fraction over training samples.
        compute: share spent computing (``busy`` less measured exposed communication).
        comm: share the GPUs ran only communication kernels; None when SM data is missing.
        shares: stall class -> share of wall time it keeps the GPUs waiting (measured); ``GPU`` -> ``compute``.
        phases: the window's phases.
        unmeasured: without SM data, the part of busy time that could still be communication (an upper
            bound: tensor-pipe activity is compute for sure); 0 when ``comm`` is measured.
    """

    busy: float
    compute: float
    comm: float | None
    shares: Mapping[Bottleneck, float]
    phases: Phases
    unmeasured: float = 0.0

    @property
    def idle(self) -> float:
        return max(0.0, 1.0 - self.busy)

    def speedup(self, cls: Bottleneck) -> float:
        """Most speed-up from removing the stall of ``cls`` (1.0 for GPU and Unknown).

        For Interconnect without SM data it counts the busy time that could be communication.
        """
        if cls in (Bottleneck.GPU, Bottleneck.UNKNOWN):
            return 1.0
        extra = self.unmeasured if cls is Bottleneck.INTERCONNECT else 0.0
        return 1.0 / max(1.0 - self.shares.get(cls, 0.0) - extra, 0.1)

    def measured_speedup(self, cls: Bottleneck) -> float:
        """Speed-up from the measured share alone (the low end where communication is unmeasured)."""
        if cls in (Bottleneck.GPU, Bottleneck.UNKNOWN):
            return 1.0
        return 1.0 / max(1.0 - self.shares.get(cls, 0.0), 0.1)

    def top_stall(self) -> tuple[Bottleneck, float]:
        """The stall stage with the largest share, and its share."""
        cls = max(HOST_STAGES, key=lambda c: self.shares.get(c, 0.0))
        return cls, self.shares.get(cls, 0.0)

    def describe(self) -> str:
        """The account in one sentence, for the verdict's notes."""
        parts = [f"computing {100 * self.compute:.0f} %"]
        for c in HOST_STAGES:
            s = self.shares.get(c, 0.0)
            if s >= 0.005:
                parts.append(f"waiting on {c.value} {100 * s:.0f} %")
        tail = (
            ""
            if self.comm is not None
            else f" (without SM activity up to {100 * self.unmeasured:.0f} % of the busy time could be communication)"
        )
        return "Step time over training samples: " + ", ".join(parts) + tail + "."


def exposed_comm(phases: Phases) -> float | None:
    """Share of wall time the GPUs ran communication kernels only, None without SM activity."""
    if phases.busy is None or phases.sm_active is None:
        return None
    return max(0.0, phases.busy - min(phases.busy, phases.sm_active / SM_FILL))


TENSOR_CEILING = 0.9  # tensor pipes are active at most this share of the time compute kernels run


def comm_bound(phases: Phases) -> float:
    """Without SM data: the busy share that could be communication (busy less certain compute)."""
    if phases.busy is None:
        return 0.0
    certain = min(phases.busy, (phases.tensor_active or 0.0) / TENSOR_CEILING)
    return max(0.0, phases.busy - certain)


def step_account(
    phases: Phases, probabilities: Mapping[str, float], holds: Mapping[Bottleneck, bool]
) -> StepAccount | None:
    """The account of one window.

    Args:
        phases: the window's phases and training-sample averages.
        probabilities: the class probabilities once the waits' owners have taken theirs (weights of the
            host stages).
        holds: per class, whether its own evidence holds.

    Returns:
        The account, or None when the window has no GPU busy signal.
    """
    if phases.busy is None:
        return None
    busy = min(max(phases.busy, 0.0), 1.0)
    comm = exposed_comm(phases)
    compute = busy - (comm or 0.0)
    weights = {c: probabilities.get(c.value, 0.0) if holds.get(c, False) else 0.0 for c in HOST_STAGES}
    total = sum(weights.values())
    if total <= 0:
        weights = {c: probabilities.get(c.value, 0.0) for c in HOST_STAGES}
        total = sum(weights.values())
    idle = 1.0 - busy
    shares: dict[Bottleneck, float] = {
        c: idle * (w / total if total > 0 else 1.0 / len(HOST_STAGES)) for c, w in weights.items()
    }
    shares[Bottleneck.INTERCONNECT] += comm or 0.0
    shares[Bottleneck.GPU] = compute
    unmeasured = comm_bound(phases) if comm is None else 0.0
    return StepAccount(busy, compute, comm, shares, phases, unmeasured)


def stall_range(busy: float, next_stage: float | None) -> tuple[float, float]:
    """Speed-up range when a stall stage is removed.

    Args:
        busy: share of wall time the step spends outside the stall (0..1).
        next_stage: busy fraction of the next stage that would bind, or None when unknown.

    Returns:
        (low, high) speed-up factors, both >= 1.
    """
    a = min(max(busy, 1.0 / MAX_SPEEDUP), 1.0)
    high = 1.0 / a
    if next_stage is not None and next_stage > 0:
        high = min(high, 1.0 / min(max(next_stage, 1.0 / MAX_SPEEDUP), 1.0))
    high = max(1.0, high)
    low = 1.0 + (high - 1.0) / 2.0
    return low, high


def next_stage(cls: Bottleneck, x: FloatArray) -> tuple[float | None, str]:
    """The busiest other stage (busy fraction, name) that would bind once ``cls`` is removed.

    A disk's busy time is no such fraction: NVMe serves many requests at once, so ``io_time`` at 100 %
    is not saturation (TELEMETRY.md), and storage never caps the range.
    """
    stages = {
        "CPU": value(x, "cpu_limit_frac.mean"),
        "PCIe": value(x, "pcie_rx_frac.mean"),
        "NVLink": value(x, "nvlink_frac.mean"),
    }
    exclude = {Bottleneck.CPU: "CPU", Bottleneck.INTERCONNECT: "PCIe"}.get(cls)
    best: tuple[float | None, str] = (None, "")
    for name, v in stages.items():
        if name == exclude or (cls is Bottleneck.INTERCONNECT and name == "NVLink") or v is None:
            continue
        if best[0] is None or v > best[0]:
            best = (min(v, 1.0), name)
    return best


def stall_ceiling(cls: Bottleneck, x: FloatArray, account: StepAccount) -> float:
    """The most removing ``cls``'s stall could gain: the account's speed-up, capped where the next stage binds.

    The class gate and the headroom both read it, so a verdict never names a stall whose removal its
    own headroom says gains less than ``STALL_FLOOR``.
    """
    return stall_range(1.0 / account.speedup(cls), next_stage(cls, x)[0])[1]
