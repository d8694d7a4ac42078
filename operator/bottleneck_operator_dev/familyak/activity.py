"""What each simulated step did, in the units the exporters count: bytes, seconds, faults, periods.

Every quantity is per pod and per step of the base run (shape ``(pods, steps)``). The GPU ones are
per GPU (dcgm-exporter reports each GPU; the pod's GPUs run the same step), the rest per pod or per
node (one pod of the Job per node). Time-shares are "busy seconds": a gauge over a period is the
busy seconds in that period over its length.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from bottleneck_operator_dev.familyak.draws import power_clock
from bottleneck_operator_dev.familyak.hardware import GB, PCIE_GBS
from bottleneck_operator_dev.familyak.loop import LoopRun
from bottleneck_operator_dev.familyak.spec import JobSpec
from bottleneck_operator_dev.familyak.stages import NON_TENSOR_RATIO

FloatArray = npt.NDArray[np.float64]
CFS_PERIOD_S = 0.1  # the kernel's default cpu.max period (100000 us)
READAHEAD_BYTES = 128 * 1024.0  # a memory-mapped read faults in one readahead window at a time


def _gpu(spec: JobSpec, run: LoopRun) -> dict[str, FloatArray]:
    """Per GPU: kernel, SM, tensor, DRAM and non-tensor pipe busy seconds, from the roofline's work."""
    m, b = spec.model, spec.board
    ratio = run.kernel / np.maximum(run.kernel.mean(axis=1, keepdims=True), 1e-12)
    clock = np.asarray(spec.clock_spread)[:, None] * power_clock(spec.power_cap)
    tensor_used = m.amp or b.fp32_ratio >= 0.5  # TF32 runs on tensor cores; V100/T4 FP32 does not
    tensor = (m.matmul_flops / (b.tflops * 1e12 * clock) if tensor_used else 0.0) * ratio
    other = m.elem_bytes * m.elem_ai + (0.0 if tensor_used else m.matmul_flops)
    pipes = other / (b.tflops * 1e12 * NON_TENSOR_RATIO * clock) * ratio
    dram = (m.matmul_flops / m.matmul_ai + m.elem_bytes) / (b.hbm_gbs * GB) * ratio
    comm = run.gpu_busy - run.kernel
    return {
        "busy": run.gpu_busy,
        "sm": run.kernel * m.sm_fill + comm * 0.1,  # NCCL kernels occupy a few SMs
        "occ": (run.kernel * m.sm_fill) * m.occupancy,
        "tensor": np.minimum(tensor, run.kernel),
        "fp16": np.minimum(pipes, run.kernel) * (1.0 if m.amp else 0.1),
        "fp32": np.minimum(pipes, run.kernel) * (0.3 if m.amp else 1.0),
        "dram": np.minimum(dram, run.kernel),
    }


def _links(spec: JobSpec, shape: tuple[int, int]) -> dict[str, FloatArray]:
    """Bytes per step: PCIe per GPU (copies, peer traffic, GPUDirect RDMA), NVLink per GPU, the node's fabric."""
    ld, m, g, p = spec.loader, spec.model, spec.gpus, spec.pods
    h2d = ld.batch * ld.h2d_bytes
    ring = 2 * (g - 1) / g * m.grad_bytes if g > 1 else 0.0
    inter = 2 * (p - 1) / p * m.grad_bytes if p > 1 else 0.0
    nvlink = ring if spec.board.nvlink_gbs else 0.0
    p2p = 0.0 if spec.board.nvlink_gbs else ring
    rdma = inter / g if spec.fabric.rdma else 0.0  # GPUDirect RDMA: symmetric PCIe RX and TX on each GPU
    ones = np.ones(shape)
    return {
        "pcie_rx": ones * (h2d + p2p + rdma),
        "pcie_tx": ones * (0.01 * h2d + p2p + rdma),
        "nvlink": ones * nvlink,
        "ib": ones * (inter if spec.fabric.rdma else 0.0),
        "tcp": ones * (0.0 if spec.fabric.rdma else inter),
    }


def _durations(run: LoopRun) -> FloatArray:
    return np.diff(run.ends, prepend=0.0)[None, :] * np.ones_like(run.kernel)


