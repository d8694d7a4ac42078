"""Per-stage costs of one step, from the drawn Job and the counterfactual knobs.

The loop (:mod:`.loop`) only sequences these costs in time; everything physical (the roofline, the
link rates, the CPU share a worker gets, the memory stall) is worked out here, once per run, so a
counterfactual is the same computation with one stage made ample.
"""

from __future__ import annotations

from dataclasses import dataclass

from bottleneck_operator_dev.familyak.hardware import GB, PCIE_GBS
from bottleneck_operator_dev.familyak.spec import JobSpec

# Matmuls reach at most this share of the tensor peak (modelling choice, docs/familyak.md).
MATMUL_EFFICIENCY = 0.7
# Non-tensor pipes run at 1/16 of the dense tensor rate (A100: 19.5 FP32 against 312 TFLOPS, datasheet).
NON_TENSOR_RATIO = 1.0 / 16.0
# DRAM activity ~0.8 is the practical maximum (TELEMETRY.md, "Reading the profiling metrics").
HBM_PRACTICAL = 0.8
# Pinned, non_blocking copies run near the link rate; pageable ones stage through a bounce buffer.
PINNED_EFFICIENCY, PAGEABLE_EFFICIENCY = 0.8, 0.35
# NCCL over TCP sockets loses more to the stack than over RDMA.
TCP_EFFICIENCY, RDMA_EFFICIENCY = 0.6, 0.9
OOM_RESTART_S = 60.0
AMPLE_WORKERS = 64  # "as many workers as needed" in the CPU counterfactual  # a killed trainer's container restarts and reloads its checkpoint


@dataclass(frozen=True)
class Knobs:
    """Which stage a counterfactual run makes ample (all False: the Job as drawn)."""

    io: bool = False
    cpu: bool = False
    workers: bool = False
    pcie: bool = False
    intra: bool = False
    network: bool = False
    compute: bool = False
    launch: bool = False
    hbm: bool = False
    hostmem: bool = False


@dataclass(frozen=True)
class StageCosts:
    """One rank's costs per step (seconds unless named otherwise), per pod where they differ."""

    workers: int
    queue: int
    read_lat: float  # per batch: request latency over the in-flight requests
    read_bw_rank: float  # bytes/s of storage this rank gets
    batch_bytes: float
    decode: float  # core-seconds per batch, at full speed
    collate: float
    faults: float  # the main process's seconds per step faulting its own pages back (swap, reclaim)
    h2d: float
    h2d_blocking: bool
    launch: float
    kernels: tuple[float, ...]  # per pod: forward + backward + optimizer kernel time
    backward_share: float
    intra: float
    inter: float
    overlap: float
    speed: float  # share of a core each busy loader process gets (CFS quota, node cores, neighbours)
    mem_stall: float  # share of CPU time lost to reclaim and swap-in
    oom_period: float  # seconds between OOM kills, inf when none


def memory_state(spec: JobSpec, knobs: Knobs) -> tuple[float, float]:
    """(stall share of CPU work, seconds between OOM kills) from the pod's memory against its limit.

    Anonymous memory beyond ~90 % of the limit makes the kernel reclaim page cache and, with swap,
    swap out anonymous pages that the workers then fault back in (stalls); without swap, growth up to
    the limit ends in an OOM kill, and the container restarts.
    """
    h = spec.host
    if knobs.hostmem or h.mem_limit is None:
        return 0.0, float("inf")
    anon = h.anon_base + spec.gpus * spec.loader.workers * h.worker_rss
    rho = anon / h.mem_limit
    stall = 0.0
    if rho > 0.9:
        stall = min(0.9, (rho - 0.9) / 0.25) if h.swap else min(0.3, 3.0 * (rho - 0.9))
    oom = float("inf")
    if not h.swap and h.growth_bps > 0:
        oom = max(60.0, (h.mem_limit - min(anon, 0.97 * h.mem_limit)) / h.growth_bps)
    return stall, oom


