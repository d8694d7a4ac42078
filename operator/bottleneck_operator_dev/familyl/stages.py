"""Family L's step model: where one optimizer step's time goes, and which stage bounds it.

A step has two halves that run concurrently thanks to prefetching: the input side (storage reads
and CPU-side decode/sampling/environment stepping, spread over loader workers) and the device side
(kernels, exposed collectives, exposed host<->device copies, host-memory stalls of the trainer
itself). The label is decided here and only here: remove each stage in turn (set its time to zero),
recompute the step, and the class of the stage whose removal shortens the step most is the label.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from bottleneck_operator.contract.verdict import Bottleneck, Mechanism

# Each stage, the class it belongs to (DESIGN.md) and the mechanism it stands for.
STAGE_CLASS: dict[str, tuple[Bottleneck, Mechanism]] = {
    "read": (Bottleneck.IO, Mechanism.LOCAL_DISK),
    "decode": (Bottleneck.CPU, Mechanism.SATURATED),
    "h2d": (Bottleneck.INTERCONNECT, Mechanism.PCIE),
    "comm": (Bottleneck.INTERCONNECT, Mechanism.NETWORK),
    "math": (Bottleneck.GPU, Mechanism.COMPUTE),
    "launch": (Bottleneck.GPU, Mechanism.LAUNCH_BOUND),
    "hbm": (Bottleneck.MEMORY, Mechanism.HBM_BANDWIDTH),
    "swap": (Bottleneck.MEMORY, Mechanism.HOST_MEMORY_PRESSURE),
}


@dataclass(frozen=True)
class Step:
    """Seconds one optimizer step spends in each stage (before any overlap).

    Attributes:
        read: storage reads of the step's samples, per loader pipeline.
        decode: host CPU work of the input side (decode, augment, collate, sample, env steps).
        h2d: host<->device copies (inputs, offloaded optimizer state or parameters).
        comm: collectives (all-reduce, reduce-scatter/all-gather, all-to-all, pipeline sends).
        math: kernels bound by the tensor/FP pipes.
        hbm: kernels bound by device-memory bandwidth.
        launch: gaps between kernels while the host dispatches them (small kernels).
        swap: trainer stalls on host memory (reclaim, swap-in, major faults of anonymous memory).
        comm_overlap: share of the kernel time that collectives can hide behind.
        h2d_overlap: share of the kernel time that copies can hide behind.
    """

    read: float
    decode: float
    h2d: float
    comm: float
    math: float
    hbm: float
    launch: float
    swap: float
    comm_overlap: float
    h2d_overlap: float

    @property
    def kernel(self) -> float:
        """Kernel time: a kernel is bound by the slower of its pipes and its memory traffic."""
        return max(self.math, self.hbm) + 0.15 * min(self.math, self.hbm) + self.launch

    @property
    def comm_exposed(self) -> float:
        return max(0.0, self.comm - self.comm_overlap * self.kernel)

    @property
    def h2d_exposed(self) -> float:
        return max(0.0, self.h2d - self.h2d_overlap * self.kernel)

    @property
    def device(self) -> float:
        return self.kernel + self.comm_exposed + self.h2d_exposed + self.swap

    @property
    def loader(self) -> float:
        # Workers read and decode different batches at once: the slower side sets the pace, the
        # other leaks in a little (a worker blocked on a read is not decoding).
        return max(self.read, self.decode) + 0.1 * min(self.read, self.decode)

    @property
    def time(self) -> float:
        """The step's wall time: prefetching overlaps the halves, imperfectly."""
        return max(self.loader, self.device) + 0.04 * min(self.loader, self.device)


def removal_gains(step: Step) -> dict[str, float]:
    """Speed-up of the step when each stage is removed (>= 1)."""
    base = step.time
    return {name: base / max(replace(step, **{name: 0.0}).time, 1e-9) for name in STAGE_CLASS}


def bounding(step: Step) -> tuple[str, float, float]:
    """The stage whose removal shortens the step most, its speed-up and the runner-up class's.

    Returns:
        (stage, gain of that stage, best gain of a stage of another class).
    """
    gains = removal_gains(step)
    stage = max(gains, key=lambda s: gains[s])
    cls = STAGE_CLASS[stage][0]
    other = max((g for s, g in gains.items() if STAGE_CLASS[s][0] is not cls), default=1.0)
    return stage, gains[stage], other
