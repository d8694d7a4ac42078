"""A job's work in physical units, and the stage times (:class:`.stages.Plan`) it implies.

The mechanisms (:mod:`.mechanisms`) choose a workload; the telemetry (:mod:`.activity`) shows its
bytes, cores and kernel shares. Both sides read the same numbers, so what an exporter shows is
always what the step model says the job does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator_dev.familyd.hardware import GB, PCIE_BPS
from bottleneck_operator_dev.familyd.stages import FloatArray, Plan
from bottleneck_operator_dev.familyd.world import Setup


@dataclass(frozen=True)
class Workload:
    """What one step of the job moves and computes (per-pod arrays of shape (pods,)).

    Attributes:
        read_bytes: bytes each pod reads from storage per step.
        read_bps: what storage delivers to the pod, bytes/s.
        io_kind: "nvme", "sata", "cloud-volume", "iomax", "mmap", "nfs", "object-store".
        cpu_work: core-seconds of decoding/augmentation per step per pod.
        loader_cores: cores the pod's loader workers can use.
        workers: loader processes per pod.
        main_cores: cores each training process (one per GPU) burns while it drives its GPU.
        math_s: math-bound kernel seconds per step at the boost clock.
        hbm_s: HBM-bound kernel seconds per step.
        h2d_bytes: bytes copied host to device per GPU per step.
        h2d_bps: one GPU's usable host-to-device bandwidth (pageable copies get less).
        h2d_exposed: share of the copy on the critical path (1: default stream, pageable).
        grad_bytes: the all-reduce payload per step (gradients, times the algorithm's factor).
        overlap: share of the backward pass the all-reduce may hide behind.
        tp_bytes: tensor-parallel NVLink bytes per GPU per step (0 without tensor parallelism).
        net_bps: the fabric's usable bandwidth per node per direction (0 on one node).
        p2p_bps: PCIe peer-to-peer bandwidth per GPU for boards without NVLink.
        swap_main: memory-pressure stall of the training processes, s per step.
        swap_workers: memory-pressure stall of the loader workers, s per step.
        mem_kind: "swap", "thrash" (no swap: evicted file pages read back) or "" (no pressure).
        node_pressure: the pressure comes from the node running out of memory, not the pod's limit.
        precision: "bf16", "tf32" or "fp32" (which pipes the math kernels keep busy).
        cpu_kind: "throttled", "saturated", "few-workers" or "" (how the decode stage is limited).
        clock: SM clock as a share of boost during the math kernels, per pod.
        intensity: how hard the math kernels push the board: dynamic power at the boost clock, as a
            share of the board's TDP headroom (above 1: the default limit already caps the clock).
        neighbour_cores: cores other workloads use on each of the job's nodes, shape (nodes,).
        slow_gpu: per pod, the clock share its slowest GPU keeps under a thermal or hardware
            slowdown (1.0: none); a rank's step waits for its slowest GPU.
    """

    read_bytes: FloatArray
    read_bps: FloatArray
    io_kind: str
    cpu_work: FloatArray
    loader_cores: FloatArray
    workers: int
    main_cores: float
    math_s: FloatArray
    hbm_s: FloatArray
    h2d_bytes: float
    h2d_bps: float
    h2d_exposed: float
    grad_bytes: float
    overlap: float
    tp_bytes: float
    net_bps: float
    p2p_bps: float
    swap_main: FloatArray
    swap_workers: FloatArray
    mem_kind: str
    node_pressure: bool
    precision: str
    cpu_kind: str
    clock: FloatArray
    intensity: float
    neighbour_cores: FloatArray
    slow_gpu: FloatArray


def intra_node_bytes(setup: Setup, grad_bytes: float) -> float:
    """Bytes each GPU sends (and receives) to its node's other GPUs per all-reduce (ring/tree)."""
    local = setup.gpus * setup.pods_per_node if setup.pods > 1 else setup.gpus
    local = min(local, setup.total_gpus)
    return 2.0 * (local - 1) / local * grad_bytes if local > 1 else 0.0


def inter_node_bytes(setup: Setup, grad_bytes: float) -> float:
    """Bytes each node sends (and receives) over the fabric per all-reduce.

    Hierarchical all-reduce: a reduce-scatter inside the node, then each GPU's 1/g shard is
    all-reduced across the nodes (2(n-1)/n of the shard), then an all-gather inside the node.
    """
    nodes = setup.nodes
    return 2.0 * (nodes - 1) / nodes * grad_bytes if nodes > 1 else 0.0


def plan_of(setup: Setup, w: Workload) -> Plan:
    """The stage times a workload takes on its setup."""
    intra = intra_node_bytes(setup, w.grad_bytes)
    has_nvlink = setup.board.nvlink_bps > 0
    zeros = np.zeros(setup.pods)
    tp_time = w.tp_bytes / setup.board.nvlink_bps if has_nvlink and w.tp_bytes > 0 else 0.0
    return Plan(
        read=w.read_bytes / w.read_bps,
        decode=w.cpu_work / w.loader_cores,
        math=w.math_s,
        hbm=w.hbm_s,
        h2d=zeros + w.h2d_bytes / w.h2d_bps * w.h2d_exposed,
        p2p=zeros + (0.0 if has_nvlink else intra / w.p2p_bps),
        nvlink=zeros + (intra / (setup.board.nvlink_bps * 0.8) if has_nvlink else 0.0),
        network=zeros + (inter_node_bytes(setup, w.grad_bytes) / w.net_bps if w.net_bps > 0 else 0.0),
        overlap=zeros + w.overlap,
        tp=zeros + tp_time,
        swap_main=w.swap_main,
        swap_workers=w.swap_workers,
        clock=w.clock,
    )


def host_copy_bps(setup: Setup, pinned: bool) -> float:
    """One GPU's host-to-device bandwidth: pageable copies bounce through a staging buffer (~half)."""
    bps = PCIE_BPS[setup.board.pcie_gen]
    shared = 2.0 if setup.board.gpus_per_node == 8 and setup.gpus >= 2 else 1.0  # two GPUs per PCIe switch
    return bps / shared * (1.0 if pinned else 0.45)


def p2p_bps(setup: Setup) -> float:
    """PCIe peer-to-peer all-reduce bandwidth per GPU (through the switch or the root complex)."""
    return PCIE_BPS[setup.board.pcie_gen] * (0.6 if setup.gpus > 2 else 0.8)


def fabric_bps(setup: Setup) -> float:
    """The fabric's usable bandwidth per node per direction: TCP ~0.7 of line rate, RDMA ~0.9."""
    if setup.fabric is None:
        return 0.0
    return setup.fabric.node_bps * (0.9 if setup.fabric.rdma else 0.7)


def describe(w: Workload) -> dict[str, float]:
    """A workload's headline figures (GB, GB/s), for docs and tests."""
    return {
        "read_GBps": float(np.mean(w.read_bytes) / GB),
        "storage_GBps": float(np.mean(w.read_bps) / GB),
        "decode_core_s": float(np.mean(w.cpu_work)),
        "grad_GB": w.grad_bytes / GB,
    }
