"""What one Job is: the cluster it landed on, how it shares its GPUs, and its training recipe.

Everything is drawn from physical quantities (sample sizes, decode cost, storage and link rates,
gradient bytes, a MIG slice's share of the board); the stage times follow from them, and the label
from the stage times (:mod:`.steps`). The intended class only shifts the ranges the quantities are
drawn from.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.verdict import Bottleneck, Mechanism
from bottleneck_operator_dev.familyao.hardware import (
    BOARDS,
    DECODE_PER_CORE,
    FABRIC_RATES,
    FP32_SLOWDOWN_CUDA,
    FP32_SLOWDOWN_TF32,
    MIG_PROFILES,
    STORAGE_RATES,
    Board,
    Fabric,
    MigProfile,
    Sharing,
    Storage,
)
from bottleneck_operator_dev.familyao.steps import Causes, StageTimes

GIB = 2**30


@dataclass(frozen=True)
class Plan:
    """One Job's world and recipe; the quantities the exporters turn into series."""

    board: Board
    sharing: Sharing
    mig: MigProfile | None
    sm_share: float  # this Job's share of the board's SMs (MIG slice, MPS thread percentage)
    mem_share: float  # its share of the board's HBM bandwidth
    tenant_load: float  # another tenant's busy share on the same device (0: none)
    pods: int
    gpus: int  # per pod
    fabric: Fabric | None
    nic_bps: float
    storage: Storage
    storage_bps: float
    node_cpus: int
    cpu_limit: float | None
    workers: int
    neighbour_cores: float  # other pods' CPU use on each node
    amp: bool
    recompute: bool
    accum: int
    kind: str  # "images", "tokens" or "clips"
    io_bytes: float  # per step, per pod
    cpu_work: float  # core-seconds per step, per pod
    h2d_bytes: float  # per step, per GPU
    comm_bytes: float  # per step (per micro-step), per GPU
    mem_limit: float
    working_set: float
    swap: bool
    clock: float  # the slowest GPU's clock as a share of its maximum
    power_limit: float
    times: StageTimes
    causes: Causes