def _storage(spec: JobSpec, run: LoopRun) -> dict[str, FloatArray]:
    """The pod's reads per step: where they show (block device, NFS over the node, HTTP in the pod)."""
    ld, g = spec.loader, spec.gpus
    shape = run.kernel.shape
    read = np.ones(shape) * g * ld.batch * ld.sample_bytes * (1.0 - ld.cache_hit)
    local, nfs, http = ld.storage.local, ld.storage.value == "nfs", ld.storage.value == "object-store"
    request = max(ld.sample_bytes * ld.per_request, 4096.0)
    mmap = local and spec.workload in ("transformer", "recsys")  # sharded arrays read through mmap
    d_state = g * run.read if ld.storage.blocks_in_d_state else np.zeros(shape)
    # the device is busy while a request is in flight: bytes over its rate, plus per-request latency
    busy = (read / (ld.storage_gbs * GB) * 1.1 + read / request * ld.latency_s * 0.2) * local
    return {
        "disk": read * local,
        "disk_busy": np.minimum(busy, 0.98 * _durations(run)),
        "disk_ops": read * local / min(request, READAHEAD_BYTES if mmap else request),
        "nfs": read * nfs * 1.04,  # RPC and TCP overhead on the wire
        "http": read * http * 1.03,
        "mmap_faults": read / READAHEAD_BYTES * mmap,
        "d_state": d_state,
    }


def _cpu(spec: JobSpec, run: LoopRun, dur: FloatArray, spin: bool) -> dict[str, FloatArray]:
    """Core-seconds the pod's processes use, and the CFS periods they were throttled in."""
    ld, h, c, g = spec.loader, spec.host, run.costs, spec.gpus
    work = ld.batch * ld.decode_s + ld.client_cpu_per_gb * ld.batch * ld.sample_bytes / GB
    main = c.collate + c.launch + (np.maximum(0.0, dur - c.collate - c.launch) if spin else 0.0)
    faults = c.faults * 0.3  # the kernel's share of servicing faults is system time
    cap = (h.cpu_limit if h.cpu_limit is not None else h.node_cpus - h.neighbour_cpus) * dur
    cpu = np.minimum(g * (work + main + faults), 0.99 * cap)
    system = 0.08 * cpu + g * (faults + (0.4 * ld.client_cpu_per_gb * ld.batch * ld.sample_bytes / GB))
    periods = dur / CFS_PERIOD_S if h.cpu_limit is not None else 0.0 * dur  # CFS counts periods under a quota only
    throttled = np.zeros_like(cpu)
    if h.cpu_limit is not None:
        usage = cpu / np.maximum(dur, 1e-9) / h.cpu_limit
        bursty = np.clip((usage - 0.5) / 0.5, 0.0, 1.0) ** 2
        starved = run.worker_busy[:, None] * (c.speed < 0.999)
        throttled = periods * np.maximum(bursty, starved)
    waiting = np.maximum(0.0, 1.0 - c.speed) * run.worker_busy[:, None] * dur
    return {
        "cpu": cpu,
        "system": np.minimum(system, cpu),
        "periods": periods + 0.0 * cpu,
        "throttled": throttled,
        "cpu_wait": np.maximum(waiting, throttled * CFS_PERIOD_S * 0.5),
    }


def step_amounts(spec: JobSpec, run: LoopRun, spin: bool) -> dict[str, FloatArray]:
    """Every quantity the exporters count, per pod and per step of ``run``.

    Args:
        spec: the Job.
        run: its base loop run.
        spin: whether the main process busy-waits on the GPU (CUDA's default spin) or blocks.
    """
    dur = _durations(run)
    out: dict[str, FloatArray] = {"dur": dur}
    out.update(_gpu(spec, run))
    out.update(_links(spec, run.kernel.shape))
    out.update(_storage(spec, run))
    out.update(_cpu(spec, run, dur, spin))
    stall = run.costs.mem_stall
    io_some = 1.0 - np.exp(-out["d_state"] / np.maximum(dur, 1e-9))
    out["io_some"] = io_some * dur
    out["io_full"] = io_some * np.minimum(1.0, run.data_wait / np.maximum(dur, 1e-9)) * dur
    out["mem_some"] = np.full_like(dur, stall) * dur
    out["mem_full"] = np.full_like(dur, 0.7 * stall) * dur
    out["swapins"] = stall * 2.5e4 * dur * spec.host.swap
    out["majfaults"] = out["swapins"] + out["mmap_faults"]
    out["data_wait"] = run.data_wait
    out["copy"] = out["pcie_rx"] / (PCIE_GBS[spec.board.pcie_gen] * GB)
    # processes using 0.9 of a core or more: a spinning main process, and workers decoding without rest
    # (a worker waiting on storage sleeps: it is busy in the loop's sense, not on a core)
    ld = spec.loader
    work = ld.batch * ld.decode_s + ld.client_cpu_per_gb * ld.batch * ld.sample_bytes / GB
    per_worker = work / np.maximum(dur, 1e-9) / max(1, ld.workers)
    hot_workers = ld.workers * (np.minimum(per_worker, run.costs.speed) >= 0.9)
    # no more of them than the cores the pod gets
    out["busy_procs"] = np.minimum(spec.gpus * (float(spin) + hot_workers), np.floor(out["cpu"] / dur)) * dur
    return out
