"""A training step as a pipeline of stages, and the label it implies.

The model (docs/familyd.md): a data-parallel step reads samples (storage), decodes them (CPU
workers), copies them to the GPU (PCIe), computes (GPU math and HBM-bound kernels) and
synchronises gradients (NVLink inside a node, PCIe peer-to-peer on boards without NVLink, the
fabric between nodes). Loader workers prefetch, so the input side runs beside the GPU side:

    input  = max(read, decode) + 0.1 * min(read, decode) + stall_in_workers
    chain  = math / clock + hbm + h2d_exposed + comm_exposed + tensor_parallel_exposed
    own    = max(input, chain) + stall_in_main
    step   = max over the job's pods of own   (every rank waits for the slowest at the all-reduce)

where gradient traffic hides behind the backward pass (two thirds of the compute) up to an overlap
share. Host memory pressure stalls the processes that touch swapped-out or evicted pages.

The label is the class of the stage whose removal (its time set to zero, everywhere) shortens the
step most - DESIGN.md's definition of the bottleneck.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.verdict import Bottleneck, Mechanism

FloatArray = npt.NDArray[np.float64]

# A stage: what bounds the step when it dominates, and how.
STAGES: dict[str, tuple[Bottleneck, Mechanism]] = {
    "read": (Bottleneck.IO, Mechanism.LOCAL_DISK),  # the mechanism is refined by the storage kind
    "decode": (Bottleneck.CPU, Mechanism.SATURATED),  # refined by how the CPU is limited
    "h2d": (Bottleneck.INTERCONNECT, Mechanism.PCIE),
    "p2p": (Bottleneck.INTERCONNECT, Mechanism.PCIE),
    "nvlink": (Bottleneck.INTERCONNECT, Mechanism.NVLINK),
    "network": (Bottleneck.INTERCONNECT, Mechanism.NETWORK),
    "math": (Bottleneck.GPU, Mechanism.COMPUTE),
    "hbm": (Bottleneck.MEMORY, Mechanism.HBM_BANDWIDTH),
    "swap": (Bottleneck.MEMORY, Mechanism.HOST_MEMORY_PRESSURE),
}

# Share of the compute time that is the backward pass, during which bucketed all-reduces can run.
BACKWARD_SHARE = 2.0 / 3.0
# How much of the smaller input stage still shows when reads and decoding share workers (an estimate:
# one worker reads and then decodes, so the two never overlap perfectly).
INPUT_INTERFERENCE = 0.1


@dataclass(frozen=True)
class Plan:
    """The work of one step, per pod (arrays of shape (pods,), seconds unless said otherwise).

    Attributes:
        read: storage read time of the pod's samples at the storage's capacity for this pod.
        decode: CPU decode/augment time on the cores the loader may use.
        math: math-bound kernel time at the boost clock.
        hbm: HBM-bandwidth-bound kernel time (does not scale with the SM clock).
        h2d: exposed host-to-device copy time.
        p2p: all-reduce time over PCIe peer-to-peer (boards without NVLink).
        nvlink: all-reduce time over NVLink.
        network: all-reduce time over the inter-node fabric.
        overlap: share of the backward pass that all-reduce traffic may hide behind.
        tp: tensor-parallel NVLink time on the critical path (not hidden).
        swap_main: memory-pressure stall of the training processes.
        swap_workers: memory-pressure stall of the loader workers.
        clock: SM clock as a share of boost (power cap, locked clocks).
    """

    read: FloatArray
    decode: FloatArray
    math: FloatArray
    hbm: FloatArray
    h2d: FloatArray
    p2p: FloatArray
    nvlink: FloatArray
    network: FloatArray
    overlap: FloatArray
    tp: FloatArray
    swap_main: FloatArray
    swap_workers: FloatArray
    clock: FloatArray

    def without(self, stage: str) -> Plan:
        """The plan with one stage's time removed."""
        zero = np.zeros_like(self.read)
        if stage == "swap":
            return replace(self, swap_main=zero, swap_workers=zero)
        if stage == "nvlink":
            return replace(self, nvlink=zero, tp=zero)
        return replace(self, **{stage: zero})

    def scaled(self, **factors: FloatArray | float) -> Plan:
        """The plan with some stages' times multiplied (the time-varying modulation of a run)."""
        return replace(self, **{k: getattr(self, k) * v for k, v in factors.items()})

    def pod(self, i: int) -> dict[str, float]:
        """One pod's stage times, as plain numbers (for docs and tests)."""
        return {f.name: float(np.asarray(getattr(self, f.name)).reshape(-1)[i]) for f in fields(self)}


@dataclass(frozen=True)
class Account:
    """Where a step's time goes, per pod (arrays broadcast like the plan's).

    Attributes:
        step: the job's step time (the slowest pod's), the same for every pod.
        own: each pod's step time before waiting for its peers.
        input: the input side's time (read, decode, worker stalls).
        compute: math (at the actual clock) plus HBM-bound kernel time.
        comm_total: all-reduce time, hidden or not, plus tensor-parallel time.
        comm_exposed: the part of comm_total on the critical path.
        wait: time spent waiting for slower peers inside the collective.
    """

    step: FloatArray
    own: FloatArray
    input: FloatArray
    compute: FloatArray
    comm_total: FloatArray
    comm_exposed: FloatArray
    wait: FloatArray


def account(plan: Plan, synced: bool) -> Account:
    """The step account of a plan (pods along axis 0; any further axes are time).

    Args:
        plan: the stage times.
        synced: the pods synchronise every step (more than one GPU in the job).
    """
    inp = np.maximum(plan.read, plan.decode) + INPUT_INTERFERENCE * np.minimum(plan.read, plan.decode)
    inp = inp + plan.swap_workers
    compute = plan.math / plan.clock + plan.hbm
    allreduce = plan.p2p + plan.nvlink + plan.network
    exposed = np.maximum(allreduce - plan.overlap * BACKWARD_SHARE * compute, 0.0) + plan.tp
    chain = compute + plan.h2d + exposed
    own = np.maximum(inp, chain) + plan.swap_main
    step = np.broadcast_to(own.max(axis=0, keepdims=True), own.shape) if synced else own
    wait = step - own if synced else np.zeros_like(own)
    return Account(step, own, inp, compute, allreduce + plan.tp, exposed, wait)


def speedups(plan: Plan, synced: bool) -> dict[str, float]:
    """How much faster the job's step gets when each stage is removed (1.0: not at all)."""
    base = float(account(plan, synced).step.max())
    out = {}
    for stage in STAGES:
        faster = float(account(plan.without(stage), synced).step.max())
        out[stage] = base / faster if faster > 0 else float("inf")
    return out


def bounding_stage(plan: Plan, synced: bool) -> tuple[str, float, float]:
    """The stage whose removal speeds the step up most, its speed-up, and the runner-up stage's.

    Stages of one class count once, at their best (two links of one all-reduce are one class).
    """
    gains = speedups(plan, synced)
    best = max(gains, key=lambda s: gains[s])
    others = [g for s, g in gains.items() if STAGES[s][0] is not STAGES[best][0]]
    return best, gains[best], max(others) if others else 1.0
