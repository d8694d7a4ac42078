"""Aiming a Job at a class: make one resource scarce the way clusters make it scarce.

An aim only changes physical quantities of the :class:`~.plan.Plan` (a throttled volume, a
heavier augmentation, fewer loader workers, a smaller CPU limit, a slower fabric, a bigger input
tensor, more and smaller kernels, memory-bound kernels, a memory limit below the working set).
Whether the Job then really is limited there is measured by :mod:`.stepmodel`; a Job that misses
its aim is drawn again. ``way`` (drawn once per Job) says which scarcity to try, ``strength``
grows with each new try. An aim that does not fit the drawn machines returns False.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator_dev.familyai.plan import Plan

Aim = Callable[[Plan, np.random.Generator, float, float], bool]


def _io(plan: Plan, rng: np.random.Generator, s: float, way: float) -> bool:
    if (way < 0.4) != plan.storage.local:
        return False
    plan.storage_bw *= float(rng.uniform(0.15, 1.0)) / s
    plan.cache_hit = float(rng.uniform(0.0, 0.5))
    plan.stored_bytes *= float(rng.uniform(1.0, 2.0)) * s**0.5
    plan.storage_shared = max(plan.storage_shared, float(rng.uniform(0.0, 0.4)))
    return True


def _cpu(plan: Plan, rng: np.random.Generator, s: float, way: float) -> bool:
    plan.cpu_s *= float(rng.uniform(0.7, 3.0)) * s
    g = plan.gpus_per_pod
    if way < 1 / 3:  # a CPU limit below what the loaders need
        plan.cpu_limit = g + float(rng.uniform(2.0, 4.0 + 4.0 * g)) / s
    elif way < 2 / 3:  # too few loader processes
        plan.workers = int(rng.integers(1, 2 + 2 * g))
        plan.cpu_limit = None if rng.random() < 0.6 else (plan.workers + g) * float(rng.uniform(1.5, 3.0))
    else:  # the node's CPUs are busy: neighbours, or a small node
        plan.cpu_limit = None
        plan.neigh_cpu = float(min(0.92, rng.uniform(0.4, 0.8) * s**0.2))
        plan.neighbours = tuple(max(n, 2) for n in plan.neighbours)
        plan.workers = min(plan.ncpu, plan.workers * 2)
    return True


def _interconnect(plan: Plan, rng: np.random.Generator, s: float, way: float) -> bool:
    if way < 0.3:  # collectives between nodes
        if plan.pods < 2:
            return False
        plan.node_net_bw *= float(rng.uniform(0.15, 1.0)) / s
        plan.grad_bytes *= float(rng.uniform(1.0, 3.0)) * s**0.5
        plan.overlap *= float(rng.uniform(0.3, 1.0))
    elif way < 0.68:  # tensor/expert parallel exchanges over NVLink
        if not plan.gpu.nvlink_bw or plan.gpus_per_pod < 2:
            return False
        plan.tp_bytes = max(plan.tp_bytes, plan.flop / 1e9 * float(rng.uniform(1e5, 1e6))) * s
        plan.overlap = float(rng.uniform(0.0, 0.3))
    elif way < 0.75:  # collectives between GPUs without NVLink
        if plan.gpu.nvlink_bw or plan.gpus_per_pod < 2:
            return False
        plan.grad_bytes *= float(rng.uniform(1.5, 6.0)) * s
        plan.overlap *= float(rng.uniform(0.1, 0.8))
    else:  # large inputs copied host to device (volumes, uncompressed frames, offloaded states)
        plan.decoded_bytes *= float(rng.uniform(3.0, 30.0)) * s
        plan.h2d_eff = float(rng.uniform(0.25, 0.85))
        plan.h2d_overlap = float(rng.uniform(0.0, 0.6))
    return True


def _gpu(plan: Plan, rng: np.random.Generator, s: float, way: float) -> bool:
    if way < 0.5:  # many small kernels dispatched by one host thread
        plan.kernels *= float(rng.uniform(2.0, 12.0)) * s
        plan.flop *= float(rng.uniform(0.05, 0.6)) / s
        plan.hbm_bytes *= float(rng.uniform(0.05, 0.6)) / s
        plan.launch_cost = float(rng.uniform(8e-6, 3e-5))
    else:
        plan.flop *= float(rng.uniform(1.0, 3.0)) * s
        plan.mfu = float(rng.uniform(0.4, 0.75))
    return True


def _memory(plan: Plan, rng: np.random.Generator, s: float, way: float) -> bool:
    if way < 0.5:  # kernels that stream device memory (embeddings, norms, optimizer steps)
        plan.hbm_bytes *= float(rng.uniform(2.0, 12.0)) * s
    else:  # the pod's working set above what its limit leaves it
        plan.mem_limit = plan.host_ws * float(rng.uniform(0.85, 0.99))
        plan.fault_per_step = float(rng.uniform(1e2, 4e3)) * s
        plan.fault_latency *= float(rng.uniform(1.0, 2.0))
    return True


AIMS: dict[Bottleneck, Aim] = {
    Bottleneck.IO: _io,
    Bottleneck.CPU: _cpu,
    Bottleneck.INTERCONNECT: _interconnect,
    Bottleneck.GPU: _gpu,
    Bottleneck.MEMORY: _memory,
}


def aim(plan: Plan, target: Bottleneck, rng: np.random.Generator, strength: float, way: float) -> bool:
    """Make the resource behind ``target`` scarce in ``plan`` (in place); False when ``way`` does not fit it."""
    return AIMS[target](plan, rng, strength, way)
