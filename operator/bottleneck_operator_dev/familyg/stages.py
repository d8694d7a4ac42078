"""Family G's account of one training step: its stages, how they overlap, and what bounds it.

A rank's step (one micro-batch) is two pipelines that meet at the GPU:

- the input pipeline, run ahead by loader workers with prefetch: read from storage, then decode and
  augment on CPU cores. Workers read and decode different batches at once, so the loader delivers a
  batch every ``max(read, cpu)`` plus a little for the imperfect overlap of the two;
- the GPU side, serial on the rank's stream: the exposed part of the host-to-device copy, the
  kernels (math-bound and HBM-bound ones), and the part of the gradient collectives that backward
  does not hide. Gradient accumulation runs the collectives once every ``accum`` micro-batches.

The step takes the longer of the two, plus the time the trainer's own process is stalled by host
memory pressure (faulting pages back from swap or from reclaimed file cache): that stall blocks the
kernel launches themselves, so nothing hides it. Pressure slows the loader workers too.

The label is the class whose stages' removal shortens this step most (shared/DESIGN.md's
definition); the mechanism is the single stage of that class whose removal helps most.
"""

from __future__ import annotations

from dataclasses import dataclass

from bottleneck_operator.contract.verdict import Bottleneck

# Backward is about two thirds of a step's kernel time (forward ~1x, backward ~2x the FLOPs), and
# only backward can hide a gradient collective (DDP buckets, FSDP reduce-scatter).
BACKWARD_SHARE = 2.0 / 3.0
# Readers and decoders in one worker pool do not overlap perfectly: a worker blocked on a read is
# not decoding. A tenth of the shorter of the two is the cost assumed here.
LOADER_OVERLAP_COST = 0.1


@dataclass(frozen=True)
class Stages:
    """Seconds one rank spends per micro-batch in each stage, before overlap.

    Attributes:
        math: kernels bound by tensor/ALU throughput (already slowed by any power cap).
        hbm: kernels bound by GPU memory bandwidth.
        intra: gradient/parameter collectives inside the node (NVLink or PCIe peer-to-peer), per
            optimizer step.
        inter: collectives between nodes (the fabric), per optimizer step.
        overlap: share of backward's kernel time that can hide collectives (0: none).
        accum: micro-batches per optimizer step (gradient accumulation).
        h2d: host-to-device copy of the batch.
        h2d_exposed: share of the copy not hidden behind kernels (pinned memory and non_blocking
            hide most of it; pageable memory none).
        read: reading the batch from storage, per rank.
        cpu: decoding and augmenting the batch, per rank, on the cores the workers get.
        hostmem: the trainer process stalled on host memory (swap-in, refaults of reclaimed pages).
        loader_slow: how much host memory pressure slows the loader workers (0: not at all).
        launch: idle gaps between kernels as a share of kernel time (launch and Python overhead).
    """

    math: float
    hbm: float
    intra: float
    inter: float
    overlap: float
    accum: int
    h2d: float
    h2d_exposed: float
    read: float
    cpu: float
    hostmem: float = 0.0
    loader_slow: float = 0.0
    launch: float = 0.03

    @property
    def kernels(self) -> float:
        """Seconds of GPU kernels per micro-batch (math and HBM-bound)."""
        return self.math + self.hbm

    @property
    def comm(self) -> float:
        """Collective seconds per micro-batch, amortised over the accumulation."""
        return (self.intra + self.inter) / self.accum

    @property
    def exposed_comm(self) -> float:
        """Collective seconds per micro-batch that backward does not hide."""
        return max(0.0, self.comm - self.overlap * BACKWARD_SHARE * self.kernels)

    @property
    def gpu_side(self) -> float:
        """Seconds of the GPU side: exposed copy, kernels, launch gaps, exposed collectives."""
        return self.h2d * self.h2d_exposed + self.kernels * (1.0 + self.launch) + self.exposed_comm

    @property
    def loader(self) -> float:
        """Seconds between batches the loader can deliver."""
        slow, fast = max(self.read, self.cpu), min(self.read, self.cpu)
        return (slow + LOADER_OVERLAP_COST * fast) * (1.0 + self.loader_slow)

    @property
    def step(self) -> float:
        """Seconds per micro-batch."""
        return max(self.loader, self.gpu_side) + self.hostmem

    @property
    def gpu_wait(self) -> float:
        """Share of the step the GPU side waits for the loader or a stalled trainer process."""
        return 1.0 - self.gpu_side / self.step


# What removing each class's stages means in this model.
_REMOVE: dict[Bottleneck, dict[str, float]] = {
    Bottleneck.IO: {"read": 0.0},
    Bottleneck.CPU: {"cpu": 0.0},
    Bottleneck.INTERCONNECT: {"intra": 0.0, "inter": 0.0, "h2d": 0.0},
    Bottleneck.GPU: {"math": 0.0},
    Bottleneck.MEMORY: {"hbm": 0.0, "hostmem": 0.0, "loader_slow": 0.0},
}
_SINGLE: dict[str, dict[str, float]] = {
    "h2d": {"h2d": 0.0},
    "intra": {"intra": 0.0},
    "inter": {"inter": 0.0},
    "hbm": {"hbm": 0.0},
    "host": {"hostmem": 0.0, "loader_slow": 0.0},
}


def _step_without(stages: Stages, change: dict[str, float]) -> float:
    # The same account as Stages.step on plain floats: the labelling loop calls it thousands of times.
    f = {**vars(stages), **change}
    kernels = f["math"] + f["hbm"]
    comm = (f["intra"] + f["inter"]) / f["accum"]
    exposed = max(0.0, comm - f["overlap"] * BACKWARD_SHARE * kernels)
    gpu = f["h2d"] * f["h2d_exposed"] + kernels * (1.0 + f["launch"]) + exposed
    slow, fast = max(f["read"], f["cpu"]), min(f["read"], f["cpu"])
    loader = (slow + LOADER_OVERLAP_COST * fast) * (1.0 + f["loader_slow"])
    return float(max(loader, gpu) + f["hostmem"])


def gains(stages: Stages) -> dict[Bottleneck, float]:
    """Seconds per step each class's removal saves.

    Args:
        stages: the step's stages.

    Returns:
        Class -> seconds saved (>= 0).
    """
    base = stages.step
    return {c: base - _step_without(stages, change) for c, change in _REMOVE.items()}


def label(stages: Stages, saved: dict[Bottleneck, float] | None = None) -> tuple[Bottleneck, float]:
    """The class whose removal shortens the step most, and its lead over the runner-up (a ratio >= 1).

    Ties go to the class listed first in ``_REMOVE``; a lead of ``inf`` means no other class helps.
    ``saved`` is :func:`gains` of the stages when the caller has it already.
    """
    saved = saved if saved is not None else gains(stages)
    ranked = sorted(saved.items(), key=lambda kv: -kv[1])
    (best, first), (_, second) = ranked[0], ranked[1]
    return best, (first / second if second > 0 else float("inf"))


def single_gain(stages: Stages, stage: str) -> float:
    """Seconds per step saved by removing one stage (``h2d``, ``intra``, ``inter``, ``hbm``, ``host``)."""
    return stages.step - _step_without(stages, _SINGLE[stage])
