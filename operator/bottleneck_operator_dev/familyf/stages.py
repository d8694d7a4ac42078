"""Family F's account of one training step: its stages, what bounds it, and the label.

A rank's step runs two chains at once. The input chain (data-loader workers) reads samples from
storage and decodes them on CPU; the device chain (the training process) copies the batch to the
GPU, computes, waits on HBM-bound kernels, exchanges gradients (partly hidden under the backward
pass) and stalls on host memory faults. Prefetching lets the chains overlap, so the step takes as
long as the slower one. Swap and reclaim stall both chains, since loader workers fault too.

The label is the class whose stages, removed, shorten the step the most (DESIGN.md's definition),
worked out on this model alone: never from what a signal looks like.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from bottleneck_operator.contract.verdict import Bottleneck

STAGE_CLASS: dict[str, Bottleneck] = {
    "read": Bottleneck.IO,
    "decode": Bottleneck.CPU,
    "h2d": Bottleneck.INTERCONNECT,
    "comm": Bottleneck.INTERCONNECT,
    "compute": Bottleneck.GPU,
    "hbm": Bottleneck.MEMORY,
    "swap": Bottleneck.MEMORY,
}


@dataclass(frozen=True)
class Stages:
    """Seconds per step each stage would take if it ran alone at its resource's capacity.

    Attributes:
        read: storage reads of the step's samples.
        decode: CPU decode, augmentation and collation over the loader's cores.
        h2d: host-to-device copies the device chain waits for (PCIe).
        compute: tensor-core-bound kernels.
        hbm: HBM-bandwidth-bound kernels (embedding gathers, optimizer, norms, elementwise).
        comm: collective time on the binding link (already divided by gradient accumulation).
        overlap: share of ``compute`` that communication can hide under (bucketed backward).
        swap: stall on host memory faults (swap-in or page-cache refaults) per step.
        fixed: Python and launch overhead no stage removal touches.
    """

    read: float
    decode: float
    h2d: float
    compute: float
    hbm: float
    comm: float
    overlap: float
    swap: float
    fixed: float

    @property
    def comm_exposed(self) -> float:
        """Communication the backward pass cannot hide."""
        return max(0.0, self.comm - self.overlap * self.compute)

    @property
    def device_chain(self) -> float:
        return self.h2d + self.compute + self.hbm + self.comm_exposed + self.swap

    @property
    def input_chain(self) -> float:
        return max(self.read, self.decode) + 0.5 * self.swap

    @property
    def step(self) -> float:
        return max(self.device_chain, self.input_chain) + self.fixed

    @property
    def kernel_time(self) -> float:
        """Seconds per step with any kernel on the GPU (NCCL kernels run through all of comm)."""
        return self.compute + self.hbm + self.comm_exposed

    def without(self, cls: Bottleneck) -> Stages:
        """The same step with every stage of one class taken out."""
        zeroed = {name: 0.0 for name, owner in STAGE_CLASS.items() if owner is cls}
        return replace(self, **zeroed)


def gains(stages: Stages) -> dict[Bottleneck, float]:
    """Speed-up of the step from removing each class's stages (1.0: no gain)."""
    step = stages.step
    return {cls: step / stages.without(cls).step for cls in dict.fromkeys(STAGE_CLASS.values())}


def label_of(stages: Stages) -> tuple[Bottleneck, float, float]:
    """The class whose removal shortens the step most, its speed-up and the runner-up's."""
    ranked = sorted(gains(stages).items(), key=lambda kv: kv[1], reverse=True)
    return ranked[0][0], ranked[0][1], ranked[1][1]
