"""Drawing one Job's stage times, in seconds per step, on its cluster.

Times are drawn first, relative to the GPU kernels' time, and the capacities of the cluster then
turn them into bytes, cores and pages (``demand = time x capacity``), so every byte rate a Job
shows is one its hardware can carry. The intended resource's stages are scaled until their
counterfactual speed-up reaches a drawn target; the label is still whatever the counterfactual says.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.verdict import Mechanism
from bottleneck_operator_dev.familyaf.cluster import Cluster
from bottleneck_operator_dev.familyaf.stepmodel import Composition, scale_to

FloatArray = npt.NDArray[np.float64]
M = Mechanism

# The resource each intended mechanism makes the bottleneck.
INTENT_RESOURCE: dict[Mechanism, str] = {
    M.COMPUTE: "compute",
    M.LAUNCH_BOUND: "launch",
    M.HOST_MEMORY_PRESSURE: "memory",
    M.HBM_BANDWIDTH: "hbm",
    M.PCIE: "pcie",
    M.NVLINK: "intra",
    M.NETWORK: "net",
    M.LOCAL_DISK: "storage",
    M.NETWORK_STORAGE: "storage",
    M.THROTTLED: "cpu",
    M.SATURATED: "cpu",
    M.TOO_FEW_WORKERS: "cpu",
}


@dataclass(frozen=True)
class CpuBudget:
    """The cores the loader gets and what caps them.

    Attributes:
        cores: cores the decode work runs on.
        mechanism: what caps them: too few workers, the CPU limit (throttled) or a busy node.
        main: cores the training processes themselves use (Python, launches, NCCL proxies).
    """

    cores: float
    mechanism: Mechanism
    main: float


def cpu_budget(cl: Cluster) -> CpuBudget:
    """Cores available to decoding: the least of the workers, the limit's room and the node's room."""
    main = cl.gpus * 1.0
    caps = {
        M.TOO_FEW_WORKERS: float(cl.workers) if cl.workers > 0 else cl.gpus * 0.6,
        M.THROTTLED: max(cl.cpu_limit - 0.8 * main, 0.5) if cl.cpu_limit is not None else math.inf,
        M.SATURATED: max(cl.node_cores - cl.neigh_cores - main, 0.5),
    }
    mech = min(caps, key=lambda m: caps[m])
    return CpuBudget(caps[mech], mech, main)


def composition(cl: Cluster) -> Composition:
    return Composition(prefetch=cl.prefetch, h2d_async=cl.h2d_async, overlap=cl.overlap)


def _lu(rng: np.random.Generator, lo: float, hi: float) -> float:
    """Log-uniform draw."""
    return float(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def _base(rng: np.random.Generator, cl: Cluster, k0: float, resource: str) -> dict[str, FloatArray]:
    """Stage times of a Job on which no resource is pushed yet (relative to the kernels' ``k0``)."""
    p = cl.pods

    def jit(spread: float) -> FloatArray:
        return rng.uniform(1 - spread, 1 + spread, p)

    share = {"hbm": rng.uniform(0.1, 0.4), "compute": rng.uniform(0.6, 0.9)}.get(resource, rng.uniform(0.45, 0.8))
    gemm = k0 * share / cl.clock
    tokens = 0.1 if cl.data == "tokens" else 1.0
    multi_gpu = cl.gpus > 1
    fabric_scale = 1.0
    if cl.fabric is not None:
        fabric_scale = min(4.0, max(0.3, math.sqrt(50e9 / (cl.nics * cl.fabric.port_bps))))
    t = {
        "gemm": gemm,
        "gemm_mem": gemm * rng.uniform(0.1, 0.6),
        "ew": k0 * (1 - share) * jit(0.03),
        "issue": k0 * _lu(rng, 0.05, 0.45) * jit(0.03),
        "read": k0 * _lu(rng, 0.02, 0.6) * tokens * jit(0.1),
        "decode": k0 * _lu(rng, 0.02, 0.6) * tokens * jit(0.1),
        "reclaim": k0 * _lu(rng, 0.001, 0.02) * jit(0.2) if cl.swap != "none" else np.zeros(p),
        "h2d": k0 * _lu(rng, 0.005, 0.15) * jit(0.03),
        "intra": k0 * _lu(rng, 0.05, 0.5) * jit(0.02) if multi_gpu else np.zeros(p),
        "tp": k0 * rng.uniform(0.01, 0.05) * np.ones(p) if cl.gpus >= 4 and rng.random() < 0.25 else np.zeros(p),
        "net": k0 * _lu(rng, 0.05, 0.6) * fabric_scale * jit(0.03) if cl.pods > 1 else np.zeros(p),
        "misc": k0 * rng.uniform(0.01, 0.04) * np.ones(p),
    }
    if resource == "memory" and not t["reclaim"].any():
        t["reclaim"] = k0 * 0.01 * np.ones(p)
    if resource == "intra" and not t["tp"].any() and rng.random() < 0.6:
        t["tp"] = k0 * 0.02 * np.ones(p)  # tensor parallel inside the node: activations on every layer
    return {k: np.asarray(v, dtype=np.float64) for k, v in t.items()}


def target_speedup(rng: np.random.Generator) -> float:
    """How much faster the intended resource, made ample, would make the step."""
    return _lu(rng, 1.25, 3.0) if rng.random() < 0.8 else float(rng.uniform(1.04, 1.25))


def draw_stages(rng: np.random.Generator, cl: Cluster, mech: Mechanism) -> dict[str, FloatArray]:
    """One Job's stage times per pod, seconds per step, with the intended resource pushed forward."""
    resource = INTENT_RESOURCE[mech]
    k0 = _lu(rng, 0.08, 1.2)
    t = _base(rng, cl, k0, resource)
    return scale_to(t, composition(cl), resource, target_speedup(rng))