def _logu(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(np.exp(rng.uniform(np.log(lo), np.log(hi))))


def _sharing(rng: np.random.Generator, board: Board, intent: Bottleneck) -> tuple[Sharing, MigProfile | None]:
    """Whole GPUs most often; MIG only on boards that have it; time-slicing and MPS on any."""
    modes = [Sharing.WHOLE, Sharing.WHOLE, Sharing.TIME_SLICED, Sharing.MPS] + ([Sharing.MIG] if board.mig else [])
    if intent is Bottleneck.INTERCONNECT:
        modes = [Sharing.WHOLE, Sharing.WHOLE, Sharing.WHOLE, *modes[2:]]
    mode = modes[int(rng.integers(len(modes)))]
    mig = MIG_PROFILES[int(rng.integers(len(MIG_PROFILES)))] if mode is Sharing.MIG else None
    return mode, mig


def _shares(rng: np.random.Generator, mode: Sharing, mig: MigProfile | None) -> tuple[float, float, float]:
    """(SM share, HBM share, other tenant's load) of this Job on its device."""
    if mig is not None:
        # other instances' load only shows in the board's power and clock
        return mig.sm_share, mig.mem_share, float(rng.uniform(0.0, 0.8))
    if mode is Sharing.TIME_SLICED:
        load = float(rng.uniform(0.15, 0.7))
        # contexts take turns: this Job runs only while the other is not on the device
        return 1.0 - 0.8 * load, 1.0 - 0.8 * load, load
    if mode is Sharing.MPS:
        load = float(rng.uniform(0.15, 0.7))
        pct = float(rng.choice([0.3, 0.5, 0.7, 1.0]))
        # MPS runs both at once: SMs split by the thread percentage, bandwidth contended
        return pct * (1.0 - 0.3 * load), 1.0 - 0.5 * load, load
    return 1.0, 1.0, 0.0


def _topology(rng: np.random.Generator, board: Board, mode: Sharing, intent: Bottleneck, mech: int) -> tuple[int, int]:
    """(pods, GPUs per pod): shared devices hold one GPU per pod; NVLink boards come in eights."""
    if intent is Bottleneck.INTERCONNECT and mech == 0:
        return 1, int(rng.choice([1, 2]))  # a host-copy-bound Job: one node, few GPUs
    if mode is not Sharing.WHOLE:
        return int(rng.choice([1, 1, 2, 3])), 1
    most = 8 if board.nvlink_bps > 0 else 4
    gpus = int(rng.choice([g for g in (1, 2, 4, 8) if g <= most]))
    pods = int(rng.choice([1, 2, 4, 8] if intent is Bottleneck.INTERCONNECT else [1, 1, 2, 4]))
    if intent is Bottleneck.INTERCONNECT and pods * gpus == 1:
        gpus = most
    return pods, gpus


def _workload(rng: np.random.Generator, board: Board, intent: Bottleneck, mech: int) -> tuple[str, float, float]:
    """(kind, full-board AMP kernel seconds per step, samples per step per GPU)."""
    kind = str(rng.choice(["images", "images", "tokens", "clips"]))
    if intent is Bottleneck.INTERCONNECT and mech == 0:
        kind = "clips"  # decoded clips are large to copy to the device
    if intent is Bottleneck.CPU:
        kind = "images"
    t_full = _logu(rng, 0.06, 0.5)
    if intent is Bottleneck.GPU and mech == 1:
        t_full = _logu(rng, 0.004, 0.02)  # small batches: many tiny kernels
    # ResNet-50 at ~2,470 img/s on an A100 with AMP (TELEMETRY.md), scaled by the board's peak
    rate = {"images": 2470.0, "tokens": 60.0, "clips": 90.0}[kind] * board.tflops / 312
    samples = max(1.0, t_full * rate * float(rng.uniform(0.4, 1.3)))
    return kind, t_full, samples


def _inputs(rng: np.random.Generator, kind: str, intent: Bottleneck) -> tuple[float, float, float]:
    """(bytes read, decode core-seconds, bytes copied to the device) per sample."""
    big = intent is Bottleneck.IO
    if kind == "images":
        read = _logu(rng, 80e3, 200e3) * (float(rng.uniform(4, 12)) if big else 1.0)
        per_core = float(rng.uniform(*DECODE_PER_CORE))
        return read, 1.0 / per_core, 224 * 224 * 3 * float(rng.choice([1.0, 4.0]))
    if kind == "tokens":
        read = _logu(rng, 4e3, 16e3) * (float(rng.uniform(20, 60)) if big else 1.0)
        return read, _logu(rng, 2e-4, 1e-3), 8e3
    read = _logu(rng, 1e6, 4e6) * (float(rng.uniform(3, 8)) if big else 1.0)
    return read, _logu(rng, 0.005, 0.02), _logu(rng, 10e6, 60e6)


def _storage(rng: np.random.Generator, intent: Bottleneck) -> tuple[Storage, float]:
    slow = [Storage.SATA, Storage.NFS, Storage.OBJECT, Storage.THROTTLED]
    kinds = slow if intent is Bottleneck.IO else [Storage.NVME, Storage.NVME, Storage.NFS, Storage.SATA]
    s = kinds[int(rng.integers(len(kinds)))]
    lo, hi = STORAGE_RATES[s]
    return s, float(rng.uniform(lo, hi))


def _cpu(rng: np.random.Generator, intent: Bottleneck, mech: int) -> tuple[int, float | None, int, float]:
    """(node CPUs, CPU limit or None, loader workers, neighbours' cores)."""
    node = int(rng.choice([32, 64, 96, 128]))
    limit: float | None = float(rng.choice([16, 32, 48])) if rng.random() < 0.7 else None
    workers = int(rng.choice([8, 12, 16, 24]))
    neighbours = float(rng.uniform(0.0, 0.4)) * node
    if intent is Bottleneck.CPU:
        if mech == 0:
            limit, workers = float(rng.choice([2, 4, 6, 8])), int(rng.choice([8, 12, 16]))
        elif mech == 1:
            limit, neighbours = None, node * float(rng.uniform(0.85, 0.97))
        else:
            limit, workers = float(rng.choice([32, 48])), int(rng.choice([1, 2, 3]))
    return node, limit, workers, neighbours


def _decode_cores(p_limit: float | None, workers: int, node: int, neighbours: float) -> tuple[float, Mechanism]:
    """Cores the loader can decode on, and the CPU mechanism that bounds them.

    The trainer's main process keeps one core; each worker is one process (at most a core).
    """
    options = {
        Mechanism.THROTTLED: (p_limit - 1.0) if p_limit is not None else float("inf"),
        Mechanism.SATURATED: node - neighbours - 1.0,
        Mechanism.TOO_FEW_WORKERS: float(workers),
    }
    cause = min(options, key=lambda m: options[m])
    return max(options[cause], 0.5), cause


def _comm(rng: np.random.Generator, plan_bits: dict[str, float], intent: Bottleneck) -> tuple[float, float, str]:
    """(bytes per GPU per step, seconds per step, path) of a hierarchical ring all-reduce."""
    pods, gpus, nvlink, pcie, nic = (plan_bits[k] for k in ("pods", "gpus", "nvlink", "pcie", "nic"))
    params = _logu(rng, 1e9, 8e9) if intent is Bottleneck.INTERCONNECT else _logu(rng, 2.5e7, 1e9)
    grad = params * plan_bits["grad_bytes"] / plan_bits["accum"]
    if pods * gpus <= 1:
        return 0.0, 0.0, "none"
    intra_bw = nvlink if nvlink > 0 else 0.7 * pcie
    intra = 2 * (gpus - 1) / gpus * grad / intra_bw if gpus > 1 else 0.0
    inter = 2 * (pods - 1) / pods * grad / nic if pods > 1 else 0.0
    path = "network" if inter > intra else ("nvlink" if nvlink > 0 else "pcie")
    volume = 2 * (pods * gpus - 1) / (pods * gpus) * grad
    return volume, max(intra, inter), path


def _host_memory(rng: np.random.Generator, intent: Bottleneck, mech: int) -> tuple[float, float, bool, float]:
    """(limit, working set, swap on, stall seconds per step) of the pod's memory cgroup."""
    limit = float(rng.choice([32, 64, 128, 256])) * GIB
    swap = bool(rng.random() < 0.6)
    if intent is Bottleneck.MEMORY and mech == 1:
        over = float(rng.uniform(1.05, 1.4))
        excess = (over - 1.0) * limit
        # each step touches part of what was pushed out; swap-in or refault at 0.3-2 GB/s (assumption)
        stall = excess * float(rng.uniform(0.01, 0.05)) / float(rng.uniform(0.3e9, 2e9))
        return limit, limit * min(over, 1.0) * float(rng.uniform(0.97, 1.0)), swap, stall
    return limit, limit * float(rng.uniform(0.3, 0.85)), swap, 0.0


def _precision(rng: np.random.Generator, board: Board, intent: Bottleneck) -> tuple[bool, bool, int, float]:
    """(mixed precision, activation recompute, accumulation steps, compute-time factor)."""
    amp = bool(rng.random() < (0.55 if intent is Bottleneck.GPU else 0.8))
    recompute = bool(rng.random() < 0.3)
    accum = int(rng.choice([1, 1, 1, 2, 4, 8])) if intent is not Bottleneck.INTERCONNECT else 1
    slow = 1.0 if amp else (FP32_SLOWDOWN_TF32 if board.tf32 else FP32_SLOWDOWN_CUDA)
    # recompute runs the forward (a third of the step's FLOPs) twice
    return amp, recompute, accum, slow * (4.0 / 3.0 if recompute else 1.0)


def _power(rng: np.random.Generator, board: Board) -> tuple[float, float]:
    """(enforced power limit, the slowest GPU's clock share): caps below TDP slow the clocks."""
    limit = board.tdp_w * (float(rng.uniform(0.6, 0.95)) if rng.random() < 0.35 else 1.0)
    clock = float(rng.uniform(0.85, 1.0)) * min(1.0, (limit / board.tdp_w) ** 0.35)
    return limit, clock


def draw_plan(rng: np.random.Generator, intent: Bottleneck) -> Plan:
    """One Job's world and recipe, its draws shifted towards ``intent``."""
    mech = int(rng.integers(3))
    board = BOARDS[int(rng.integers(len(BOARDS)))]
    mode, mig = _sharing(rng, board, intent)
    sm_share, mem_share, tenant = _shares(rng, mode, mig)
    if mode is not Sharing.WHOLE and intent is Bottleneck.INTERCONNECT:
        mech = 0  # a shared device's Job is one GPU per pod: its link stage is the host copy
    pods, gpus = _topology(rng, board, mode, intent, mech)
    kind, t_full, samples = _workload(rng, board, intent, mech % 2)
    read, decode, copy = _inputs(rng, kind, intent)
    storage, storage_bps = _storage(rng, intent)
    node, limit, workers, neighbours = _cpu(rng, intent, mech)
    cores, cpu_cause = _decode_cores(limit, workers, node, neighbours)
    amp, recompute, accum, slow = _precision(rng, board, intent)
    power_limit, clock = _power(rng, board)
    fabric = Fabric(str(rng.choice(list(Fabric)))) if pods > 1 else None
    if fabric is not None and intent is Bottleneck.INTERCONNECT and rng.random() < 0.6:
        fabric = Fabric.TCP
    rails = gpus if fabric is Fabric.INFINIBAND else 1  # one HCA per GPU on InfiniBand servers
    nic = float(rng.choice(FABRIC_RATES[fabric])) * rails if fabric else 0.0
    nvlink = board.nvlink_bps if mode is Sharing.WHOLE else 0.0  # no P2P for slices and shared devices
    bits = {"pods": pods, "gpus": gpus, "nvlink": nvlink, "pcie": board.pcie_bps, "nic": max(nic, 1.0)}
    bits |= {"grad_bytes": 2.0 if amp else 4.0, "accum": accum}
    comm_bytes, t_comm, path = _comm(rng, bits, intent)
    limit_b, ws, swap, t_mem = _host_memory(rng, intent, mech % 2)
    hbm_ratio = _logu(rng, 1.3, 3.5) if intent is Bottleneck.MEMORY and mech % 2 == 0 else _logu(rng, 0.08, 0.6)
    ts_share = min(sm_share, 1.0)
    t_compute = t_full * slow / (ts_share * clock)
    t_hbm = t_full * hbm_ratio * (1.0 if amp else 2.0) * (4.0 / 3.0 if recompute else 1.0) / mem_share
    kernels = _logu(rng, 200, 1500) * (8.0 if intent is Bottleneck.GPU and mech % 2 == 1 else 1.0)
    t_launch = kernels * _logu(rng, 4e-6, 10e-6)
    h2d_bytes = samples * copy
    switch = 2.0 if gpus > 1 and rng.random() < 0.5 else 1.0  # two GPUs behind one PCIe switch
    t_h2d = h2d_bytes * switch / (0.8 * board.pcie_bps)
    io_bytes = samples * gpus * read
    cpu_work = samples * gpus * decode
    h2d_overlap = float(rng.uniform(0.0, 0.3)) if intent is Bottleneck.INTERCONNECT else float(rng.uniform(0.3, 0.9))
    times = StageTimes(
        io=io_bytes / storage_bps,
        cpu=cpu_work / cores,
        h2d=t_h2d,
        launch=t_launch,
        compute=t_compute,
        hbm=t_hbm,
        comm=t_comm,
        hostmem=t_mem,
        h2d_overlap=h2d_overlap,
        comm_overlap=float(rng.uniform(0.3, 0.85)),
    )
    causes = Causes(storage.local, cpu_cause, path)
    return Plan(
        board, mode, mig, sm_share, mem_share, tenant, pods, gpus, fabric, nic, storage, storage_bps,
        node, limit, workers, neighbours, amp, recompute, accum, kind, io_bytes, cpu_work, h2d_bytes,
        comm_bytes, limit_b, ws, swap, clock, power_limit, times, causes,
    )  # fmt: skip