def _gpu_kernel_time(spec: JobSpec, knobs: Knobs, clock: float) -> float:
    """The roofline: each kernel group takes the longer of its math time and its HBM time."""
    b, m = spec.board, spec.model
    peak = b.tflops * 1e12 * (1.0 if m.amp else b.fp32_ratio) * clock * m.sm_fill
    hbm = b.hbm_gbs * GB * HBM_PRACTICAL
    mm_math = 0.0 if knobs.compute else m.matmul_flops / (peak * MATMUL_EFFICIENCY)
    mm_mem = 0.0 if knobs.hbm else m.matmul_flops / m.matmul_ai / hbm
    el_math = 0.0 if knobs.compute else m.elem_bytes * m.elem_ai / (b.tflops * 1e12 * NON_TENSOR_RATIO * clock)
    el_mem = 0.0 if knobs.hbm else m.elem_bytes / hbm
    return max(mm_math, mm_mem) + max(el_math, el_mem)


def _comm_times(spec: JobSpec, knobs: Knobs) -> tuple[float, float]:
    """Ring all-reduce: 2(n-1)/n of the gradient bytes cross each GPU's (each node's) link."""
    g, p, grad = spec.gpus, spec.pods, spec.model.grad_bytes
    intra = 0.0
    if g > 1 and not knobs.intra:
        per_dir = (
            spec.board.nvlink_gbs / 2 * GB * 0.8 if spec.board.nvlink_gbs else PCIE_GBS[spec.board.pcie_gen] * GB * 0.6
        )
        intra = 2 * (g - 1) / g * grad / per_dir
    inter = 0.0
    if p > 1 and not knobs.network:
        eff = RDMA_EFFICIENCY if spec.fabric.rdma else TCP_EFFICIENCY
        inter = 2 * (p - 1) / p * grad / (spec.fabric_gbps / 8 * GB * eff)
    return intra, inter


def stage_costs(spec: JobSpec, knobs: Knobs, worker_busy: float = 1.0) -> StageCosts:
    """The costs of one rank's step under ``knobs``.

    Args:
        spec: the Job.
        knobs: stages made ample.
        worker_busy: share of time a worker was busy in the previous pass (how many compete for cores).
    """
    ld, h = spec.loader, spec.host
    avail = (h.cpu_limit if h.cpu_limit is not None else max(1.0, h.node_cpus - h.neighbour_cpus)) / spec.gpus
    workers = ld.workers
    if knobs.cpu:  # ample cores, and as many workers as the batch could use
        workers, avail = max(workers, AMPLE_WORKERS), 1e6
    elif knobs.workers:  # more workers on the same cores
        workers = max(workers, int(avail))
    # The storage sees as many requests in flight as drawn: more workers split them, not add to them.
    in_flight = ld.concurrency * max(1, ld.workers) / max(1, workers)
    stall, oom = memory_state(spec, knobs)
    miss = max(1e-3, 1.0 - ld.cache_hit)  # page-cache hits cost no storage time
    slow = 1.0 / (1.0 - stall)  # reclaim and swap-in stretch the workers' decoding and reading
    batch_bytes = ld.batch * ld.sample_bytes
    pcie = PCIE_GBS[spec.board.pcie_gen] * GB * (PINNED_EFFICIENCY if ld.pinned else PAGEABLE_EFFICIENCY)
    intra, inter = _comm_times(spec, knobs)
    clock = _power_clock(spec)
    return StageCosts(
        workers=workers,
        queue=max(1, workers * ld.prefetch),
        read_lat=0.0 if knobs.io else miss * ld.batch / ld.per_request * ld.latency_s / in_flight * slow,
        read_bw_rank=1e18 if knobs.io else ld.storage_gbs * GB / spec.gpus / slow / miss,
        batch_bytes=batch_bytes,
        decode=(ld.batch * ld.decode_s + ld.client_cpu_per_gb * batch_bytes / GB) * slow,
        collate=ld.collate_s,
        faults=h.touch_s * (slow - 1.0),
        h2d=0.0 if knobs.pcie else ld.batch * ld.h2d_bytes / pcie,
        h2d_blocking=not ld.pinned,
        launch=0.0 if knobs.launch else spec.model.kernels * spec.model.launch_s,
        kernels=tuple(_gpu_kernel_time(spec, knobs, c * clock) for c in spec.clock_spread),
        backward_share=spec.model.backward_share,
        intra=intra,
        inter=inter,
        overlap=spec.model.overlap,
        speed=min(1.0, avail / (workers * worker_busy + 1.0)),
        mem_stall=stall,
        oom_period=oom,
    )


def _power_clock(spec: JobSpec) -> float:
    """SM clock share under the enforced power limit: power grows faster than the clock near the cap."""
    return float(min(1.0, spec.power_cap**0.6))
