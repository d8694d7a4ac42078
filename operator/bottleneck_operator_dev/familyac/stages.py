"""Mean event durations of one rank's step, from a drawn configuration and the hardware figures.

The timeline (``timeline.py``) jitters these per event and lets the dependencies decide what waits
for what; here only physics: bytes over bandwidths, FLOPs over peaks, CPU seconds over the cores
the cgroup's quota and the node's neighbours leave.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator_dev.familyac.hardware import (
    ADAM_BYTES_PER_PARAM,
    DDP_BUCKET_BYTES,
    FABRIC_EFFICIENCY,
    GB,
    HBM_PRACTICAL,
    LINK_PAYLOAD,
    STORAGE_LATENCY,
)
from bottleneck_operator_dev.familyac.workload import Config

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Stages:
    """One rank's mean event durations (seconds) and what the exporters need to know of them."""

    read_s: float  # one batch's read on its storage server
    read_servers: int  # 1: a shared device or mount; per worker for an object store
    read_bytes: float
    decode_s: float  # one batch's decode/augment on one worker, stretched by CPU contention
    worker_fault_s: float  # major-fault stalls of one batch on its worker
    collate_s: float
    main_fault_s: float
    h2d_s: float
    launch_s: float  # the host side of all the step's kernel launches
    math_s: float  # math-bound kernels of forward and backward
    mem_s: float  # HBM-bound kernels of forward and backward
    opt_s: float
    bucket_s: tuple[float, ...]  # all-reduce of each gradient bucket, in backward order
    comm_mech: str  # "nvlink", "pcie" or "network": the link that bounds the all-reduce
    oom_per_s: float
    restart_s: float
    cpu_stretch: float
    cpu_source: str  # "throttled", "saturated" or "" (nothing stretches the CPU)
    quota_stretch: float
    worker_demand: float  # cores one rank's workers want
    clocks: FloatArray  # per-GPU clock factor, all pods' GPUs in order
    pace: float  # the slowest GPU's clock factor (data parallel waits for it)
    capped: FloatArray  # per GPU: whether the power limit slows its clocks
    grad_bytes: float
    intra_bytes: float  # per step per GPU over NVLink or PCIe peer links
    inter_bytes: float  # per step per node over the NIC, each direction
    fault_latency: float


def _peak(cfg: Config) -> float:
    g = cfg.gpu
    if cfg.precision in ("bf16", "fp16"):
        return g.tensor_tflops * 1e12
    if cfg.precision == "tf32" and g.key not in ("V100-SXM2", "T4"):
        return g.tensor_tflops * 0.5e12
    return g.fp32_tflops * 1e12


def _clocks(cfg: Config, rng: np.random.Generator) -> tuple[FloatArray, FloatArray]:
    n = cfg.world
    spread = np.clip(rng.normal(1.0, cfg.clock_spread, n), 0.85, 1.05)
    g = cfg.gpu
    cap_w = cfg.power_cap * g.tdp_w
    demand = g.idle_w + (g.tdp_w - g.idle_w) * rng.uniform(0.85, 1.0, n)
    # Power scales roughly with f * V^2; the driver lowers clocks until draw fits the limit.
    ratio = np.clip((cap_w - g.idle_w) / np.maximum(demand - g.idle_w, 1.0), 0.3, 1.0)
    return spread * ratio**0.6, (ratio < 0.999).astype(np.float64)


def _comm(cfg: Config) -> tuple[tuple[float, ...], str, float, float, float]:
    grad = cfg.model.params * (2.0 if cfg.precision in ("bf16", "fp16") else 4.0)
    if cfg.world == 1:
        return (), "", grad, 0.0, 0.0
    r, n = cfg.ranks_per_node, cfg.nodes
    count = int(min(12, max(1, math.ceil(grad / DDP_BUCKET_BYTES))))
    b = grad / count
    if cfg.intra == "nvlink":
        bw_intra = cfg.gpu.nvlink_gbs * GB * LINK_PAYLOAD
    else:
        bw_intra = cfg.gpu.pcie_gbs * GB * cfg.p2p_share
    t_intra = 2 * (r - 1) / r * b / bw_intra if r > 1 else 0.0
    t_inter = 0.0
    if n > 1:
        bw_nic = cfg.nic_gbps / 8 * GB * FABRIC_EFFICIENCY[cfg.fabric]
        t_inter = 2 * (n - 1) / n * b / bw_nic + (2e-4 if cfg.fabric == "tcp" else 3e-5) * 2 * (n - 1)
    mech = "network" if t_inter >= t_intra else cfg.intra
    t = max(t_intra, t_inter) + 2e-5 * max(r - 1, 0)
    intra_bytes = 2 * (r - 1) / r * grad if r > 1 else 0.0
    inter_bytes = 2 * (n - 1) / n * grad if n > 1 else 0.0
    return tuple([t] * count), mech, grad, intra_bytes, inter_bytes


