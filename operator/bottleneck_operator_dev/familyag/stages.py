"""What each stage of a training step costs on one Job, with any set of stages made ample.

The step simulation (:mod:`.timeline`) needs durations and activity levels; this module derives
them from a :class:`~.scenario.Scenario`. A counterfactual run passes ``ample``: the stages named
there cost nothing (a storage that answers at once, an infinitely fast CPU, links and HBM without
limits, kernels without compute time, launches without host cost), and everything else stays.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from bottleneck_operator_dev.familyag.host import HostCosts, host_costs
from bottleneck_operator_dev.familyag.links import CommCosts, comm_costs
from bottleneck_operator_dev.familyag.scenario import Scenario

STAGES: tuple[str, ...] = ("storage", "cpu", "pcie", "nvlink", "network", "compute", "launch", "hbm", "host-memory")


@dataclass(frozen=True)
class Group:
    """A run of kernels on the compute stream (a block of layers, forward or backward, or the optimizer).

    Attributes:
        kernels: launches in the group.
        busy: seconds some kernel of the group runs on the GPU.
        tensor, dram, sm, occ, fp16, fp32: activity levels while a kernel runs (0..1).
    """

    kernels: float
    busy: float
    tensor: float
    dram: float
    sm: float
    occ: float
    fp16: float
    fp32: float


@dataclass(frozen=True)
class PodCosts:
    """One pod's representative rank: its input pipeline and its compute stream.

    Attributes:
        host: the loader and main-thread costs (see :class:`~.host.HostCosts`).
        launch_s: host seconds to issue one kernel.
        fwd, bwd: compute groups of the forward and backward passes (buckets follow each backward group).
        opt: the optimizer step.
        clock: SM clock as a share of the maximum while busy (power cap, per-GPU spread).
        slowed: the power cap slows this pod's GPUs when they are busy.
    """

    host: HostCosts
    launch_s: float
    fwd: tuple[Group, ...]
    bwd: tuple[Group, ...]
    opt: Group
    clock: float
    slowed: bool


@dataclass(frozen=True)
class StepCosts:
    """Every pod's costs and the collectives they share."""

    pods: tuple[PodCosts, ...]
    comm: CommCosts


def _kernel_time(compute: float, memory: float) -> float:
    """Seconds for kernels that need ``compute`` seconds of math and ``memory`` seconds of HBM traffic."""
    return max(compute, memory) + 0.15 * min(compute, memory)


def _power_clock(sc: Scenario, tensor: float, dram: float) -> tuple[float, bool]:
    """Clock share the power cap allows while busy (dynamic power taken as ~ f^2), and whether it binds."""
    gpu = sc.gpu
    demand = gpu.idle_w + (gpu.tdp_w - gpu.idle_w) * min(1.15, 0.3 + 0.45 * tensor / 0.6 + 0.25 * dram / 0.8)
    if demand <= sc.power_cap:
        return 1.0, False
    return max(0.5, ((sc.power_cap - gpu.idle_w) / (demand - gpu.idle_w)) ** 0.5), True


GPU_DECODE_HBM = 6e6  # device-memory bytes per sample when the GPU decodes it (nvJPEG/DALI, features; assumed)
HALF_VECTOR = 2.0  # non-tensor half-precision math runs at about twice the FP32 rate (assumed)


def _work(sc: Scenario) -> tuple[float, float, float, float]:
    """Per-step tensor FLOPs, vector FLOPs, HBM bytes and kernel launches of one rank."""
    m = sc.model
    flops = sc.batch * m.flops
    hbm = sc.batch * (m.hbm * (0.7 if sc.mode == "compiled" else 1.0) + (GPU_DECODE_HBM if sc.gpu_decode else 0.0))
    kernels = m.kernels * (0.6 if sc.mode == "compiled" else 1.0) + (40.0 if sc.gpu_decode else 0.0)
    return flops * m.tensor_share, flops * (1.0 - m.tensor_share), hbm, kernels


def _times(sc: Scenario, clock: float) -> tuple[float, float]:
    """Seconds of math and of HBM traffic in one rank's forward and backward kernels."""
    gpu = sc.gpu
    tensor_flops, vector_flops, hbm, _ = _work(sc)
    vector_rate = gpu.vector_flops * HALF_VECTOR * 0.3 * clock
    return tensor_flops / (gpu.tensor_flops * sc.tensor_eff * clock) + vector_flops / vector_rate, hbm / (
        gpu.hbm_bps * 0.8
    )


