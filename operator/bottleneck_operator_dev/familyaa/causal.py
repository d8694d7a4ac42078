"""The structural equations: stage times per step from cluster and workload, and the label.

A step is the pipeline DESIGN.md describes. The loader (read, then decode/augment, in worker
processes) runs beside the device path (host-to-device copy, kernels, exposed gradient exchange);
host memory stalls (swap-in, reclaim) hold both up. So, per pod and regime::

    load = max(read, decode)                      # storage and cores are separate resources
    kern = compute + hbm                          # tensor-bound and bandwidth-bound kernels in turn
    dev  = h2d + max(launch, kern) + max(0, comm - overlap * 2/3 * kern)
    step = max(load, dev) + host_mem              # (load + dev + host_mem without loader workers)

and a data-parallel Job's step is its slowest pod's. The label is interventional: each stage in
turn is set to zero everywhere (do(stage = 0), every other equation held) and the mean step time
over the window's training regimes recomputed; the stage whose removal shortens it most names
the class and the mechanism.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.verdict import Bottleneck, Mechanism
from bottleneck_operator_dev.familyaa.hardware import BLOCK_STORAGE, GB, Cluster
from bottleneck_operator_dev.familyaa.workload import Workload

FloatArray = npt.NDArray[np.float64]

STAGES: tuple[str, ...] = ("read", "decode", "host_mem", "h2d", "compute", "hbm", "launch", "comm")
READ, DECODE, HOST_MEM, H2D, COMPUTE, HBM, LAUNCH, COMM = range(len(STAGES))
STAGE_CLASS: dict[int, Bottleneck] = {
    READ: Bottleneck.IO,
    DECODE: Bottleneck.CPU,
    HOST_MEM: Bottleneck.MEMORY,
    H2D: Bottleneck.INTERCONNECT,
    COMPUTE: Bottleneck.GPU,
    HBM: Bottleneck.MEMORY,
    LAUNCH: Bottleneck.GPU,
    COMM: Bottleneck.INTERCONNECT,
}

REGIMES: tuple[str, ...] = ("warmup", "steady", "eval", "checkpoint", "burst", "straggler")
WARMUP, STEADY, EVAL, CHECKPOINT, BURST, STRAGGLER = range(len(REGIMES))

HBM_PRACTICAL = 0.8  # TELEMETRY.md: ~0.8 DRAM activity is the practical peak
PAGE = 4096.0


@dataclass(frozen=True)
class Environment:
    """What happens around the Job in the window: the neighbour's and the straggler's effects.

    Attributes:
        burst_read: storage slow-down while a neighbour bursts (shared storage path).
        burst_cpu: share of the node's cores the bursting neighbour takes.
        burst_mem_gb: host memory the bursting neighbour takes, GB.
        burst_net_gbs: node network bytes/s the neighbour adds, GB/s.
        quiet_cpu: share of cores the neighbours take outside bursts.
        straggler_pod: the pod whose boards slow in the straggler regime.
        straggler_slow: its kernels' slow-down factor (thermal or clock events; assumed 1.2-1.7).
    """

    burst_read: float
    burst_cpu: float
    burst_mem_gb: float
    burst_net_gbs: float
    quiet_cpu: float
    straggler_pod: int
    straggler_slow: float


def draw_environment(rng: np.random.Generator, cluster: Cluster) -> Environment:
    shared = cluster.shared
    return Environment(
        burst_read=float(rng.uniform(1.3, 3.0)) if shared else 1.0,
        burst_cpu=float(rng.uniform(0.3, 0.8)) if shared else 0.0,
        burst_mem_gb=float(cluster.node_mem_gb * rng.uniform(0.2, 0.6)) if shared else 0.0,
        burst_net_gbs=float(rng.uniform(0.1, 2.0)) if shared else 0.0,
        quiet_cpu=float(rng.uniform(0.05, 0.3)) if shared else 0.0,
        straggler_pod=int(rng.integers(cluster.pods)),
        straggler_slow=float(rng.uniform(1.2, 1.7)),
    )


def peak_tflops(cluster: Cluster, workload: Workload) -> float:
    """The peak a compute-bound kernel of this precision aims at (TF32 falls back to FP32 pipes on V100/T4)."""
    gpu = cluster.gpu
    if workload.precision in ("bf16", "fp16"):
        return gpu.half_tflops
    if workload.precision == "tf32" and gpu.tf32_tflops:
        return gpu.tf32_tflops
    return gpu.fp32_tflops


def power_clock_factor(cluster: Cluster, workload: Workload) -> float:
    """The clock a power cap leaves: dynamic power ~ f^2.5 (voltage tracks frequency; assumed exponent).

    A tensor-heavy kernel draws about TDP at full clock (assumed); a cap below it lowers the clock.
    """
    gpu = cluster.gpu
    heavy = 1.0 if workload.precision in ("bf16", "fp16", "tf32") else 0.8
    demand = gpu.idle_w + (gpu.tdp_w - gpu.idle_w) * heavy * workload.fill
    if demand <= cluster.power_cap_w:
        return 1.0
    return float(((cluster.power_cap_w - gpu.idle_w) / (demand - gpu.idle_w)) ** 0.4)


@dataclass(frozen=True)
class Stages:
    """Stage seconds per step, shape (regimes, pods, stages), with what the step composes from them."""

    times: FloatArray
    overlap: float
    sync_loader: bool
    intra_comm: float
    inter_comm: float
    decode_cores: float
    clock: FloatArray  # (regimes, pods): SM clock factor


def cores_for_decode(cluster: Cluster, workload: Workload, neighbour_cpu: float) -> float:
    """Cores the loader can use: its workers, within the pod's limit or what neighbours leave."""
    per = cluster.gpus_per_pod
    workers = per * max(workload.workers, 1)
    ceiling = cluster.cpu_limit if cluster.cpu_limit > 0 else cluster.node_cpus * (1.0 - neighbour_cpu)
    ceiling -= 0.3 * per  # the training processes' own threads
    return float(max(min(workers, ceiling), 0.25))


