"""Each exporter's view of one pod's simulated activity: the mean level of every contract signal.

Levels are in the contract's units (signals.py): ratios, B/s, cores, W, MHz; counters are given as
their per-second rates (series.py integrates them). Each level follows from the stage times and the
placement with the exporter's own semantics: GPU_UTIL counts any kernel, NCCL's spinning ones
included; DRAM activity tops out near 0.8; RDMA bypasses netdev; cgroup io.stat sees block devices
only; object-store readers wait in socket receive, not in D state.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.verdict import Mechanism
from bottleneck_operator_dev.familyam.capacity import GB, MAIN_CORES, loader_cores, ring_factor
from bottleneck_operator_dev.familyam.hardware import Board, Placement
from bottleneck_operator_dev.familyam.stages import Stages
from bottleneck_operator_dev.familyam.workload import Workload

PAGE = 4096.0


@dataclass(frozen=True)
class PodCtx:
    """Everything one pod's telemetry follows from.

    Attributes:
        s: the pod's stage times; step: the Job's step (the slowest pod's).
        w, board, p: the workload, the board, the placement.
        nodes, total_gpus: the Job's size (peers wait in NCCL kernels for the slowest pod).
        clock: the pod's SM clock as a share of the board's maximum (spread and power cap).
        cap_w: the enforced power limit, W.
        fill: how fully kernels fill the SMs while they run.
        fb: framebuffer share the caching allocator holds.
    """

    s: Stages
    step: float
    w: Workload
    board: Board
    p: Placement
    nodes: int
    total_gpus: int
    clock: float
    cap_w: float
    fill: float
    fb: float


def _gpu(c: PodCtx) -> dict[str, float]:
    s, t = c.s, c.step
    wait = (t - s.step) if c.total_gpus > 1 else 0.0
    launch = s.launch + s.launch_cpu
    gaps = 0.6 * max(0.0, launch - s.gpu_time)  # dense tiny kernels: most 1/6 s periods see one
    busy = min(1.0, (s.gpu_time + s.comm + wait + gaps) / t)
    sm = min(1.0, (s.gpu_time * c.fill + (s.comm + wait) * 0.08) / t)
    tensor = s.flops / t * (0.6 if c.w.amp else 0.03)
    dram = min(0.82, c.w.hbm_bytes / (c.board.hbm_gbps * GB) / t + 0.01)
    demand_w = c.board.idle_w + (c.board.tdp_w - c.board.idle_w) * (0.25 * busy + 0.45 * sm + 0.3 * dram / 0.8)
    out = {
        "gpu_util": busy,
        "gr_engine_active": busy * 0.97,
        "sm_active": sm,
        "sm_occupancy": sm * (0.55 if s.hbm > s.flops else 0.3),
        "tensor_active": tensor,
        "fp16_active": 0.04 * sm if c.w.amp else 0.0,
        "fp32_active": 0.08 * sm if c.w.amp else min(1.0, s.flops / t * 0.7),
        "dram_active": dram,
        "mem_copy_util": min(1.0, dram * 1.15 + 0.02),
        "fb_used_frac": c.fb,
        "power_w": min(c.cap_w, demand_w),
        "power_limit_w": c.cap_w,
        "clock_slowdown_frac": float(np.clip((demand_w / c.cap_w - 0.97) * 20.0, 0.0, 1.0)),
        "sm_clock_mhz": c.board.max_clock_mhz * c.clock * (0.75 + 0.25 * min(1.0, busy * 1.3)),
        "xid_code": 0.0,
    }
    out.update(_gpu_links(c))
    return out


def _gpu_links(c: PodCtx) -> dict[str, float]:
    """Per-GPU PCIe and NVLink bytes: batches in, collectives through whichever path they take."""
    w, p, t = c.w, c.p, c.step
    intra = ring_factor(p.gpus) * w.grad_bytes / 2.0 / t  # per direction, per GPU
    inter = ring_factor(c.nodes) * w.grad_bytes / 2.0 / t / max(p.gpus, 1) if c.nodes > 1 else 0.0
    nvlink = intra if c.board.nvlink_gbps > 0 else 0.0
    # peer-to-peer over PCIe, and inter-node traffic that reaches the NIC over PCIe (GPUDirect
    # or staged through a host bounce buffer; TCP also copies through the host)
    pcie_coll = (intra - nvlink) + inter
    h2d = w.samples * w.tensor_bytes / t
    return {
        "pcie_rx_bps": h2d + pcie_coll + 2e5,
        "pcie_tx_bps": 0.02 * h2d + pcie_coll + 2e5,
        "nvlink_rx_bps": nvlink,
        "nvlink_tx_bps": nvlink,
        "nvlink_total_bps": 2.0 * nvlink,
    }


def _cpu(c: PodCtx) -> dict[str, float]:
    w, p, s, t = c.w, c.p, c.s, c.step
    cores = loader_cores(w.workers * p.gpus, p)
    decode = w.samples * p.gpus * w.decode_s / t
    reader = w.samples * p.gpus * w.sample_bytes / t / GB * (1.0 if p.storage == "object" else 0.2)
    main = 0.3 + (s.launch + s.launch_cpu) / t + (0.4 * s.host_mem / t)
    used = min(decode + reader + main, p.cpu_limit if p.cpu_limit is not None else p.node_cpus)
    throttled = 0.0
    if p.cpu_limit is not None:
        throttled = float(np.clip((used / p.cpu_limit - 0.7) / 0.3, 0.0, 1.0)) * 0.95 + 0.02
    busy_procs = cores.effective if cores.bound is Mechanism.TOO_FEW_WORKERS and s.decode >= s.io else 0.0
    return {
        "cpu_cores": used,
        "sc_cpu_cores": used,
        "cpu_throttled_frac": throttled,
        "sc_throttled_frac": throttled,
        "cpu_limit_cores": p.cpu_limit if p.cpu_limit is not None else float("nan"),
        "sc_psi_cpu_some": min(1.0, 0.7 * throttled + 0.5 * p.neighbour_cores / p.node_cpus * (decode > 0.5)),
        "sc_procs_running": min(decode + 1.0, w.workers * p.gpus + 1.0),
        "sc_procs_busy": busy_procs + (1.0 if s.launch + s.launch_cpu > s.gpu_time else 0.0),
        "node_cpus": float(p.node_cpus),
        "node_cpu_busy_frac": min(1.0, (used + p.neighbour_cores + MAIN_CORES) / p.node_cpus),
        "node_cpu_system_frac": min(1.0, 0.02 + 2.0 * s.host_mem / t * used / p.node_cpus),
        "node_psi_cpu_some": min(1.0, 0.05 + max(0.0, p.neighbour_cores + used - 0.8 * p.node_cpus) / p.node_cpus),
    }


def _io_mem(c: PodCtx) -> dict[str, float]:
    w, p, s, t = c.w, c.p, c.s, c.step
    read = w.samples * p.gpus * w.sample_bytes / t
    local = 0.0 if p.remote_storage else read
    waiting = min(1.0, s.io / t) if p.storage != "object" else 0.0  # object readers sleep in S state
    pressure = min(1.0, s.host_mem / t)
    limit = p.mem_limit_gb * GB
    swapin = max(0.0, w.host_gb - 0.97 * p.mem_limit_gb) * GB * w.churn / t / PAGE
    return {
        "fs_read_bps": local,
        "sc_io_read_bps": local,
        "node_disk_read_bps": local + 2e7 * p.neighbours,
        "node_disk_reads_ps": (local + 2e7 * p.neighbours) / 131072.0,
        "node_disk_busy_frac": min(1.0, (local / (p.storage_gbps * GB) if local else 0.01) * 1.2),
        "node_cpu_iowait_frac": min(1.0, waiting * w.workers * p.gpus * 0.5 / p.node_cpus),
        "sc_psi_io_some": waiting,
        "sc_psi_io_full": waiting * 0.5,
        "node_psi_io_some": waiting * 0.8,
        "node_psi_io_full": waiting * 0.3,
        "sc_procs_iowait": waiting * w.workers * p.gpus,
        "mem_working_set_bytes": min(w.host_gb * GB, 0.99 * limit),
        "mem_limit_bytes": limit,
        "sc_psi_mem_some": pressure,
        "sc_psi_mem_full": pressure * 0.6,
        "node_psi_mem_some": pressure * 0.5,
        "node_psi_mem_full": pressure * 0.25,
        "sc_swapin_ps": swapin if p.swap else 0.0,
        "sc_majfault_ps": swapin + 5.0,
        "node_majfault_ps": swapin + 20.0 + 50.0 * p.neighbours,
        "sc_oom_kills": (1.0 / 600.0) if pressure > 0 and not p.swap else 0.0,
        "node_mem_avail_frac": float(np.clip(0.6 - 0.4 * pressure, 0.05, 0.9)),
        "node_swap_used_frac": min(0.9, 0.1 + pressure) if p.swap and pressure > 0 else 0.0,
    }


def _net(c: PodCtx) -> dict[str, float]:
    """Fabric bytes: RDMA on node_infiniband_*, TCP (and remote storage) on netdev and the pod's interfaces."""
    w, p, t = c.w, c.p, c.step
    inter = ring_factor(c.nodes) * w.grad_bytes / 2.0 / t if c.nodes > 1 else 0.0
    storage = w.samples * p.gpus * w.sample_bytes / t if p.remote_storage else 0.0
    tcp = 0.0 if p.rdma else inter
    rdma = inter if p.rdma else 0.0
    noise = 1e6 + 5e6 * p.neighbours
    return {
        "ib_rx_bps": rdma,
        "ib_tx_bps": rdma,
        "node_net_rx_bps": tcp + storage + noise,
        "node_net_tx_bps": tcp + 0.02 * storage + noise,
        "sc_net_rx_bps": tcp + storage + 2e4,
        "sc_net_tx_bps": tcp + 0.02 * storage + 2e4,
    }


def levels(c: PodCtx) -> dict[str, float]:
    """Every contract signal's mean level for one pod (the families it belongs to are chosen later)."""
    out = _gpu(c)
    out.update(_cpu(c))
    out.update(_io_mem(c))
    out.update(_net(c))
    return out