def _cpu(cfg: Config, decode_batch: float, main_s: float, step0: float) -> tuple[float, str, float, float]:
    """How much longer CPU work takes: the cgroup's quota or the node's other tenants."""
    want = min(float(cfg.workers), decode_batch / max(step0, 1e-6))
    main_share = min(1.0, main_s / max(step0, 1e-6))
    pod_demand = cfg.gpus_per_pod * (want + main_share + 0.2)
    quota = max(1.0, pod_demand / cfg.cpu_limit) if cfg.cpu_limit else 1.0
    node_demand = cfg.ranks_per_node * (want + main_share + 0.2) + cfg.neighbour_cores
    node = max(1.0, node_demand / cfg.node_cpus)
    stretch = max(quota, node)
    source = "" if stretch < 1.02 else ("throttled" if quota >= node else "saturated")
    return stretch, source, quota, want


def _memory(cfg: Config, rng: np.random.Generator) -> tuple[float, float, float]:
    """Pressure (0..1) when the working set wants more than the limit, its per-fault stall, OOM rate."""
    if cfg.mem_limit is None or cfg.mem_demand < 0.97 * cfg.mem_limit:
        return 0.0, 0.0, 0.0
    pressure = float(min(1.0, cfg.mem_demand / cfg.mem_limit - 0.97))
    latency = 1.5e-4 if cfg.swap else 8e-5
    oom = 0.0 if cfg.swap or pressure < 0.12 else float(pressure * rng.uniform(0.002, 0.01))
    return pressure, latency, oom


def build(cfg: Config, rng: np.random.Generator) -> Stages:
    """Mean durations of one rank's step events."""
    m, g = cfg.model, cfg.gpu
    batch = float(m.batch)
    clocks, capped = _clocks(cfg, rng)
    pace = float(clocks.min())
    fill = m.sm_fill * min(1.0, batch / 32.0) ** 0.3
    flops = batch * m.flops
    math_s = flops / (_peak(cfg) * rng.uniform(0.4, 0.65) * fill * pace)
    mem_s = flops / m.intensity / (g.hbm_gbs * GB * HBM_PRACTICAL)
    opt_s = m.params * ADAM_BYTES_PER_PARAM / (g.hbm_gbs * GB * HBM_PRACTICAL)
    kernels = m.kernels * (0.3 if cfg.compiled else 1.0)
    # No kernel runs shorter than a few microseconds (assumed 2-5 us): tiny models still occupy the GPU.
    floor = kernels * rng.uniform(2e-6, 5e-6)
    if math_s + mem_s < floor:
        math_s, mem_s = (math_s * floor / (math_s + mem_s), mem_s * floor / (math_s + mem_s))
    launch = kernels * cfg.launch_s
    collate = 1e-4 + batch * m.input_bytes / (8 * GB)  # pinning copy at ~8 GB/s (assumed)
    h2d = batch * m.input_bytes / (g.pcie_gbs * GB * LINK_PAYLOAD * cfg.h2d_share)
    buckets, mech, grad, intra, inter = _comm(cfg)
    read_bytes = batch * m.sample_bytes
    servers = cfg.workers if cfg.storage == "object" else 1
    share = 1.0 if cfg.storage == "object" else float(cfg.ranks_per_node)
    read_s = read_bytes / (cfg.storage_bw / share) + STORAGE_LATENCY[cfg.storage]
    decode0 = batch * m.decode_s
    step0 = max(math_s + mem_s + opt_s + sum(buckets) * 0.3, read_s / servers, launch + collate)
    stretch, source, quota, want = _cpu(cfg, decode0, collate + launch, step0)
    pressure, latency, oom = _memory(cfg, rng)
    k = rng.uniform(3.0, 8.0)
    return Stages(
        read_s=read_s,
        read_servers=servers,
        read_bytes=read_bytes,
        decode_s=decode0 * stretch,
        worker_fault_s=decode0 * pressure * k,
        collate_s=collate * stretch,
        main_fault_s=(collate + launch) * pressure * k * 0.5,
        h2d_s=h2d,
        launch_s=launch * stretch,
        math_s=math_s,
        mem_s=mem_s,
        opt_s=opt_s,
        bucket_s=buckets,
        comm_mech=mech,
        oom_per_s=oom,
        restart_s=float(rng.uniform(5.0, 20.0)),
        cpu_stretch=stretch,
        cpu_source=source,
        quota_stretch=quota,
        worker_demand=want,
        clocks=clocks,
        pace=pace,
        capped=capped,
        grad_bytes=grad,
        intra_bytes=intra,
        inter_bytes=inter,
        fault_latency=latency,
    )
