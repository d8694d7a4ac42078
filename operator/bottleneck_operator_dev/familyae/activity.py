"""What the hardware does per slice, from the step account: busy shares, bytes moved, cores burnt.

Everything an exporter reports follows from the per-slice stage times: a GPU runs kernels for its
math and memory time and for the all-reduce that is not hidden, its copy engine for the host copy;
bytes move at the step's pace; a DataLoader worker spends each sample waiting on storage, decoding
and stalling on memory, in proportion to those stages.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator_dev.familyae.stages import OBJECT_BYTES_PER_CORE_S, Arr, exposed_comm, gpu_side
from bottleneck_operator_dev.familyae.timeline import Timeline
from bottleneck_operator_dev.familyae.workload import JobConfig, precision_factors


@dataclass(frozen=True)
class Activity:
    """One pod's activity per slice (GPU figures per GPU, before per-GPU clock spread).

    Attributes:
        step: seconds per step.
        active: 1 while training, 0 in a checkpoint.
        samples_ps: samples the pod trains per second.
        f_math, f_hbm, f_exposed, f_comm, f_h2d: share of wall time a GPU spends in math kernels,
            memory-bound kernels, exposed all-reduce, all-reduce in total, and host copies.
        fill: share of the SMs the compute kernels occupy (small batches fill fewer).
        tensor_in_math: tensor-pipe activity while math kernels run (0 for FP32 on CUDA cores).
        h2d_bps: host-to-device bytes per second per GPU.
        intra_bps: intra-pod all-reduce bytes per second per GPU and direction.
        net_bps: inter-pod all-reduce bytes per second per pod and direction.
        read_bps, read_ops_ps: the pod's storage reads.
        p_io, p_cpu, p_cpu_wait, p_stall: share of worker time waiting on storage, decoding,
            waiting for a core, and stalled on memory.
        loader_cores: cores the workers burn.
        faults_ps: memory faults (swap-ins or refaults) per second.
        rank_busy: share of time the training processes spin on the GPU side.
        workers: DataLoader worker processes in the pod (the training processes when there are none).
        burst: how much a ~1 s sample of a GPU ratio swings (0 for steps far shorter than a second).
    """

    step: Arr
    active: Arr
    samples_ps: Arr
    f_math: Arr
    f_hbm: Arr
    f_exposed: Arr
    f_comm: Arr
    f_h2d: Arr
    fill: float
    tensor_in_math: float
    h2d_bps: Arr
    intra_bps: Arr
    net_bps: Arr
    read_bps: Arr
    read_ops_ps: Arr
    p_io: Arr
    p_cpu: Arr
    p_cpu_wait: Arr
    p_stall: Arr
    loader_cores: Arr
    faults_ps: Arr
    rank_busy: Arr
    workers: int
    burst: Arr


def _fill(cfg: JobConfig) -> float:
    work = cfg.batch * (cfg.size**2 / 224.0**2 if cfg.model.family == "vision" else cfg.size / 256.0)
    return float(min(1.0, (work / 32.0) ** 0.35))


def _tensor_in_math(cfg: JobConfig, fill: float) -> float:
    """Tensor-pipe activity during math kernels: about the achieved share of the tensor peak."""
    if cfg.precision == "fp32" or (cfg.precision == "tf32" and cfg.gpu.tf32_tflops == 0):
        return 0.0
    eff, _ = precision_factors(cfg.gpu, cfg.precision, cfg.mm_eff)
    return float(min(0.9, 1.3 * eff * fill + 0.1))


def _worker_shares(cfg: JobConfig, tl: Timeline, samples_ps: Arr, workers: int) -> dict[str, Arr]:
    t = tl.terms
    decode = cfg.decode_s + (cfg.read_bytes / OBJECT_BYTES_PER_CORE_S if cfg.storage.kind == "object" else 0.0)
    contention = np.maximum(t.cpu_cap / np.maximum(t.dec, 1e-12), 1.0)  # wall time per core-second
    p_io = samples_ps * cfg.read_ops * cfg.storage.lat_s / workers
    p_cpu = samples_ps * decode / workers
    p_stall = samples_ps * cfg.fault_pages * cfg.fault_lat_s / workers
    p_wait = p_cpu * (contention - 1.0)
    total = np.maximum(p_io + p_cpu + p_wait + p_stall, 1.0)
    return {
        "p_io": p_io / total,
        "p_cpu": p_cpu / total,
        "p_cpu_wait": p_wait / total,
        "p_stall": p_stall / total,
        "loader_cores": samples_ps * decode,
    }


def build_activity(cfg: JobConfig, tl: Timeline) -> Activity:
    """One pod's activity per slice."""
    t, step = tl.terms, tl.step
    active = np.where(tl.paused, 0.0, 1.0)
    training = active * np.where(tl.evaluating, 0.0, 1.0)
    n = cfg.batch * cfg.gpus_per_pod
    samples_ps = n / step * active
    g, p = cfg.gpus_per_pod, cfg.pods
    intra_step = 2.0 * (g - 1) / g * cfg.grad_bytes if g > 1 else 0.0
    net_step = 2.0 * (p - 1) / p * cfg.grad_bytes if p > 1 else 0.0
    workers = max(cfg.workers * g, 1)
    fill = _fill(cfg)
    return Activity(
        step=step,
        active=active,
        samples_ps=samples_ps,
        f_math=t.math / step * active,
        f_hbm=t.hbm / step * active,
        f_exposed=exposed_comm(t) / step * training,
        f_comm=t.comm / step * training,
        f_h2d=t.h2d / step * active,
        fill=fill,
        tensor_in_math=_tensor_in_math(cfg, fill),
        h2d_bps=cfg.batch * cfg.h2d_bytes / step * active,
        intra_bps=intra_step / step * training,
        net_bps=net_step / step * training,
        read_bps=samples_ps * cfg.read_bytes,
        read_ops_ps=samples_ps * cfg.read_ops,
        faults_ps=samples_ps * cfg.fault_pages,
        rank_busy=np.clip(gpu_side(t) / step, 0.05, 1.0) * active + 0.1 * (1.0 - active),
        workers=workers,
        burst=np.clip(step / (step + 1.0), 0.0, 1.0) * active,
        **_worker_shares(cfg, tl, samples_ps, workers),
    )
