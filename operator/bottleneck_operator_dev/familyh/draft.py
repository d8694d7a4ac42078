"""Drafting one job: a workload on a machine, its stage times, and the class that bounds it.

A job is drafted towards a class: the physical stage times come from the workload and the
hardware (bytes over bandwidths, FLOPs over throughput), then one knob of the target class
(storage share, decode cost or cores, link share, model size, memory headroom) is turned until the
step model says that class's removal speeds the iteration up most, by a drawn margin over the
runner-up. The label is then read back from the step model, never from a signal.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from bottleneck_operator.contract.verdict import Bottleneck, Mechanism
from bottleneck_operator_dev.familyh.hardware import BOARD_MIX, BOARDS, FABRICS, STORAGES, Board, Fabric, Storage
from bottleneck_operator_dev.familyh.stepmodel import Stages, label_of, mechanism_of
from bottleneck_operator_dev.familyh.workloads import BY_CLASS, WORKLOADS, Workload

Rng = np.random.Generator


@dataclass(frozen=True)
class Draft:
    """A job's physical set-up and its nominal stage times (per rank, one iteration).

    Attributes:
        workload, board, storage, fabric: what runs, on what, reading from where, talking over what.
        pods, gpus: pods of the job and GPUs per pod (one rank per GPU).
        node_cpus, node_mem: the nodes' CPUs and memory (bytes).
        cpu_limit: the pod's CPU limit (cores), None without one.
        mem_limit: the pod's memory limit (bytes), None without one.
        host_ws: the pod's host working set (bytes) when nothing presses on it.
        batch_bytes: bytes read from storage per rank per iteration.
        h2d_bytes, d2h_bytes: bytes over each GPU's PCIe link per iteration.
        link_bytes: collective bytes per GPU per optimizer step over the network (0 within one node).
        nvlink_bytes: peer bytes per GPU per optimizer step inside the node: over NVLink, or PCIe without it.
        comm_total_s: the collective's whole time per optimizer step, before overlap.
        comm_hidden_s: how much of it backward computation hides.
        accum: micro-batches per optimizer step (gradient accumulation).
        main_cores: CPU cores each trainer process keeps busy (Python, launch, NCCL progress).
        tensor_fill: tensor-pipe activity while math-bound kernels run.
        fp32_math: the job does its math in FP32 without tensor cores (old code, no AMP).
        stages: the nominal stage times.
        label, mechanism: the bounding class and how, from the step model.
        margin: the label's removal speed-up over the runner-up's (>= 1).
        speedup: the label's removal speed-up.
        mmap_reads: the dataset is memory-mapped (Arrow, LMDB, numpy memmap): its reads arrive as major faults.
        timeslice: share of the GPU's time another pod's kernels take on a time-sliced GPU (0: the GPU is the job's).
    """

    workload: Workload
    board: Board
    storage: Storage
    fabric: Fabric | None
    pods: int
    gpus: int
    node_cpus: int
    node_mem: float
    cpu_limit: float | None
    mem_limit: float | None
    host_ws: float
    batch_bytes: float
    h2d_bytes: float
    d2h_bytes: float
    link_bytes: float
    nvlink_bytes: float
    comm_total_s: float
    comm_hidden_s: float
    accum: int
    main_cores: float
    tensor_fill: float
    fp32_math: bool
    stages: Stages
    label: Bottleneck
    mechanism: Mechanism
    margin: float
    speedup: float
    mmap_reads: bool = False
    timeslice: float = 0.0


def _pick(rng: Rng, table: tuple[tuple[str, float], ...]) -> str:
    names = [n for n, _ in table]
    w = np.array([x for _, x in table], dtype=np.float64)
    return str(names[int(rng.choice(len(names), p=w / w.sum()))])


def _u(rng: Rng, lo_hi: tuple[float, float], log: bool = False) -> float:
    lo, hi = lo_hi
    if log and lo > 0:
        return float(math.exp(rng.uniform(math.log(lo), math.log(hi))))
    return float(rng.uniform(lo, hi))


def _board(rng: Rng, wl: Workload, mech: Mechanism) -> Board:
    big = wl.name.startswith("llm") and wl.name != "llm-finetune"
    table = BOARD_MIX
    if mech is Mechanism.NVLINK or big:
        table = tuple((k, w) for k, w in BOARD_MIX if BOARDS[k].nvlink_bps > 0)
    elif mech is Mechanism.PCIE and rng.random() < 0.6:
        table = tuple((k, w) for k, w in BOARD_MIX if BOARDS[k].nvlink_bps == 0)
    return BOARDS[_pick(rng, table)]


def _topology(rng: Rng, wl: Workload, mech: Mechanism) -> tuple[int, int]:
    if wl.name in ("llm-pretrain-fsdp", "llm-tp-pp"):
        gpus = 8 if rng.random() < 0.85 else int(rng.choice((4, 2)))
        pods = int(rng.choice((1, 2, 2, 4, 4, 8, 12, 16)))
    else:
        gpus = int(rng.choice((1, 1, 2, 4, 4, 8, 8)))
        pods = int(rng.choice((1, 1, 1, 2, 2, 4, 8)))
    if mech is Mechanism.NETWORK:
        pods = max(pods, int(rng.choice((2, 4, 8, 16))))
    elif mech in (Mechanism.NVLINK, Mechanism.PCIE):
        # a single node's links: tensor parallelism over NVLink, or peers and copies over PCIe
        pods = 1
        gpus = max(gpus, int(rng.choice((4, 8)))) if mech is Mechanism.NVLINK or rng.random() < 0.5 else gpus
    return pods, gpus


def _storage(rng: Rng, wl: Workload, mech: Mechanism) -> Storage:
    kinds = list(wl.storages)
    if mech is Mechanism.LOCAL_DISK:
        kinds = [k for k in kinds if STORAGES[k].local] or ["local-nvme"]
    elif mech is Mechanism.NETWORK_STORAGE:
        kinds = [k for k in kinds if not STORAGES[k].local] or ["nfs"]
    return STORAGES[str(rng.choice(kinds))]


def _fabric(rng: Rng, board: Board, pods: int) -> Fabric | None:
    if pods == 1:
        return None
    if board.nvlink_bps > 0:
        return FABRICS[
            str(
                rng.choice(
                    ("ib-ndr-8rail", "ib-hdr-4rail", "ib-hdr-1port", "roce-100g", "eth-100g-tcp"),
                    p=(0.35, 0.25, 0.15, 0.15, 0.1),
                )
            )
        ]
    return FABRICS[
        str(rng.choice(("roce-100g", "eth-100g-tcp", "eth-25g-tcp", "ib-hdr-1port"), p=(0.3, 0.3, 0.25, 0.15)))
    ]


@dataclass(frozen=True)
class Comm:
    """One iteration's collectives: where they run, how long, what is hidden, what moves."""

    scope: str = "none"
    total_s: float = 0.0
    hidden_s: float = 0.0
    accum: int = 1
    net_bytes: float = 0.0
    nvlink_bytes: float = 0.0

    @property
    def exposed_s(self) -> float:
        return max(0.0, self.total_s - self.hidden_s) / self.accum


def _comm(rng: Rng, wl: Workload, board: Board, fabric: Fabric | None, pods: int, gpus: int, backward_s: float) -> Comm:
    """The collectives of one optimizer step: ring all-reduce (or sharded gather/scatter) volumes over links."""
    ranks = pods * gpus
    if ranks == 1:
        return Comm()
    grad = _u(rng, wl.grad_gb, log=True) * 1e9
    traffic = 2.0 * (ranks - 1) / ranks * grad
    intra = 2.0 * (gpus - 1) / gpus * grad if gpus > 1 else 0.0
    efficiency = float(rng.uniform(0.6, 0.9))
    overlap = float(rng.uniform(0.0, 0.3)) if wl.name in ("recsys-dlrm", "llm-tp-pp") else float(rng.uniform(0.4, 0.95))
    accum = int(rng.choice((1, 1, 1, 2, 4, 8, 16)))
    if fabric is not None:
        total = traffic / (fabric.bw_bps / gpus * efficiency)
        return Comm("network", total, overlap * backward_s, accum, traffic, intra)
    if board.nvlink_bps > 0:
        return Comm("nvlink", traffic / (board.nvlink_bps * efficiency), overlap * backward_s, accum, 0.0, traffic)
    # without NVLink, peers exchange through the host's root complex: both directions share it
    return Comm("pcie", traffic / (board.pcie_bps * 0.5 * efficiency), overlap * backward_s, accum, 0.0, traffic)


def _host(rng: Rng, board: Board, gpus: int) -> tuple[int, float, float, float | None, float]:
    """The node's CPUs and memory, the trainer's own cores, the pod's CPU limit and the cores per rank it may use."""
    sxm = board.nvlink_bps > 0
    node_cpus = int(rng.choice((128, 192, 224, 256) if sxm else (32, 48, 64, 96, 128)))
    node_mem = float(rng.choice((512e9, 1024e9, 2048e9) if sxm else (256e9, 512e9, 1024e9)))
    main_cores = float(rng.uniform(0.8, 1.6))
    cpu_limit = float(gpus * rng.uniform(4, 16)) if rng.random() < 0.5 else None
    free = (cpu_limit if cpu_limit is not None else node_cpus * rng.uniform(0.4, 1.0)) / gpus
    return node_cpus, node_mem, main_cores, cpu_limit, free


def _reading(
    rng: Rng, wl: Workload, storage: Storage, batch: int, gpus: int, cached: bool
) -> tuple[float, float, float]:
    """Bytes per batch, the batch's time at the rank's share of the storage, and one worker's read time.

    A worker keeps a few requests in flight; one stream reaches about a quarter of what the store
    gives a client. A dataset that fits the page cache is read from memory after its first epoch.
    """
    batch_bytes = batch * _u(rng, wl.sample_bytes, log=True)
    share = storage.bw_bps * rng.uniform(0.3, 1.0) / gpus
    requests = max(1.0, batch_bytes / storage.request_bytes)
    read_s = requests * storage.latency_s / rng.uniform(2, 8) + batch_bytes / (storage.bw_bps / 4)
    hit = 0.02 if cached else 1.0
    return batch_bytes, batch_bytes / share * hit, read_s * hit


def _stages(
    rng: Rng,
    wl: Workload,
    loader: tuple[float, float, float, float],
    limited: bool,
    h2d: float,
    kernels: float,
    hbm_share: float,
    comm: Comm,
) -> Stages:
    """The nominal stages; ``loader`` is (read, storage, decode, cores per rank)."""
    read_s, storage_s, decode_s, cores = loader
    # a pipeline of p stages run with m micro-batches idles (p - 1) / m of its kernel time
    bubble = (int(rng.integers(2, 9)) - 1) / int(rng.integers(8, 33)) if wl.name == "llm-tp-pp" else 0.0
    return Stages(
        read_s=read_s,
        storage_s=storage_s,
        decode_s=decode_s,
        worker_stall_s=0.0,
        workers=int(rng.choice((2, 4, 4, 6, 8, 8, 12, 16))),
        cores=cores,
        cores_from_limit=limited,
        h2d_s=h2d,
        tensor_s=kernels * (1 - hbm_share),
        hbm_s=kernels * hbm_share,
        bubble=bubble,
        comm_s=comm.exposed_s,
        comm_scope=comm.scope,
        main_stall_s=0.0,
    )


def draft_natural(rng: Rng, target: Bottleneck, mech: Mechanism) -> Draft:
    """The job as physics draws it, before its target stage is tuned (its label is still to be read)."""
    wl = WORKLOADS[_pick(rng, BY_CLASS[target])]
    board = _board(rng, wl, mech)
    pods, gpus = _topology(rng, wl, mech)
    storage = _storage(rng, wl, mech)
    fabric = _fabric(rng, board, pods)
    if mech is Mechanism.NETWORK and fabric is None:
        fabric = FABRICS["eth-25g-tcp"]
    batch = int(rng.integers(wl.batch[0], wl.batch[1] + 1))
    fp32 = wl.name in ("vision-jpeg", "speech") and rng.random() < 0.12
    peak = board.dense_tflops * 1e12 * (0.12 if fp32 else 1.0)
    kernels = batch * _u(rng, wl.tflop, log=True) * 1e12 / (peak * _u(rng, wl.mfu))
    hbm_share = _u(rng, wl.hbm_share)
    comm = _comm(rng, wl, board, fabric, pods, gpus, kernels * 2 / 3)
    node_cpus, node_mem, main_cores, cpu_limit, free = _host(rng, board, gpus)
    host_ws = min(_u(rng, wl.host_gb) * 1e9 * gpus, node_mem * rng.uniform(0.3, 0.75))
    cached = storage.local and rng.random() < 0.3 and target is not Bottleneck.IO
    batch_bytes, storage_s, read_s = _reading(rng, wl, storage, batch, gpus, cached)
    h2d_bytes = batch * _u(rng, wl.h2d_per_sample, log=True)
    # pinned buffers copied asynchronously hide most of the copy behind compute; pageable ones do not
    pinned = rng.random() < 0.75
    h2d = h2d_bytes / (board.pcie_bps * 0.8) * (rng.uniform(0.05, 0.3) if pinned else rng.uniform(0.8, 1.0))
    loader = (read_s, storage_s, batch * _u(rng, wl.decode_s, log=True), max(0.5, free - main_cores))
    stages = _stages(rng, wl, loader, cpu_limit is not None, h2d, kernels, hbm_share, comm)
    return Draft(
        workload=wl,
        board=board,
        storage=storage,
        fabric=fabric,
        pods=pods,
        gpus=gpus,
        node_cpus=node_cpus,
        node_mem=node_mem,
        cpu_limit=cpu_limit,
        mem_limit=host_ws * rng.uniform(1.2, 2.5) if rng.random() < 0.6 else None,
        host_ws=host_ws,
        batch_bytes=batch_bytes,
        h2d_bytes=h2d_bytes,
        d2h_bytes=h2d_bytes * rng.uniform(0.001, 0.02),
        link_bytes=comm.net_bytes,
        nvlink_bytes=comm.nvlink_bytes,
        comm_total_s=comm.total_s,
        comm_hidden_s=comm.hidden_s,
        accum=comm.accum,
        main_cores=main_cores,
        tensor_fill=0.0 if fp32 else float(rng.uniform(0.35, 0.85)),
        fp32_math=fp32,
        stages=stages,
        label=Bottleneck.UNKNOWN,
        mechanism=Mechanism.COMPUTE,
        margin=1.0,
        speedup=1.0,
        mmap_reads=storage.local and rng.random() < (0.5 if wl.name.startswith(("llm", "recsys")) else 0.15),
    )


def labelled(d: Draft) -> Draft:
    """The draft with its label, mechanism and margins read from the step model."""
    label, top, second = label_of(d.stages)
    remote = not d.storage.local
    return replace(d, label=label, mechanism=mechanism_of(d.stages, label, remote), margin=top / second, speedup=top)
