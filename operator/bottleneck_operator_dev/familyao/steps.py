"""One training step as a framework runs it, and the counterfactual that labels the Job.

A step is made of stages, each with its own time per step on the slowest rank (seconds):

- ``io``: the loader workers' storage reads; ``cpu``: their decode and augmentation under the
  CPU quota; the two run in worker processes ahead of the trainer (prefetch), so the input
  pipeline is paced by the slower of them, with some serial overlap between a worker's read and
  its decode;
- ``h2d``: host-to-device copies, partly hidden behind compute when pinned and non-blocking;
- ``launch``: the host thread issuing kernels; ``compute`` and ``hbm``: the kernels on the
  (possibly partitioned or shared) board, a roofline mix of math and memory traffic;
- ``comm``: gradient collectives, overlapped with the backward pass (DDP buckets);
- ``hostmem``: stalls of swapping or reclaiming host memory, which halt the trainer outright.

The label is DESIGN.md's definition: the stage whose removal (its time made zero: the stage
made ample) speeds the step up most. The other tenant's load on a shared GPU is part of the
environment: it inflates this Job's compute and HBM time but is never a stage of its own.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from bottleneck_operator.contract.verdict import Bottleneck, Mechanism

STAGES = ("io", "cpu", "h2d", "launch", "compute", "hbm", "comm", "hostmem")

# A worker reads a batch, then decodes it: with several workers the two overlap, but not fully.
LOADER_SERIAL = 0.15
# Kernels are a mix: the slower of math and memory traffic bounds each, the other adds a little.
ROOFLINE_MIX = 0.2
# DDP launches the all-reduce of a bucket as soon as its gradients exist: the backward pass
# (about two thirds of the compute, twice the forward's FLOPs) can hide it.
BACKWARD_SHARE = 2.0 / 3.0
# A close call: the runner-up stage's removal gains nearly as much as the winner's.
HARD_MARGIN = 1.2


@dataclass(frozen=True)
class StageTimes:
    """Seconds per step of each stage on the slowest rank, and how much of them the framework hides.

    Attributes:
        io, cpu, h2d, launch, compute, hbm, comm, hostmem: see the module.
        h2d_overlap: share of the copy time that can run under compute (pinned, non-blocking).
        comm_overlap: share of the collectives that can run under the backward pass.
    """

    io: float
    cpu: float
    h2d: float
    launch: float
    compute: float
    hbm: float
    comm: float
    hostmem: float
    h2d_overlap: float = 0.5
    comm_overlap: float = 0.6

    def without(self, stage: str) -> StageTimes:
        """The same step with one stage made ample (its time zero)."""
        return replace(self, **{stage: 0.0})


@dataclass(frozen=True)
class StepAccount:
    """Where one step's time goes, as the exporters will see it."""

    step: float  # seconds per step
    loader: float  # the input pipeline's time per batch
    kernels: float  # GPU kernel time per step (math or memory bound, or launch bound)
    exposed_comm: float  # collective time not hidden under the backward pass
    exposed_h2d: float  # copy time not hidden under compute


def kernel_time(t: StageTimes) -> float:
    """Kernel time: the roofline mix of math and memory, unless the host cannot launch them fast enough."""
    mix = max(t.compute, t.hbm) + ROOFLINE_MIX * min(t.compute, t.hbm)
    return max(t.launch, mix)


def account(t: StageTimes) -> StepAccount:
    """Compose the stages the way a data-parallel framework overlaps them.

    The loader works ahead in other processes, so the device side and the input pipeline run in
    parallel and the slower paces the step; host memory stalls stop both, so they add.
    """
    loader = max(t.io, t.cpu) + LOADER_SERIAL * min(t.io, t.cpu)
    kernels = kernel_time(t)
    exposed_h2d = max(t.h2d * (1.0 - t.h2d_overlap), t.h2d - kernels)
    backward = BACKWARD_SHARE * kernels
    exposed_comm = max(t.comm * (1.0 - t.comm_overlap), t.comm - backward)
    device = exposed_h2d + kernels + exposed_comm
    step = max(loader, device) + t.hostmem
    return StepAccount(step, loader, kernels, max(exposed_comm, 0.0), max(exposed_h2d, 0.0))


def speedups(t: StageTimes) -> dict[str, float]:
    """Each stage's counterfactual: the step's speed-up when that stage alone is made ample."""
    base = account(t).step
    return {s: base / max(account(t.without(s)).step, 1e-9) for s in STAGES}


@dataclass(frozen=True)
class Causes:
    """What decides the mechanism once a stage is named.

    Attributes:
        storage_local: the samples come from a block device on the node.
        cpu_cause: which of the CPU mechanisms binds the decode (throttled, saturated, too-few-workers).
        comm_path: how the collectives travel ("nvlink", "pcie" or "network").
    """

    storage_local: bool
    cpu_cause: Mechanism
    comm_path: str


def stage_class(stage: str, causes: Causes) -> tuple[Bottleneck, Mechanism]:
    """The verdict class and mechanism that a limiting stage stands for (contract.verdict.MECHANISMS)."""
    if stage == "io":
        return Bottleneck.IO, Mechanism.LOCAL_DISK if causes.storage_local else Mechanism.NETWORK_STORAGE
    if stage == "cpu":
        return Bottleneck.CPU, causes.cpu_cause
    if stage == "h2d":
        return Bottleneck.INTERCONNECT, Mechanism.PCIE
    if stage == "comm":
        path = {"nvlink": Mechanism.NVLINK, "pcie": Mechanism.PCIE}.get(causes.comm_path, Mechanism.NETWORK)
        return Bottleneck.INTERCONNECT, path
    if stage == "compute":
        return Bottleneck.GPU, Mechanism.COMPUTE
    if stage == "launch":
        return Bottleneck.GPU, Mechanism.LAUNCH_BOUND
    if stage == "hbm":
        return Bottleneck.MEMORY, Mechanism.HBM_BANDWIDTH
    return Bottleneck.MEMORY, Mechanism.HOST_MEMORY_PRESSURE


@dataclass(frozen=True)
class Label:
    """The counterfactual's answer."""

    bottleneck: Bottleneck
    mechanism: Mechanism
    stage: str
    gain: float  # the winner's speed-up
    runner_up: float  # the best speed-up of a stage of another class
    hard: bool


def label(t: StageTimes, causes: Causes) -> Label:
    """Label a step by DESIGN.md's definition, and say whether it is a close call.

    A close call is a runner-up of another class within ``HARD_MARGIN`` of the winner's gain, or
    a winner that gains little (the step is balanced between stages).
    """
    gains = speedups(t)
    stage = max(STAGES, key=lambda s: (gains[s], -STAGES.index(s)))
    cls, mech = stage_class(stage, causes)
    others = [g for s, g in gains.items() if stage_class(s, causes)[0] is not cls]
    runner = max(others) if others else 1.0
    hard = gains[stage] < runner * HARD_MARGIN or gains[stage] < 1.15
    return Label(cls, mech, stage, gains[stage], runner, hard)
