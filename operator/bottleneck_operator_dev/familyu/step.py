"""How a step's time follows from the shares a Job gets, and how the label is read from it.

The step is composed of stages, each a piece of work done at a share of one resource:

- input (on the host, beside the GPU, through the loader's prefetch queue): storage reads, decode
  on the CPU, and host-memory stalls (pages brought back after reclaim), which serialise with both;
- device: host-to-device copies, the kernels (a two-kernel-group roofline: the matmul group and the
  memory-bound group, each as slow as its slower of compute and HBM), the gradient all-reduce
  (intra-node over NVLink or PCIe, then inter-node over the network), partly hidden by backward.

What overlaps and what serialises is a per-job draw (:class:`PodStep`). The label is the resource
class whose share, doubled for this Job alone, shortens the window's mean step most
(:func:`label_resource`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

# The resource classes a doubling acts on, in the order ties are broken.
RESOURCES: tuple[str, ...] = ("storage", "cpu", "hostmem", "pcie", "nvlink", "network", "sm", "hbm")


@dataclass(frozen=True)
class Stage:
    """Work done at a share of a resource.

    Attributes:
        work: bytes (or core-seconds) per step.
        share: the rate the allocation gave this stage (bytes/s, cores).
        doubled: the share if a resource class were doubled for this Job (classes that change it).
    """

    work: float
    share: float
    doubled: Mapping[str, float] = field(default_factory=dict)

    def time(self, doubled: str | None = None) -> float:
        if self.work <= 0.0:
            return 0.0
        share = self.doubled.get(doubled, self.share) if doubled else self.share
        return self.work / max(share, 1e-12)


@dataclass(frozen=True)
class HostMemory:
    """The pod's anonymous memory against its allocation (cgroup limit and node fair share).

    When the working set exceeds the allocation, the part of the per-step touched memory that is
    not resident comes back from swap (or, without swap, is re-read from file pages after reclaim)
    at ``refault_bps``; ``fault_s`` adds the per-step kernel time of the faults themselves.
    """

    working_set: float
    allocation: float
    touched: float
    refault_bps: float
    fault_s_per_gb: float = 0.05

    def deficit(self, doubled: str | None = None) -> float:
        alloc = self.allocation * (2.0 if doubled == "hostmem" else 1.0)
        return max(0.0, self.working_set - alloc)

    def refault_bytes(self, doubled: str | None = None) -> float:
        if self.working_set <= 0:
            return 0.0
        return self.touched * self.deficit(doubled) / self.working_set

    def time(self, doubled: str | None = None) -> float:
        b = self.refault_bytes(doubled)
        return b / self.refault_bps + self.fault_s_per_gb * b / 1e9


@dataclass(frozen=True)
class Roofline:
    """One GPU's kernels per step as two groups (matmul-like, memory-bound), each max(compute, HBM)."""

    flops_a: float
    bytes_a: float
    flops_b: float
    bytes_b: float
    peak_flops: float  # effective FLOP/s (precision, kernel efficiency, clock)
    peak_bw: float  # achievable HBM bytes/s

    def group_times(self, doubled: str | None = None) -> tuple[float, float, float, float]:
        p = self.peak_flops * (2.0 if doubled == "sm" else 1.0)
        b = self.peak_bw * (2.0 if doubled == "hbm" else 1.0)
        return self.flops_a / p, self.bytes_a / b, self.flops_b / p, self.bytes_b / b

    def time(self, doubled: str | None = None) -> float:
        fa, ba, fb, bb = self.group_times(doubled)
        return max(fa, ba) + max(fb, bb)


@dataclass(frozen=True)
class PodStep:
    """One pod's stages in one phase, and how they compose."""

    io: Stage
    cpu: Stage
    mem: HostMemory
    h2d: Stage
    dev: Roofline
    intra: Stage
    inter: Stage
    io_cpu_overlap: bool = True  # the loader reads ahead while it decodes (else read then decode)
    h2d_overlap: bool = False  # pinned, non-blocking copies on a side stream
    comm_overlap: float = 0.5  # share of backward that can hide the all-reduce
    overhead_s: float = 0.002  # optimizer step, launches: not shortened by any doubling

    def input_time(self, doubled: str | None = None) -> float:
        io, cpu = self.io.time(doubled), self.cpu.time(doubled)
        return (max(io, cpu) if self.io_cpu_overlap else io + cpu) + self.mem.time(doubled)

    def comm_time(self, doubled: str | None = None) -> float:
        return self.intra.time(doubled) + self.inter.time(doubled)


def step_time(pods: Sequence[PodStep], doubled: str | None = None) -> float:
    """The Job's step: synchronous data parallel, so the slowest pod and the slowest ring set it."""
    comm = max((p.comm_time(doubled) for p in pods), default=0.0)
    worst = 0.0
    for p in pods:
        dev = p.dev.time(doubled)
        h2d = p.h2d.time(doubled)
        h2d_exposed = max(0.0, h2d - 0.9 * dev) if p.h2d_overlap else h2d
        comm_exposed = max(0.0, comm - p.comm_overlap * (2.0 / 3.0) * dev)
        gpu_chain = dev + h2d_exposed + comm_exposed + p.overhead_s
        worst = max(worst, p.input_time(doubled), gpu_chain)
    return worst


def mean_step(phases: Sequence[tuple[float, Sequence[PodStep]]], doubled: str | None = None) -> float:
    """Mean step time over phases of given durations (steps done in each add up)."""
    total = sum(d for d, _ in phases)
    steps = sum(d / step_time(p, doubled) for d, p in phases)
    return total / steps


def gains(phases: Sequence[tuple[float, Sequence[PodStep]]]) -> dict[str, float]:
    """Relative shortening of the mean step when each resource class is doubled for this Job."""
    base = mean_step(phases)
    return {r: 1.0 - mean_step(phases, r) / base for r in RESOURCES}


def label_resource(phases: Sequence[tuple[float, Sequence[PodStep]]]) -> tuple[str, dict[str, float]]:
    """The resource class whose doubling shortens the step most (first in RESOURCES on a tie)."""
    g = gains(phases)
    best = max(RESOURCES, key=lambda r: (g[r], -RESOURCES.index(r)))
    return best, g
