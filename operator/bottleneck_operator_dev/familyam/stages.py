"""A training step as a pipeline of stages whose times follow from the placement, and its label.

Each pod's step is built from stage times (seconds per step); the Job's step is its slowest pod's,
since data-parallel peers meet at every all-reduce. The label is DESIGN.md's definition taken
literally: make one class's stages ample (time zero) on every pod, recompute the step, and the class
whose removal speeds the step up most is the bottleneck; its mechanism is the sub-stage that alone
gains most.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from bottleneck_operator.contract.verdict import Bottleneck, Mechanism

# The stage fields each class owns, and the mechanism each field stands for.
CLASS_STAGES: dict[Bottleneck, tuple[str, ...]] = {
    Bottleneck.IO: ("io",),
    Bottleneck.CPU: ("decode", "launch_cpu"),
    Bottleneck.INTERCONNECT: ("h2d", "comm_intra", "comm_inter"),
    Bottleneck.GPU: ("flops", "launch"),
    Bottleneck.MEMORY: ("hbm", "host_mem"),
}
# A close call: the runner-up class gains within this factor of the winner.
HARD_RATIO = 1.1


@dataclass(frozen=True)
class Stages:
    """One pod's stage times per step, seconds, and what each stage is made of.

    Attributes:
        io: storage reads of the step's samples at the storage's bandwidth.
        decode: decode and augmentation on the cores the pod really gets.
        h2d: host-to-device copy of the batch (pinned or pageable, near or far socket).
        h2d_overlapped: copies run on a side stream (pinned memory, ``non_blocking``).
        launch: per-kernel host cost of the step's launches at an unthrottled core.
        launch_cpu: extra launch time a CFS-throttled or floating main thread adds.
        flops: tensor math at the drawn board's clock and efficiency.
        hbm: HBM traffic at the practical peak (~0.8 of the datasheet bandwidth).
        comm_intra: all-reduce inside the node (NVLink or PCIe peer-to-peer).
        comm_inter: all-reduce between nodes (RDMA, staged through host, or TCP).
        overlap: share of backward (2/3 of the GPU time) that hides the all-reduce.
        host_mem: stalls from reclaim and swap-in when the working set exceeds the limit.
        io_mechanism, cpu_mechanism, intra_mechanism: which mechanism each stage stands for.
    """

    io: float
    decode: float
    h2d: float
    h2d_overlapped: bool
    launch: float
    launch_cpu: float
    flops: float
    hbm: float
    comm_intra: float
    comm_inter: float
    overlap: float
    host_mem: float
    io_mechanism: Mechanism
    cpu_mechanism: Mechanism
    intra_mechanism: Mechanism

    @property
    def gpu_time(self) -> float:
        """Kernel time: roofline per kernel mix, the slower of math and memory plus a little of the other."""
        return max(self.flops, self.hbm) + 0.1 * min(self.flops, self.hbm)

    @property
    def comm(self) -> float:
        return self.comm_intra + self.comm_inter

    @property
    def exposed_comm(self) -> float:
        """All-reduce time not hidden behind backward (DDP buckets start while backward runs)."""
        return max(0.0, self.comm - self.overlap * self.gpu_time * 2.0 / 3.0)

    @property
    def input_time(self) -> float:
        """Loader workers read and decode in parallel; a worker's own read and decode partly serialise."""
        return max(self.io, self.decode) + 0.15 * min(self.io, self.decode)

    @property
    def device_time(self) -> float:
        """The GPU side: kernels or their launches, whichever is slower, then exposed comm and serial copies."""
        core = max(self.gpu_time, self.launch + self.launch_cpu) + self.exposed_comm
        return max(core, self.h2d) if self.h2d_overlapped else core + self.h2d

    @property
    def step(self) -> float:
        """The pod's step: prefetching overlaps input with the device; host memory stalls stop both."""
        return max(self.input_time, self.device_time) + self.host_mem


def job_step(pods: Sequence[Stages]) -> float:
    """The Job's step: the slowest pod, as synchronous data parallelism waits for it at every all-reduce."""
    return max(p.step for p in pods)


def _ample(pods: Sequence[Stages], fields: Sequence[str]) -> float:
    changes: dict[str, float] = dict.fromkeys(fields, 0.0)
    return job_step([replace(p, **changes) for p in pods])  # type: ignore[arg-type]


def _mechanism(pods: Sequence[Stages], label: Bottleneck, step: float) -> Mechanism:
    """The class's sub-stage whose removal alone gains most."""
    gains = {f: step / max(_ample(pods, (f,)), 1e-12) for f in CLASS_STAGES[label]}
    best = max(gains, key=lambda f: gains[f])
    first = pods[0]
    return {
        "io": first.io_mechanism,
        "decode": first.cpu_mechanism,
        # a throttled main thread launches late; floating or crowded threads likewise
        "launch_cpu": Mechanism.SATURATED if first.cpu_mechanism is Mechanism.SATURATED else Mechanism.THROTTLED,
        "h2d": Mechanism.PCIE,
        "comm_intra": first.intra_mechanism,
        "comm_inter": Mechanism.NETWORK,
        "flops": Mechanism.COMPUTE,
        "launch": Mechanism.LAUNCH_BOUND,
        "hbm": Mechanism.HBM_BANDWIDTH,
        "host_mem": Mechanism.HOST_MEMORY_PRESSURE,
    }[best]


@dataclass(frozen=True)
class Label:
    """The counterfactual verdict: class, mechanism, each class's speed-up, and whether it was close."""

    label: Bottleneck
    mechanism: Mechanism
    speedups: dict[Bottleneck, float]
    hard: bool


def label_of(pods: Sequence[Stages]) -> Label:
    """DESIGN.md's bottleneck: the class whose stages, made ample on every pod, speed the step up most."""
    step = job_step(pods)
    speedups = {c: step / max(_ample(pods, fields), 1e-12) for c, fields in CLASS_STAGES.items()}
    ranked = sorted(speedups, key=lambda c: speedups[c], reverse=True)
    top, second = ranked[0], ranked[1]
    hard = speedups[top] < HARD_RATIO * speedups[second]
    return Label(top, _mechanism(pods, top, step), speedups, hard)
