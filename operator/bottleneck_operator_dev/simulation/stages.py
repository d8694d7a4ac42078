"""The step pipeline: per-step stage times, the step time they give, and the ground-truth label.

A step of data-parallel training on one GPU is a pipeline of stages. Storage reads, CPU decode and
host-to-device copies run ahead of the GPU in loader workers with prefetch, and DDP overlaps the
gradient all-reduce with the backward pass, so the stages overlap: the step takes about as long as the
slowest of them, plus a little of the others where overlap is imperfect. The bottleneck is the stage
whose removal would speed the step up most, which under this model is the slowest one; the label
margin ``(slowest - runner-up) / slowest`` says how clear that is (the speed-up from removing the
bound is at most ``1 / (1 - margin)``).
"""

from __future__ import annotations

from dataclasses import dataclass

from bottleneck_operator.contract.verdict import Bottleneck

# Below this margin the label is close to a coin flip: such jobs are kept apart as "ambiguous".
AMBIGUOUS_MARGIN = 0.15


@dataclass(frozen=True)
class StageTimes:
    """Seconds per step (one per-GPU batch) of each stage; 0 when a stage does not exist.

    Attributes:
        io: reading the pod's share of samples from storage.
        cpu: decoding/augmenting them on the pod's CPUs (within its CFS quota).
        host_mem: stalls of the input pipeline on major faults / reclaim under host memory pressure.
        h2d: copying the batch host to device over PCIe.
        comm: gradient all-reduce (NVLink or PCIe inside a node, the NIC between nodes).
        flops: GPU math at the part's sustained rate (compute-bound kernels).
        dram: GPU DRAM traffic of the kernels at the practical peak bandwidth.
    """

    io: float
    cpu: float
    host_mem: float
    h2d: float
    comm: float
    flops: float
    dram: float

    def bounds(self) -> dict[Bottleneck, float]:
        """Time per step each verdict class would impose on its own."""
        return {
            Bottleneck.IO: self.io,
            Bottleneck.CPU: self.cpu,
            Bottleneck.INTERCONNECT: max(self.h2d, self.comm),
            Bottleneck.GPU: self.flops,
            Bottleneck.MEMORY: max(self.host_mem, self.dram),
        }


def label_of(times: StageTimes) -> tuple[Bottleneck, float, Bottleneck]:
    """The bounding class, its margin over the runner-up, and the runner-up.

    Args:
        times: the job's nominal stage times.

    Returns:
        (label, margin in 0..1, runner-up class).
    """
    ranked = sorted(times.bounds().items(), key=lambda kv: kv[1], reverse=True)
    (top, t1), (second, t2) = ranked[0], ranked[1]
    margin = (t1 - t2) / t1 if t1 > 0 else 0.0
    return top, margin, second


def step_time(bounds: list[float], overlap_slack: float) -> float:
    """Step time of overlapped stages: the slowest plus the imperfectly hidden part of the runner-up.

    Args:
        bounds: per-class times of one step.
        overlap_slack: share of the runner-up that overlap fails to hide (a few percent to ~15 %).

    Returns:
        Seconds per step.
    """
    ordered = sorted(bounds, reverse=True)
    return ordered[0] + overlap_slack * (ordered[1] if len(ordered) > 1 else 0.0)
