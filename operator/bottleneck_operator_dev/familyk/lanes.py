"""A plan's step, sample by sample: each lane's time per step with the drift real runs show.

Batches differ in size (variable-length text, mixed image sizes), storage and neighbours vary, so
every lane's time wanders from sample to sample; the step of each sample is its slowest lane. Pods
of one synchronous job share the step: a pod on a faster board finishes its compute early and waits
inside the collective, whose kernels keep its GPU busy while its SMs idle.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator_dev.familyk.plan import Plan

Arr = npt.NDArray[np.float64]


@dataclass(frozen=True)
class PodLanes:
    """Seconds per step, per sample, of one pod's lanes, and the job's step time."""

    io: Arr
    decode: Arr
    host: Arr
    swap: Arr
    copy: Arr
    math: Arr
    bw: Arr
    comm: Arr  # the collectives' own time at link speed
    kernels: Arr  # time any kernel runs on the pod's GPUs (compute, collectives, waiting in them)
    step: Arr  # the job's step time


def _drift(rng: np.random.Generator, n: int, sigma: float) -> Arr:
    """A slowly wandering positive factor around 1 (AR(1) in log space)."""
    noise = rng.normal(0.0, sigma, n)
    out = np.empty(n)
    acc = 0.0
    for i in range(n):
        acc = 0.7 * acc + noise[i]
        out[i] = acc
    result: Arr = np.exp(out - out.mean())
    return result


def job_lanes(rng: np.random.Generator, plan: Plan, n: int) -> list[PodLanes]:
    """Every pod's lanes over ``n`` samples, sharing one step time per sample."""
    s = plan.step
    sigma = float(rng.uniform(0.02, 0.1))
    shared = {k: _drift(rng, n, sigma) for k in ("io", "decode", "host", "swap", "copy", "comm")}
    compute_drift = _drift(rng, n, sigma * 0.5)
    slowest = min(b.tflops * b.max_clock for b in plan.cluster.boards)
    pods = []
    for board in plan.cluster.boards:
        speed = slowest / (board.tflops * board.max_clock)  # a faster board computes in less time
        per_pod = _drift(rng, n, 0.01)
        pods.append(
            {
                "io": s.io * shared["io"] * per_pod,
                "decode": s.decode * shared["decode"] * per_pod,
                "host": s.host * shared["host"],
                "swap": s.swap * shared["swap"],
                "copy": s.copy * shared["copy"],
                "math": s.math * speed**0.7 * compute_drift * per_pod,
                "bw": s.bw * speed**0.5 * compute_drift * per_pod,
                "comm": s.comm * shared["comm"],
            }
        )
    compute = np.max([p["math"] + p["bw"] for p in pods], axis=0)
    comm = pods[0]["comm"]
    gpu_lane = np.maximum(compute, (1.0 - s.overlap) * compute + comm)
    step = gpu_lane
    for p in pods:
        step = np.maximum.reduce([step, np.maximum(p["io"], p["decode"]), p["host"] + p["swap"], p["copy"]])
    synced = sum(plan.cluster.gpus) > 1
    out = []
    for p in pods:
        kernels = gpu_lane if synced else p["math"] + p["bw"]
        out.append(PodLanes(kernels=np.minimum(kernels, step), step=step, **p))
    return out
