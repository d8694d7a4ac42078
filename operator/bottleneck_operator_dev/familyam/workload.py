"""The training program: what one step asks of each stage, and the stage times on a placement.

A Workload is physical (bytes per sample, milliseconds of decode per sample, kernels per step,
gradient bytes, FLOPs and HBM bytes per step). The intent only decides how hard each stage is
pushed, as a drawn ratio of that stage's time to the GPU's; the ratio is turned into a physical
quantity on the first pod's placement, clipped to a plausible range, and every pod's stage times
are then recomputed from the physical quantity on its own placement.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.verdict import Bottleneck, Mechanism
from bottleneck_operator_dev.familyam.capacity import (
    GB,
    HBM_PRACTICAL,
    MAIN_CORES,
    h2d_gbps,
    inter_link,
    intra_link,
    launch_factor,
    loader_cores,
    ring_factor,
)
from bottleneck_operator_dev.familyam.hardware import Board, Placement
from bottleneck_operator_dev.familyam.stages import Stages


@dataclass(frozen=True)
class Workload:
    """One step's demands, per GPU unless said otherwise.

    Attributes:
        samples: samples per GPU per step (the per-GPU batch).
        sample_bytes: bytes read from storage per sample.
        request_s: per-request latency of a remote store (seconds; 0 for local disks).
        decode_s: core-seconds of decode and augmentation per sample (TELEMETRY.md: 50-200 JPEGs/s a core).
        workers: loader workers per GPU.
        tensor_bytes: bytes per decoded sample copied host to device.
        pinned: pinned host memory and non-blocking copies.
        kernels: kernel launches per step.
        launch_s: host seconds per launch.
        flops_s: tensor-math seconds per step at full clock.
        hbm_bytes: HBM bytes moved per step.
        grad_bytes: gradient bytes all-reduced per step.
        overlap: share of backward that hides the all-reduce.
        amp: mixed precision (tensor pipes) rather than FP32 math.
        host_gb: the pod's host working set, GB.
        churn: share of the overshoot re-faulted per step under memory pressure.
        swap_gbps: swap-in rate the node sustains, GB/s.
    """

    samples: int
    sample_bytes: float
    request_s: float
    decode_s: float
    workers: int
    tensor_bytes: float
    pinned: bool
    kernels: int
    launch_s: float
    flops_s: float
    hbm_bytes: float
    grad_bytes: float
    overlap: float
    amp: bool
    host_gb: float
    churn: float
    swap_gbps: float


def _io(w: Workload, p: Placement) -> float:
    """Storage bandwidth, or for a remote store the requests in flight (one per worker), whichever is slower."""
    gpus = p.gpus
    by_bytes = w.samples * gpus * w.sample_bytes / (p.storage_gbps * GB)
    by_latency = w.samples * w.request_s / max(w.workers, 1) if p.remote_storage else 0.0
    return max(by_bytes, by_latency)


def _host_mem(w: Workload, p: Placement) -> float:
    """Reclaim and swap-in stalls: the overshoot of the working set past the limit, re-faulted each step."""
    overshoot = max(0.0, w.host_gb - 0.97 * p.mem_limit_gb)
    return overshoot * w.churn / w.swap_gbps


def stages_for(w: Workload, board: Board, p: Placement, clock: float, nodes: int) -> Stages:
    """One pod's stage times from the workload's demands and the placement's capacities."""
    cores = loader_cores(w.workers * p.gpus, p)
    demand = w.workers * p.gpus + MAIN_CORES
    launch = w.kernels * w.launch_s
    intra_bw, intra_mech = intra_link(board, p)
    comm_intra = ring_factor(p.gpus) * w.grad_bytes / (intra_bw * GB)
    comm_inter = ring_factor(nodes) * w.grad_bytes / (inter_link(board, p) * GB) if nodes > 1 else 0.0
    return Stages(
        io=_io(w, p),
        decode=w.samples * p.gpus * w.decode_s / cores.effective,
        h2d=w.samples * w.tensor_bytes / (h2d_gbps(board, p, w.pinned) * GB),
        h2d_overlapped=w.pinned,
        launch=launch,
        launch_cpu=launch * (launch_factor(p, demand) - 1.0),
        flops=w.flops_s / clock,
        hbm=w.hbm_bytes / (board.hbm_gbps * GB * HBM_PRACTICAL),
        comm_intra=comm_intra,
        comm_inter=comm_inter,
        overlap=w.overlap,
        host_mem=_host_mem(w, p),
        io_mechanism=Mechanism.NETWORK_STORAGE if p.remote_storage else Mechanism.LOCAL_DISK,
        cpu_mechanism=cores.bound,
        intra_mechanism=intra_mech,
    )