def host_mem_stall(cluster: Cluster, workload: Workload, neighbour_gb: float) -> float:
    """Seconds per step lost to swap-in and reclaim when the working set overruns its memory.

    Pages faulted per step = overrun share x hot bytes touched per step / 4 KiB (0.2 % of the working
    set touched per step, assumed); each costs ~80 us from disk swap, ~10 us from zram, ~50 us to
    refault a reclaimed file page without swap (assumed, in line with device latencies).
    """
    room = cluster.mem_limit_gb if cluster.mem_limit_gb > 0 else cluster.node_mem_gb - neighbour_gb
    room = max(room, 1.0)
    overrun = max(workload.ws_gb / room - 1.0, 0.0)
    if overrun <= 0:
        return 0.0
    faults = min(overrun, 1.0) * 0.002 * workload.ws_gb * GB / PAGE
    latency = 50e-6 if not cluster.swap else 30e-6
    return float(faults * latency / 4.0)  # four faulting threads in parallel (assumed)


def build_stages(cluster: Cluster, workload: Workload, env: Environment) -> Stages:
    """The stage times of every regime and pod: the structural equations of the module docstring."""
    per, gpu = cluster.gpus_per_pod, cluster.gpu
    b = workload.batch
    read = per * b * workload.read_bytes / (cluster.storage_gbs * GB)
    cores = cores_for_decode(cluster, workload, env.quiet_cpu)
    decode = per * b * workload.cpu_s / cores
    host_mem = host_mem_stall(cluster, workload, 0.0)
    eff = 0.8 if cluster.pinned else 0.4  # pageable copies stage through a bounce buffer (assumed)
    h2d = b * workload.device_bytes / (gpu.pcie_gbs * GB * eff) * (0.15 if cluster.pinned else 1.0)
    clock_cap = power_clock_factor(cluster, workload)
    compute_full = b * workload.gflop * 1e9 / (peak_tflops(cluster, workload) * 1e12 * workload.compute_eff)
    shard = cluster.gpus if workload.params > 1e9 else 1
    hbm = (b * workload.hbm_bytes + 16.0 * workload.params / shard) / (gpu.hbm_gbs * GB * HBM_PRACTICAL)
    launch = workload.kernels * workload.launch_us * 1e-6
    grad = workload.params * (2.0 if workload.precision in ("bf16", "fp16") else 4.0)
    link = gpu.nvlink_gbs if gpu.nvlink_gbs else gpu.pcie_gbs * 0.5  # P2P through the host bridge
    intra = 2.0 * (per - 1) / per * grad / (link * GB * 0.8) if per > 1 else 0.0
    pods = cluster.pods
    inter = 2.0 * (pods - 1) / pods * grad / (cluster.nic_gbs * GB * 0.8) if pods > 1 else 0.0

    n_r = len(REGIMES)
    times = np.zeros((n_r, pods, len(STAGES)))
    clock = np.ones((n_r, pods))
    for p in range(pods):
        k = clock_cap * cluster.board_spread[p]
        base = np.array([read, decode, host_mem, h2d, compute_full / k, hbm, launch, intra + inter])
        times[:, p, :] = base
        clock[:, p] = k
    # Warm-up: cold caches, autotuning and compilation (assumed factors).
    times[WARMUP] *= np.array([1.6, 1.0, 1.0, 1.0, 1.4, 1.2, 1.5, 1.0])
    # Evaluation: forward only, no augmentation, no gradient exchange.
    times[EVAL] *= np.array([1.0, 0.5, 1.0, 1.0, 0.33, 0.4, 0.35, 0.0])
    # A neighbour's burst: shared storage slower, fewer cores, less host memory.
    burst_cores = cores_for_decode(cluster, workload, min(env.quiet_cpu + env.burst_cpu, 0.95))
    times[BURST, :, READ] *= env.burst_read
    times[BURST, :, DECODE] = per * b * workload.cpu_s / burst_cores
    times[BURST, :, HOST_MEM] = host_mem_stall(cluster, workload, env.burst_mem_gb)
    # A straggling peer: one pod's boards slow (clock events); the others wait for it.
    if pods > 1:
        s = env.straggler_pod
        times[STRAGGLER, s, COMPUTE] *= env.straggler_slow
        times[STRAGGLER, s, HBM] *= env.straggler_slow
        clock[STRAGGLER, s] /= env.straggler_slow
    return Stages(
        times=times,
        overlap=workload.overlap,
        sync_loader=workload.workers == 0,
        intra_comm=intra,
        inter_comm=inter,
        decode_cores=cores,
        clock=clock,
    )


