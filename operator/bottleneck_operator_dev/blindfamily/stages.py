"""The step as a pipeline, and the rule that labels a job by the stage that bounds it.

A data-parallel step has an input side (storage read and CPU decode, run by the loader's workers
ahead of the trainer) and a device side (host-to-device copy, GPU compute, the exposed part of the
gradient all-reduce, and any stall of the trainer itself). With a prefetching loader the two sides
overlap and the step takes the longer; with ``num_workers=0`` they run one after the other.

The label is the class whose removal would speed the step up most (DESIGN.md's definition), and a
job is labelled only when that is clear: the best class must give at least ``MIN_SPEEDUP`` and beat
the runner-up by ``MIN_MARGIN``. Jobs where two stages nearly tie are redrawn, never labelled.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from bottleneck_operator.contract.verdict import Bottleneck

MIN_SPEEDUP = 1.3
MIN_MARGIN = 1.2

# The stage each mechanism works through, and the class a stage belongs to.
STAGE_CLASS: dict[str, Bottleneck] = {
    "read": Bottleneck.IO,
    "cpu": Bottleneck.CPU,
    "h2d": Bottleneck.INTERCONNECT,
    "comm": Bottleneck.INTERCONNECT,
    "flop": Bottleneck.GPU,
    "launch": Bottleneck.GPU,
    "hbm": Bottleneck.MEMORY,
    "memstall": Bottleneck.MEMORY,
}


@dataclass(frozen=True)
class Stages:
    """Seconds per step spent in each stage by one pod (its GPUs run in lockstep).

    Attributes:
        read: reading the step's samples from storage.
        cpu: decoding/augmenting them on the cores the loader gets.
        h2d: copying the batch to one GPU.
        comm: the all-reduce's busy time on its slowest link.
        overlap: share of the backward pass (2/3 of compute) that the all-reduce can hide behind.
        flop: compute time if the kernels were bound by arithmetic.
        launch: compute time if bound by the host launching kernels.
        hbm: compute time if bound by DRAM bandwidth; compute takes the largest of the three.
        mem_gpu: the trainer's stall on host memory (swap-in, refaults, reclaim) per step.
        mem_in: the loader workers' stall on host memory per step.
        serial_input: the loader runs in the trainer's process (no overlap).
        h2d_overlap: the copy runs on its own stream ahead of compute (pinned memory and a
            prefetcher), so the device side takes the longer of copy and the rest, not their sum.
    """

    read: float
    cpu: float
    h2d: float
    comm: float
    overlap: float
    flop: float
    launch: float
    hbm: float
    mem_gpu: float = 0.0
    mem_in: float = 0.0
    serial_input: bool = False
    h2d_overlap: bool = False

    @property
    def compute(self) -> float:
        return max(self.flop, self.launch, self.hbm)

    @property
    def input_side(self) -> float:
        return max(self.read, self.cpu) + self.mem_in

    @property
    def exposed_comm(self) -> float:
        return max(0.0, self.comm - self.overlap * self.compute * 2.0 / 3.0)

    @property
    def device_side(self) -> float:
        rest = self.compute + self.exposed_comm + self.mem_gpu
        return max(self.h2d, rest) if self.h2d_overlap else self.h2d + rest

    @property
    def step(self) -> float:
        if self.serial_input:
            return self.input_side + self.device_side
        return max(self.input_side, self.device_side)


def without_class(s: Stages, cls: Bottleneck) -> Stages:
    """The stages with one class's limit taken away.

    Taking GPU compute away leaves the kernels' memory traffic; taking memory away leaves their
    arithmetic and launches, and no host-memory stalls.
    """
    if cls is Bottleneck.IO:
        return replace(s, read=0.0)
    if cls is Bottleneck.CPU:
        return replace(s, cpu=0.0)
    if cls is Bottleneck.INTERCONNECT:
        return replace(s, h2d=0.0, comm=0.0)
    if cls is Bottleneck.GPU:
        return replace(s, flop=0.0, launch=0.0)
    return replace(s, hbm=0.0, mem_gpu=0.0, mem_in=0.0)


def without_stage(s: Stages, stage: str) -> Stages:
    """The stages with one stage taken away (for the mechanism check within a class)."""
    if stage == "memstall":
        return replace(s, mem_gpu=0.0, mem_in=0.0)
    change: dict[str, Any] = {stage: 0.0}
    return replace(s, **change)


def speedups(s: Stages) -> dict[Bottleneck, float]:
    """Per class, how much faster the step would be without that class's limit."""
    step = s.step
    return {cls: step / max(without_class(s, cls).step, 1e-12) for cls in STAGE_CLASS.values()}


def label_of(s: Stages) -> Bottleneck | None:
    """The class that clearly bounds the step, or None when none does (too weak or a near tie)."""
    ranked = sorted(speedups(s).items(), key=lambda kv: kv[1], reverse=True)
    (best, top), (_, second) = ranked[0], ranked[1]
    if top < MIN_SPEEDUP or top < MIN_MARGIN * second:
        return None
    return best


def stage_of(s: Stages) -> str:
    """The single stage whose removal helps most (which mechanism bounds within the class)."""
    step = s.step
    gains = {k: step / max(without_stage(s, k).step, 1e-12) for k in STAGE_CLASS}
    return max(gains, key=lambda k: gains[k])


def solve(s: Stages, stage: str, target: float) -> float:
    """The time of ``stage`` at which removing it would speed the step up by ``target``.

    Found by bisection (the step is monotone in every stage); for ``memstall`` the trainer's stall
    is solved and the workers' stall keeps its ratio to it. Returns 0 when the target is unreachable.
    """
    ratio = s.mem_in / s.mem_gpu if stage == "memstall" and s.mem_gpu > 0 else 0.5

    def at(x: float) -> Stages:
        if stage == "memstall":
            return replace(s, mem_gpu=x, mem_in=x * ratio)
        change: dict[str, Any] = {stage: x}
        return replace(s, **change)

    floor = without_stage(s, stage).step
    lo, hi = 0.0, max(floor, 1e-9) * 64.0
    if at(hi).step / floor < target:
        return 0.0
    for _ in range(48):
        mid = (lo + hi) / 2
        if at(mid).step / floor < target:
            lo = mid
        else:
            hi = mid
    return hi
