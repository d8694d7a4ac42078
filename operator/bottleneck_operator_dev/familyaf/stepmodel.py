"""The bulk-synchronous step model: stage times, their max-plus combination, and counterfactual labels.

A training step of one pod is made of stages, each timed in seconds per step:

- ``read`` (storage), ``decode`` (loader CPU): the input pipeline, pipelined by the loader workers
  and prefetched ahead of the GPU (``max``), or run in the training process (``+``) without workers;
- ``reclaim`` (host memory): stalls of the training process on swap-ins and direct reclaim (``+``);
- ``h2d`` (PCIe): host-to-device copies, overlapped with kernels when pinned and non-blocking;
- ``issue`` (kernel launch): the host's time to launch the step's kernels; the GPU cannot run them
  faster than they are issued (``max`` with the kernels);
- ``gemm`` (tensor compute), ``gemm_mem`` and ``ew`` (HBM traffic): a roofline per kernel class:
  GEMMs take ``max(gemm, gemm_mem)``, bandwidth-bound kernels ``ew``;
- ``dp`` (gradient all-reduce, intra-node NVLink/PCIe and inter-node fabric, pipelined: ``max`` of the
  two), overlapped with the backward pass up to the Job's overlap share; ``tp`` (tensor-parallel
  activations over NVLink/PCIe), blocking (``+``).

The Job's step is the slowest pod's (every pod waits in the all-reduce). A resource made ample
drops its stages to zero; its counterfactual speed-up is the step time over the step without it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.verdict import Bottleneck, Mechanism

FloatArray = npt.NDArray[np.float64]

# Each resource, the class it belongs to and the stages its capacity times.
RESOURCES: dict[str, tuple[Bottleneck, tuple[str, ...]]] = {
    "storage": (Bottleneck.IO, ("read",)),
    "cpu": (Bottleneck.CPU, ("decode",)),
    "memory": (Bottleneck.MEMORY, ("reclaim",)),
    "hbm": (Bottleneck.MEMORY, ("gemm_mem", "ew")),
    "pcie": (Bottleneck.INTERCONNECT, ("h2d",)),
    "intra": (Bottleneck.INTERCONNECT, ("intra", "tp")),
    "net": (Bottleneck.INTERCONNECT, ("net",)),
    "compute": (Bottleneck.GPU, ("gemm",)),
    "launch": (Bottleneck.GPU, ("issue",)),
}
STAGES = ("read", "decode", "reclaim", "h2d", "issue", "gemm", "gemm_mem", "ew", "intra", "tp", "net", "misc")


@dataclass(frozen=True)
class Composition:
    """How a Job's stages overlap.

    Attributes:
        prefetch: loader workers prefetch ahead of the GPU (else loading runs in the step).
        h2d_async: copies overlap kernels (pinned memory, non-blocking).
        overlap: share of the all-reduce that can hide behind the backward pass.
    """

    prefetch: bool
    h2d_async: bool
    overlap: float


def kernel_time(t: Mapping[str, FloatArray]) -> FloatArray:
    """Seconds per step some kernel of the step runs (the roofline of each kernel class)."""
    return np.maximum(t["gemm"], t["gemm_mem"]) + t["ew"]


def pod_steps(t: Mapping[str, FloatArray], c: Composition) -> FloatArray:
    """Each pod's step time, seconds, from its stage times (arrays over pods)."""
    k = np.maximum(t["issue"], kernel_time(t))
    k = np.maximum(k, t["h2d"]) if c.h2d_async else k + t["h2d"]
    dp = np.maximum(t["intra"], t["net"])
    device = k / 3 + np.maximum(2 * k / 3, c.overlap * dp) + (1 - c.overlap) * dp + t["tp"] + t["misc"]
    feed = np.maximum(t["read"], t["decode"]) if c.prefetch else t["read"] + t["decode"]
    body = np.maximum(feed, device) if c.prefetch else feed + device
    return np.asarray(t["reclaim"] + body, dtype=np.float64)


def job_step(t: Mapping[str, FloatArray], c: Composition) -> float:
    """The Job's step: the slowest pod's, since every pod waits for it in the all-reduce."""
    return float(np.max(pod_steps(t, c)))


def without(t: Mapping[str, FloatArray], resource: str) -> dict[str, FloatArray]:
    """The stage times with one resource made ample (its stages take no time)."""
    gone = RESOURCES[resource][1]
    return {k: (np.zeros_like(v) if k in gone else v) for k, v in t.items()}


def speedups(t: Mapping[str, FloatArray], c: Composition) -> dict[str, float]:
    """Each resource's counterfactual speed-up: the step over the step with that resource ample."""
    step = job_step(t, c)
    return {r: step / max(job_step(without(t, r), c), 1e-12) for r in RESOURCES}


@dataclass(frozen=True)
class Verdict:
    """The counterfactual label of one Job.

    Attributes:
        resource: the resource whose capacity, made ample, shortens the step most.
        label: its class.
        best: its speed-up.
        runner_up: the best speed-up of a resource of another class.
        margin: ``best / runner_up``.
    """

    resource: str
    label: Bottleneck
    best: float
    runner_up: float

    @property
    def margin(self) -> float:
        return self.best / max(self.runner_up, 1e-12)


def judge(t: Mapping[str, FloatArray], c: Composition) -> Verdict:
    """The resource (and class) that, made ample, shortens the step most, and its closest rival."""
    s = speedups(t, c)
    resource = max(s, key=lambda r: s[r])
    label = RESOURCES[resource][0]
    rivals = [v for r, v in s.items() if RESOURCES[r][0] is not label]
    return Verdict(resource, label, s[resource], max(rivals))


def scale_to(t: dict[str, FloatArray], c: Composition, resource: str, target: float) -> dict[str, FloatArray]:
    """The stage times with one resource's stages scaled so that its speed-up is ``target``.

    The speed-up never falls as a resource's stages grow, so a bisection on the log of the scale
    finds it (within the bounds [1e-4, 1e4]; at a bound, the bound's times are returned).
    """
    stages = RESOURCES[resource][1]
    rest = job_step(without(t, resource), c)

    def scaled(x: float) -> dict[str, FloatArray]:
        return {k: (v * x if k in stages else v) for k, v in t.items()}

    lo, hi = -4.0, 4.0
    for _ in range(40):
        mid = (lo + hi) / 2
        if job_step(scaled(10**mid), c) / rest < target:
            lo = mid
        else:
            hi = mid
    return scaled(10**hi)


def mechanism_of(resource: str, *, storage_local: bool, has_nvlink: bool, cpu: Mechanism) -> Mechanism:
    """The mechanism a resource names (``cpu`` is the CPU stage's own, decided by the cluster)."""
    fixed = {
        "memory": Mechanism.HOST_MEMORY_PRESSURE,
        "hbm": Mechanism.HBM_BANDWIDTH,
        "pcie": Mechanism.PCIE,
        "net": Mechanism.NETWORK,
        "compute": Mechanism.COMPUTE,
        "launch": Mechanism.LAUNCH_BOUND,
    }
    if resource == "storage":
        return Mechanism.LOCAL_DISK if storage_local else Mechanism.NETWORK_STORAGE
    if resource == "intra":
        return Mechanism.NVLINK if has_nvlink else Mechanism.PCIE
    if resource == "cpu":
        return cpu
    return fixed[resource]
