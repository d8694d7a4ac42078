"""The step model: where one training step's time goes, and which stage bounds it.

A step is an input pipeline (storage reads, CPU decode/augment/tokenise) running ahead of the GPU
side (host-to-device copy, kernels, collectives that overlap the kernels only in part), plus any
time every process of the job stalls on host memory (swap-in, direct reclaim). The label of a job
is the class whose stages, removed, shorten the step the most: nothing here looks at a signal.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from bottleneck_operator.contract.verdict import Bottleneck

# The stages each class owns: removing a class sets these to zero.
CLASS_STAGES: dict[Bottleneck, tuple[str, ...]] = {
    Bottleneck.IO: ("read",),
    Bottleneck.CPU: ("cpu",),
    Bottleneck.INTERCONNECT: ("h2d", "intra", "inter"),
    Bottleneck.GPU: ("math", "launch"),
    Bottleneck.MEMORY: ("hbm", "swap"),
}


@dataclass(frozen=True)
class Stages:
    """Seconds per optimizer step spent in each stage, if it ran alone.

    Attributes:
        read: reading the step's samples at the storage's throughput.
        cpu: decoding/augmenting/tokenising them on the cores the pipeline has.
        h2d: host-to-device copies not hidden behind kernels.
        math: kernels bound by math throughput (tensor or CUDA cores).
        hbm: kernels bound by HBM bandwidth (roofline: a kernel takes the larger of the two).
        launch: small kernels and launch gaps (latency-bound: small batches, many tiny ops).
        intra: collectives inside a node (NVLink, or PCIe on boards without it).
        inter: collectives between nodes (the fabric), already divided by gradient accumulation.
        overlap: share of kernel time that collectives can hide behind (bucketed all-reduce,
            FSDP prefetch); 0 for a naive loop.
        swap: time all processes stall on host memory (swap-in, direct reclaim).
    """

    read: float
    cpu: float
    h2d: float
    math: float
    hbm: float
    launch: float
    intra: float
    inter: float
    overlap: float
    swap: float

    @property
    def kernel(self) -> float:
        """GPU kernel time: the roofline bound of the two plus the latency-bound part."""
        return max(self.math, self.hbm) + self.launch

    @property
    def comm(self) -> float:
        return self.intra + self.inter

    @property
    def comm_exposed(self) -> float:
        """Collective time left after what the kernels hide."""
        return max(0.0, self.comm - self.overlap * self.kernel)

    @property
    def input(self) -> float:
        """The input pipeline's time per step: reading and decoding run in parallel workers."""
        return max(self.read, self.cpu)

    @property
    def gpu_side(self) -> float:
        return self.h2d + self.kernel + self.comm_exposed

    @property
    def step(self) -> float:
        """The step time: the slower of the pipeline's two halves, plus host-memory stalls."""
        return max(self.input, self.gpu_side) + self.swap

    def without(self, cls: Bottleneck) -> Stages:
        """These stages with the class's stages removed."""
        return replace(self, **{name: 0.0 for name in CLASS_STAGES[cls]})

    def gain(self, cls: Bottleneck) -> float:
        """Seconds per step saved by removing the class's stages."""
        return self.step - self.without(cls).step

    def strength(self, cls: Bottleneck) -> float:
        """How much faster the step gets without the class: step / step-without (>= 1)."""
        rest = self.without(cls).step
        return self.step / rest if rest > 0 else float("inf")


def label_of(stages: Stages) -> Bottleneck:
    """The class whose removal shortens the step most (ties: the earlier class in CLASS_STAGES)."""
    best, best_gain = Bottleneck.GPU, -1.0
    for cls in CLASS_STAGES:
        gain = stages.gain(cls)
        if gain > best_gain + 1e-12:
            best, best_gain = cls, gain
    return best


def mechanism_of(stages: Stages, cls: Bottleneck, *, nvlink: bool) -> str:
    """Which of the class's stages matters most, named as the contract's mechanisms.

    CPU's and IO's mechanisms depend on the job's set-up rather than on a stage, so their callers
    name them; this covers the classes whose mechanisms are stages.
    """
    gains = {name: stages.step - replace(stages, **{name: 0.0}).step for name in CLASS_STAGES[cls]}
    top = max(gains, key=lambda k: gains[k])
    if cls is Bottleneck.INTERCONNECT:
        if top == "intra":
            return "nvlink" if nvlink else "pcie"
        return {"h2d": "pcie", "inter": "network"}[top]
    if cls is Bottleneck.MEMORY:
        return "hbm-bandwidth" if top == "hbm" else "host-memory-pressure"
    if cls is Bottleneck.GPU:
        return "launch-bound" if top == "launch" else "compute"
    return top


def raise_until(stages: Stages, stage: str, cls: Bottleneck, strength: float) -> Stages:
    """Grow one stage of ``cls`` until the class bounds the step by at least ``strength``.

    The label is then the model's own reading of the stages, not the target: the loop stops only
    once the removal rule itself names ``cls``.
    """
    value = max(getattr(stages, stage), 0.01 * stages.step)
    current = replace(stages, **{stage: value})
    for _ in range(200):
        if label_of(current) is cls and current.strength(cls) >= strength:
            return current
        value *= 1.05
        current = replace(current, **{stage: value})
    raise RuntimeError(f"stage {stage} could not make {cls} the bound")