def _groups(sc: Scenario, ample: frozenset[str], clock: float) -> tuple[tuple[Group, ...], tuple[Group, ...]]:
    """Forward (two groups) and backward (three groups) of one rank at the given clock share."""
    gpu = sc.gpu
    tensor_flops, vector_flops, hbm, kernels = _work(sc)
    compute, memory = _times(sc, clock)
    busy = _kernel_time(0.0 if "compute" in ample else compute, 0.0 if "hbm" in ample else memory)
    span = max(_kernel_time(compute, memory), 1e-9)
    sm = min(0.97, 0.3 + span / max(kernels, 1.0) / 30e-6)
    share = sc.model.tensor_share
    tensor = min(0.95, tensor_flops / (gpu.tensor_flops * clock * span))
    dram = min(0.92, hbm / (gpu.hbm_bps * span) + 0.08 * tensor)
    base = Group(
        kernels=kernels,
        busy=busy,
        tensor=tensor,
        dram=dram,
        sm=sm,
        occ=sm * (0.3 * share + 0.7 * (1.0 - share)),
        fp16=min(0.5, 0.06 + 0.5 * (1.0 - share) * dram),
        fp32=min(0.6, vector_flops / (gpu.vector_flops * clock * span) + 0.02),
    )
    fwd = tuple(_part(base, 1.0 / 6.0, 1.0 / 6.0) for _ in range(2))
    bwd = tuple(_part(base, 2.0 / 9.0, 0.55 / 3.0) for _ in range(3))
    return fwd, bwd


def _part(group: Group, work: float, launches: float) -> Group:
    return replace(group, kernels=group.kernels * launches, busy=group.busy * work)


def _optimizer(sc: Scenario, ample: frozenset[str], clock: float) -> Group:
    """Adam over this rank's parameters: ~24 bytes of HBM traffic and ~12 FP32 ops per parameter.

    FSDP shards every parameter over the ranks; MoE shards its experts (taken as 80 % of the parameters).
    """
    gpu, m = sc.gpu, sc.model
    local = {"fsdp": m.trainable / sc.ranks, "moe": m.trainable * (0.2 + 0.8 / sc.ranks)}.get(m.comm, m.trainable)
    kernels = m.kernels * 0.12 * (0.6 if sc.mode == "compiled" else 1.0)
    memory = local * 24.0 / (gpu.hbm_bps * 0.8)
    compute = local * 12.0 / (gpu.vector_flops * 0.3 * clock)
    real = max(_kernel_time(compute, memory), 1e-9)
    return Group(
        kernels=kernels,
        busy=_kernel_time(0.0 if "compute" in ample else compute, 0.0 if "hbm" in ample else memory),
        tensor=0.0,
        dram=min(0.9, local * 24.0 / (gpu.hbm_bps * real)),
        sm=0.9,
        occ=0.7,
        fp16=0.02,
        fp32=min(0.6, local * 12.0 / (gpu.vector_flops * clock * real)),
    )


def _pod(sc: Scenario, pod: int, ample: frozenset[str], host: HostCosts) -> PodCosts:
    """The costs of pod ``pod`` (its slowest GPU paces it)."""
    spread = min(sc.spread[pod % len(sc.spread)])
    first, _ = _groups(sc, frozenset(), 1.0)
    cap, slowed = _power_clock(sc, first[0].tensor, first[0].dram)
    clock = cap * spread
    fwd, bwd = _groups(sc, ample, clock)
    launch = 0.0 if "launch" in ample else sc.launch_s * (0.15 if sc.mode == "graphs" else 1.0) / host.main_speed
    return PodCosts(
        host=host,
        launch_s=launch,
        fwd=fwd,
        bwd=bwd,
        opt=_optimizer(sc, ample, clock),
        clock=clock,
        slowed=slowed,
    )


def step_costs(sc: Scenario, ample: frozenset[str] = frozenset(), pods: int = 4) -> StepCosts:
    """The costs of one step on (up to ``pods``) representative pods, with ``ample`` stages free.

    Args:
        sc: the Job.
        ample: stage names from :data:`STAGES` whose capacity is made ample.
        pods: how many distinct pods to simulate; pods beyond repeat them.

    Returns:
        The per-pod costs and the shared collectives.
    """
    host = host_costs(sc, ample)
    shown = min(sc.pods, pods)
    return StepCosts(tuple(_pod(sc, p, ample, host) for p in range(shown)), comm_costs(sc, ample))
