"""Family I's account of one training step: its stages, how they overlap, and which one bounds it.

A step of data-parallel training, as PyTorch runs it:

- loader workers read samples (``read``) and decode/augment/collate them (``decode``) on the host,
  ahead of the GPU by a prefetch queue, so the input pipeline costs ``max(read, decode)`` per step;
- the trainer process launches the step's kernels (``launch``: Python and CUDA launch overhead that
  leaves the GPU idle between small kernels), copies the batch host-to-device (``h2d``; with pinned
  memory and ``non_blocking`` it overlaps the previous step's compute), runs tensor-core math
  (``math``) and bandwidth-bound kernels (``hbm``: optimizer updates, norms, embedding lookups,
  attention decode), and synchronises gradients (``intra``: NVLink or PCIe inside a node,
  ``inter``: the fabric between nodes), partly hidden under the backward pass (DDP buckets, FSDP
  prefetch) and divided by the gradient-accumulation factor;
- ``bubble`` is idle time no class owns (pipeline-parallel bubbles): it makes a job look less busy
  without being any stage's fault;
- ``host_stall`` is time the trainer and its workers spend blocked on host memory (reclaim,
  swap-in, major faults on evicted pages).

The label is the class whose stages, removed, shorten the step most (the project's
definition of a bottleneck: the stage whose removal would speed the job up most); it is
computed here, from these times, and never from what the telemetry looks like.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from bottleneck_operator.contract.verdict import Bottleneck, Mechanism


@dataclass(frozen=True)
class Stages:
    """Seconds per step of each stage, for the pod that sets the pace (see the module docstring).

    Attributes:
        overlap: share of the backward-pass compute that communication can hide under (0..1).
        pinned: host-to-device copies overlap compute (pinned memory, non-blocking copies).
        loader_stall: share of ``host_stall`` that also blocks the loader workers.
    """

    read: float
    decode: float
    launch: float
    h2d: float
    math: float
    hbm: float
    intra: float
    inter: float
    bubble: float
    host_stall: float
    overlap: float
    pinned: bool
    loader_stall: float = 0.5

    def input_time(self) -> float:
        """The input pipeline's time per step: read and decode run concurrently across workers."""
        return max(self.read, self.decode) + self.loader_stall * self.host_stall

    def exposed_comm(self) -> float:
        """Collective time the backward pass does not hide."""
        hidden = self.overlap * 0.6 * (self.math + self.hbm)
        return max(0.0, self.intra + self.inter - hidden)

    def exposed_h2d(self) -> float:
        """Host-to-device copy time on the critical path."""
        return max(0.0, self.h2d - (self.math + self.hbm)) if self.pinned else self.h2d

    def gpu_time(self) -> float:
        """The trainer's own critical path: launches, copies, kernels, exposed collectives, stalls."""
        return (
            self.launch
            + self.math
            + self.hbm
            + self.exposed_comm()
            + self.exposed_h2d()
            + self.bubble
            + self.host_stall
        )

    def step(self) -> float:
        """Seconds per step: the GPU waits for the input pipeline when that is slower."""
        return max(self.input_time(), self.gpu_time())


# The stages each class owns: removing a class sets all of them to zero.
CLASS_STAGES: dict[Bottleneck, tuple[str, ...]] = {
    Bottleneck.IO: ("read",),
    Bottleneck.CPU: ("decode",),
    Bottleneck.INTERCONNECT: ("h2d", "intra", "inter"),
    Bottleneck.GPU: ("math", "launch"),
    Bottleneck.MEMORY: ("hbm", "host_stall"),
}


def savings(stages: Stages) -> dict[Bottleneck, float]:
    """Seconds per step each class's removal would save (never negative).

    Work that overlapped the removed stage (a pinned copy under the math, collectives under the
    backward pass) is still done without it; the simple serial account could then exceed the
    original step, which removing work cannot do, so a saving is at least zero.
    """
    base = stages.step()
    out: dict[Bottleneck, float] = {}
    for cls, names in CLASS_STAGES.items():
        zero: dict[str, Any] = dict.fromkeys(names, 0.0)
        removed = replace(stages, **zero)
        out[cls] = max(0.0, base - removed.step())
    return out


def label_of(stages: Stages) -> tuple[Bottleneck, float]:
    """The class whose removal shortens the step most, and its margin over the runner-up (a share of the step)."""
    saved = savings(stages)
    ranked = sorted(saved.items(), key=lambda kv: kv[1], reverse=True)
    (best, first), (_, second) = ranked[0], ranked[1]
    return best, (first - second) / stages.step()


def mechanism_of(stages: Stages, label: Bottleneck, *, cpu_cause: Mechanism, nvlink: bool) -> Mechanism:
    """How the labelled class limits the step, from which of its stages is largest.

    Args:
        stages: the step.
        label: its class.
        cpu_cause: what caps the loader's cores (CFS quota, a full node, or too few workers).
        nvlink: intra-node collectives run over NVLink (else over PCIe).
    """
    if label is Bottleneck.IO:
        return Mechanism.LOCAL_DISK  # replaced by the caller from the storage kind
    if label is Bottleneck.CPU:
        return cpu_cause
    if label is Bottleneck.GPU:
        return Mechanism.COMPUTE if stages.math >= stages.launch else Mechanism.LAUNCH_BOUND
    if label is Bottleneck.MEMORY:
        return Mechanism.HBM_BANDWIDTH if stages.hbm >= stages.host_stall else Mechanism.HOST_MEMORY_PRESSURE
    parts = {
        Mechanism.PCIE: stages.exposed_h2d() + (0.0 if nvlink else stages.intra),
        Mechanism.NVLINK: stages.intra if nvlink else 0.0,
        Mechanism.NETWORK: stages.inter,
    }
    return max(parts.items(), key=lambda kv: kv[1])[0]