def pod_steps(times: FloatArray, overlap: float, sync_loader: bool) -> FloatArray:
    """Each pod's own step time, shape ``times.shape[:-1]`` (the equations of the module docstring)."""
    load = np.maximum(times[..., READ], times[..., DECODE])
    kern = times[..., COMPUTE] + times[..., HBM]
    exposed = np.maximum(times[..., COMM] - overlap * (2.0 / 3.0) * kern, 0.0)
    dev = times[..., H2D] + np.maximum(times[..., LAUNCH], kern) + exposed
    both = load + dev if sync_loader else np.maximum(load, dev)
    out: FloatArray = both + times[..., HOST_MEM]
    return out


def job_steps(times: FloatArray, overlap: float, sync_loader: bool) -> FloatArray:
    """The Job's step per regime: synchronous data parallelism waits for the slowest pod."""
    out: FloatArray = pod_steps(times, overlap, sync_loader).max(axis=-1)
    return out


def _mean_steps(times: FloatArray, overlap: float, sync_loader: bool, weights: FloatArray) -> FloatArray:
    """Mean step seconds over the training regimes for a stack of stage tables (..., R, P, S)."""
    w = weights.copy()
    w[CHECKPOINT] = 0.0  # no steps run while the checkpoint is written
    if w.sum() <= 0:
        w[STEADY] = 1.0
    out: FloatArray = (job_steps(times, overlap, sync_loader) * w).sum(axis=-1) / w.sum()
    return out


def mean_step(times: FloatArray, overlap: float, sync_loader: bool, weights: FloatArray) -> float:
    """Mean step seconds over the training regimes, weighted by the window's time in each."""
    return float(_mean_steps(times, overlap, sync_loader, weights))


def intervention_gains(stages: Stages, weights: FloatArray) -> FloatArray:
    """Seconds per step each do(stage = 0) saves, one per stage (all interventions in one pass)."""
    n = len(STAGES)
    stack = np.broadcast_to(stages.times, (n + 1, *stages.times.shape)).copy()
    for k in range(n):
        stack[k + 1, ..., k] = 0.0
    means = _mean_steps(stack, stages.overlap, stages.sync_loader, weights)
    gains: FloatArray = means[0] - means[1:]
    return gains


def label_stage(stages: Stages, weights: FloatArray) -> int:
    """The stage whose removal shortens the mean step most (the first on an exact tie)."""
    return int(np.argmax(intervention_gains(stages, weights)))


def mechanism_of(stage: int, cluster: Cluster, workload: Workload, stages: Stages) -> Mechanism:
    """How the labelled stage limits the Job, in the contract's mechanisms."""
    if stage == READ:
        return Mechanism.LOCAL_DISK if cluster.storage in BLOCK_STORAGE | {"cache"} else Mechanism.NETWORK_STORAGE
    if stage == DECODE:
        wanted = cluster.gpus_per_pod * max(workload.workers, 1)
        if cluster.cpu_limit > 0 and cluster.cpu_limit < wanted + 0.3 * cluster.gpus_per_pod:
            return Mechanism.THROTTLED
        if stages.decode_cores >= wanted - 1e-9 and wanted < cluster.node_cpus * 0.7:
            return Mechanism.TOO_FEW_WORKERS
        return Mechanism.SATURATED
    if stage == HOST_MEM:
        return Mechanism.HOST_MEMORY_PRESSURE
    if stage == HBM:
        return Mechanism.HBM_BANDWIDTH
    if stage == H2D:
        return Mechanism.PCIE
    if stage == LAUNCH:
        return Mechanism.LAUNCH_BOUND
    if stage == COMM:
        if stages.inter_comm >= stages.intra_comm:
            return Mechanism.NETWORK
        return Mechanism.NVLINK if cluster.gpu.nvlink_gbs else Mechanism.PCIE
    return Mechanism.COMPUTE