def _ratios(rng: np.random.Generator, intent: Bottleneck, sub: str) -> dict[str, float]:
    """Each stage's time as a share of the GPU's, pushed above 1 for the intended stage.

    A share of the others lands near 1 as well, so that close calls exist.
    """
    r = {k: float(rng.uniform(0.03, 0.7)) for k in ("io", "decode", "h2d", "launch", "comm", "hbm", "host")}
    if rng.random() < 0.3:
        r[str(rng.choice(list(r)))] = float(rng.uniform(0.75, 1.1))
    push = float(rng.uniform(1.15, 2.8))
    key = {Bottleneck.IO: "io", Bottleneck.CPU: "decode", Bottleneck.GPU: "", Bottleneck.MEMORY: sub}
    key_ic = {"pcie": "h2d", "comm": "comm"}
    target = key_ic.get(sub, "") if intent is Bottleneck.INTERCONNECT else key.get(intent, "")
    if intent is Bottleneck.GPU and sub == "launch":
        target = "launch"
    if target:
        r[target] = push
    if intent is not Bottleneck.MEMORY or sub != "host":
        r["host"] = 0.0
    return r


def draw_sub(rng: np.random.Generator, intent: Bottleneck, multi_gpu: bool) -> str:
    """Which way the intent shows: HBM or host memory, launches or math, copies or collectives."""
    if intent is Bottleneck.MEMORY:
        return "hbm" if rng.random() < 0.5 else "host"
    if intent is Bottleneck.GPU:
        return "launch" if rng.random() < 0.3 else "math"
    if intent is Bottleneck.INTERCONNECT:
        return "comm" if multi_gpu and rng.random() < 0.8 else "pcie"
    return ""


def _solve_input(
    rng: np.random.Generator,
    intent: Bottleneck,
    r: dict[str, float],
    t0: float,
    samples: int,
    workers: int,
    p: Placement,
) -> tuple[float, float, float]:
    """Bytes per sample, request latency and decode seconds per sample that give the drawn input ratios."""
    n = samples * p.gpus
    sample_bytes = float(np.clip(r["io"] * t0 * p.storage_gbps * GB / n, 1e4, 3e7))
    request_s = 0.0
    if p.remote_storage:
        drawn = rng.uniform(0.01, 0.08) if p.storage == "object" else rng.uniform(0.002, 0.01)
        cap = r["io"] * t0 * workers / samples
        request_s = float(drawn if intent is Bottleneck.IO else min(drawn, 0.9 * cap))
    cores = loader_cores(workers * p.gpus, p)
    decode_s = float(np.clip(r["decode"] * t0 * cores.effective / n, 3e-4, 0.06))
    return sample_bytes, request_s, decode_s


def _solve_comm(r: dict[str, float], t0: float, overlap: float, board: Board, p: Placement, nodes: int) -> float:
    """Gradient bytes whose all-reduce takes the drawn share of the step beyond what backward hides."""
    per_byte = ring_factor(p.gpus) / (intra_link(board, p)[0] * GB)
    if nodes > 1:
        per_byte += ring_factor(nodes) / (inter_link(board, p) * GB)
    if per_byte == 0.0:
        return 2e8  # one GPU: nothing to reduce, the size only shows in memory
    want = r["comm"] * t0 + (overlap * t0 * 2.0 / 3.0 if r["comm"] > 1.0 else 0.0)
    return float(np.clip(want / per_byte, 2e7, 4e10))


def draw_workload(
    rng: np.random.Generator, intent: Bottleneck, sub: str, board: Board, p: Placement, nodes: int
) -> Workload:
    """A workload whose stage ratios on the first pod's placement lean toward the intent."""
    r = _ratios(rng, intent, sub)
    t0 = float(rng.uniform(0.02, 0.08) if sub == "launch" else rng.uniform(0.08, 0.6))
    samples = int(rng.choice((16, 32, 64, 128, 256)))
    few = intent is Bottleneck.CPU and rng.random() < 0.35
    workers = int(rng.integers(1, 4) if few else rng.integers(4, 13))
    sample_bytes, request_s, decode_s = _solve_input(rng, intent, r, t0, samples, workers, p)
    pinned = bool(rng.random() < (0.2 if sub == "pcie" else 0.7))
    tensor_bytes = float(np.clip(r["h2d"] * t0 * h2d_gbps(board, p, pinned) * GB / samples, 2e4, 6e7))
    launch_s = float(rng.uniform(4e-6, 12e-6))
    overlap = float(rng.uniform(0.2, 0.8))
    host_gb = float(8.0 + workers * p.gpus * rng.uniform(0.5, 2.5) + rng.uniform(2.0, 30.0))
    swap_gbps = float(rng.uniform(1.0, 3.0) if p.swap else rng.uniform(0.2, 0.8))
    overshoot = max(0.0, host_gb - 0.97 * p.mem_limit_gb * host_gb)
    churn = float(np.clip(r["host"] * t0 * swap_gbps / overshoot, 1e-3, 0.5)) if overshoot > 0 else 0.02
    return Workload(
        samples=samples,
        sample_bytes=sample_bytes,
        request_s=request_s,
        decode_s=decode_s,
        workers=workers,
        tensor_bytes=tensor_bytes,
        pinned=pinned,
        kernels=int(np.clip(r["launch"] * t0 / launch_s, 300, 200_000)),
        launch_s=launch_s,
        flops_s=t0,
        hbm_bytes=float(r["hbm"] * t0 * board.hbm_gbps * GB * HBM_PRACTICAL),
        grad_bytes=_solve_comm(r, t0, overlap, board, p, nodes),
        overlap=overlap,
        amp=bool(rng.random() < 0.8),
        host_gb=host_gb,
        churn=churn,
        swap_gbps=swap_gbps,
    )
