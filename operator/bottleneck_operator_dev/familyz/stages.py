"""The first stages of drawing one Job, in order: each fills in its part of the draft (see :mod:`.workload`)."""

from __future__ import annotations

import math
from types import SimpleNamespace

from bottleneck_operator.contract.verdict import Bottleneck, Mechanism
from bottleneck_operator_dev.familyz.hardware import (
    DECODE_PER_CORE,
    ETHERNET_GBPS,
    GPUS,
    LOCAL_DISKS,
    NETWORK_STORES,
    RDMA_GBPS,
)
from bottleneck_operator_dev.familyz.plan import MAIN_MECHANISMS, MODELS, VISION

B, M = Bottleneck, Mechanism


def _intent(d: SimpleNamespace) -> None:
    """The intended mechanism and how far its stage falls short."""
    d.mech = MAIN_MECHANISMS[d.intent][int(d.rng.integers(len(MAIN_MECHANISMS[d.intent])))]
    d.tags = [f"intent:{d.mech.value}"]
    d.hard = bool(d.rng.random() < 0.4)
    # how far the intended stage falls short: near 1 means a second wait nearly as long as the first
    d.margin = float(d.rng.uniform(1.05, 1.4) if d.hard else d.rng.uniform(1.6, 4.0))
    if d.intent in (B.IO, B.CPU):
        # a data wait outlasts the kernels only when supply falls below about half of what the loop takes
        d.margin += 1.0
    if d.hard:
        d.tags.append("hard")


def _hardware(d: SimpleNamespace) -> None:
    """The GPU, how many to a pod, how many pods."""
    # --- hardware and placement
    if d.intent is B.INTERCONNECT and d.mech is M.PCIE:
        d.gpu = [g for g in GPUS if g.nvlink_gbps == 0][int(d.rng.integers(4))]
    else:
        d.gpu = GPUS[int(d.rng.integers(len(GPUS)))]
    d.nvlink = d.gpu.nvlink_gbps > 0
    d.gpus = int(d.rng.choice([8, 8, 4])) if d.nvlink else int(d.rng.choice([1, 2, 4]))
    if d.intent is B.INTERCONNECT and d.mech is M.PCIE and d.gpus == 1 and d.rng.random() < 0.6:
        d.gpus = 4
    d.pods = int(d.rng.choice([2, 3, 4])) if d.mech is M.NETWORK else int(d.rng.choice([1, 1, 1, 2]))
    d.tags += [d.gpu.model, f"{d.pods}x{d.gpus}gpu"]


def _model(d: SimpleNamespace) -> None:
    """The model, its precision and batch, and the step's FLOPs, HBM bytes and kernels."""
    # --- model and step
    if d.mech is M.LAUNCH_BOUND:
        d.model = "small-mlp"
    elif d.mech is M.HBM_BANDWIDTH:
        d.model = str(d.rng.choice(["dlrm", "bert-large", "resnet50"]))
    elif d.intent in (B.IO, B.CPU):
        d.model = str(d.rng.choice([*VISION, *VISION, "dlrm"]))
    elif d.mech is M.NETWORK:
        d.model = str(d.rng.choice(["vit-b16", "bert-large", "gpt-1.3b", "resnet50"]))
    else:
        d.model = str(d.rng.choice(list(MODELS)))
    d.flops_ps, d.params, d.stored, d.intensity, d.kernels = MODELS[d.model]
    d.precision = str(d.rng.choice(["amp", "amp", "tf32", "fp32"]))
    if d.precision == "tf32" and d.gpu.model.startswith(("Tesla V100", "Tesla T4")):
        d.precision = "amp"
    d.tensor_share = {"amp": 0.85, "tf32": 0.8, "fp32": 0.0}[d.precision]
    d.peak_tf = {"amp": d.gpu.tensor_tflops, "tf32": d.gpu.tensor_tflops / 2, "fp32": d.gpu.fp32_tflops}[d.precision]
    d.peak = d.peak_tf * 1e12 * float(d.rng.uniform(0.4, 0.65))  # model FLOPs utilisation of the kernels
    d.tags += [d.model, d.precision]
    d.t_c0 = float(d.rng.uniform(0.12, 0.7)) if d.mech is not M.LAUNCH_BOUND else float(d.rng.uniform(0.002, 0.01))
    # per-GPU batches stay within what these models are trained with
    d.cap = {"resnet50": 512, "vit-b16": 256, "bert-large": 64, "gpt-1.3b": 16, "dlrm": 65536, "small-mlp": 4096}[
        d.model
    ]
    d.batch = float(min(max(1.0, round(d.t_c0 * d.peak / d.flops_ps)), d.cap))
    d.flops = d.batch * d.flops_ps
    d.t_c0 = d.flops / d.peak
    d.hbm_bw = d.gpu.hbm_gbps * 1e9 * 0.85  # achievable: about 85 % of the datasheet figure
    d.hbm_bytes = d.flops / d.intensity
    if d.mech is M.HBM_BANDWIDTH:
        d.hbm_bytes = d.t_c0 * d.margin * 1.15 * d.hbm_bw
    elif d.hbm_bytes / d.hbm_bw > 0.7 * d.t_c0:
        d.hbm_bytes = 0.7 * d.t_c0 * d.hbm_bw * float(d.rng.uniform(0.3, 1.0))
    d.launch_s = float(d.rng.uniform(5e-6, 12e-6))
    d.kernels = (
        d.t_c0 * d.margin * 1.1 / d.launch_s if d.mech is M.LAUNCH_BOUND else min(d.kernels, 0.5 * d.t_c0 / d.launch_s)
    )
    d.t_k0 = max(d.t_c0, d.hbm_bytes / d.hbm_bw, d.kernels * d.launch_s)
    d.py_s = float(d.rng.uniform(0.001, 0.004))


def _communication(d: SimpleNamespace) -> None:
    """Gradient bytes over NVLink/PCIe and the NIC, TCP or RDMA, and the host-to-device copies."""
    # --- communication: bucketed ring all-reduce of the gradients, overlapped with backward
    d.ranks = d.pods * d.gpus
    d.grad = d.params * (2.0 if d.precision == "amp" else 4.0)
    d.intra = 2.0 * (d.gpus - 1) / d.gpus * d.grad if d.gpus > 1 else 0.0
    d.intra_pcie = 0.0 if d.nvlink else 1.0
    d.intra_bw = (
        d.gpu.nvlink_gbps * 1e9 * 0.8 if d.nvlink else d.gpu.pcie_gbps * 1e9 * 0.4
    )  # P2P through the host bridge
    d.inter = 2.0 * (d.pods - 1) / d.pods * d.grad if d.pods > 1 else 0.0
    d.comm_overlap = float(d.rng.uniform(0.6, 0.95))
    d.rdma = bool(d.pods > 1 and d.rng.random() < 0.55)
    d.flows = float(d.rng.choice([2, 4, 8]))
    d.shared = bool(d.rng.random() < 0.55)
    d.nbr_flows_mean = float(d.rng.choice([1, 4, 16])) if d.shared else 0.0
    d.line = float(d.rng.choice(RDMA_GBPS if d.rdma else ETHERNET_GBPS)) * 1e9 / 8

    def comm_time(rate: float) -> float:
        d.eff = (
            rate * 0.92
            if d.rdma
            else rate * d.flows / (d.flows + d.nbr_flows_mean) * (1 - 1 / (4 * (d.flows + d.nbr_flows_mean)))
        )
        return (d.inter / d.eff if d.inter else 0.0) + (d.intra / d.intra_bw if d.intra else 0.0)

    d.exposed_target = d.t_k0 * d.margin * 1.2 + d.comm_overlap * 0.66 * d.t_k0
    if d.mech is M.NETWORK:
        d.nic = d.line * (comm_time(d.line) / d.exposed_target) if comm_time(d.line) > 0 else d.line
        d.tags.append("rdma" if d.rdma else "tcp")
    else:
        d.nic = d.line
        if d.intent is not B.INTERCONNECT and comm_time(d.nic) > 0.5 * d.comm_overlap * 0.66 * d.t_k0 + 0.3 * d.t_k0:
            # keep the collective mostly hidden: a faster fabric (or fewer gradient bytes by sharding)
            d.scale = comm_time(d.nic) / (0.3 * d.t_k0 + 0.5 * d.comm_overlap * 0.66 * d.t_k0)
            d.nic, d.intra_bw = d.nic * d.scale, d.intra_bw * d.scale
    d.h2d_per_sample = 150e3 if d.model in VISION else d.stored
    d.h2d = d.batch * d.h2d_per_sample
    d.pcie_bw = d.gpu.pcie_gbps * 1e9 * float(d.rng.choice([0.8, 0.4]))  # pinned vs pageable copies
    d.h2d_overlap = float(d.rng.uniform(0.5, 0.95))
    if d.mech is M.PCIE:
        if d.gpus > 1:
            d.intra_bw = d.intra / (d.t_k0 * d.margin * 1.2 + d.comm_overlap * 0.66 * d.t_k0) if d.intra else d.intra_bw
            d.tags.append("pcie-allreduce")
        else:
            d.h2d_overlap = 0.0
            d.pcie_bw = d.h2d / (d.t_k0 * d.margin * 1.2)
            d.tags.append("pageable-h2d")
    elif d.h2d / d.pcie_bw * (1 - d.h2d_overlap) > 0.2 * d.t_k0:
        d.pcie_bw = d.h2d * (1 - d.h2d_overlap) / (0.2 * d.t_k0) * float(d.rng.uniform(1.0, 3.0))


def _input(d: SimpleNamespace) -> None:
    """DataLoader workers, decode cost, cores and the CPU quota."""
    # --- input pipeline
    d.step0 = d.t_k0 + 0.05 * d.t_k0 + d.py_s
    d.demand = 1.0 / d.step0  # steps/s one GPU would take unhindered
    d.decode_s = 1.0 / float(d.rng.uniform(*DECODE_PER_CORE)) if d.model in VISION else float(d.rng.uniform(2e-5, 2e-4))
    d.ncores = float(d.rng.choice([32, 64, 96, 128, 192]))
    d.cores_per_gpu = d.ncores / d.gpus
    d.need_cores = d.demand * d.batch * d.decode_s  # per loader
    d.slack = float(d.rng.uniform(1.3, 3.0))
    # the second wait of a hard case: supply just above what the loop takes
    d.close = float(d.rng.uniform(1.02, 1.15)) if d.hard else d.slack
    if d.intent is not B.CPU and d.need_cores * d.slack > 0.6 * d.cores_per_gpu:
        d.decode_s = 0.6 * d.cores_per_gpu / (d.demand * d.batch * d.slack)  # pre-decoded shards or DALI on the GPU
        d.need_cores = d.demand * d.batch * d.decode_s
        d.tags.append("light-decode")
    d.workers = float(min(max(2, math.ceil(d.need_cores * (d.close if d.intent is B.IO else d.slack))), 16))
    d.quota = 1e9
    d.nbr_cpu_mean = float(d.rng.uniform(0.05, 0.5)) * d.ncores if d.shared else 0.0
    if d.intent is B.CPU:
        if d.mech is M.THROTTLED:
            d.workers = float(min(max(2, math.ceil(d.need_cores * 1.5)), 32))
            d.quota = min(max(1.0, d.gpus * (d.need_cores + 0.3) / d.margin), 0.7 * d.ncores)
            d.nbr_cpu_mean = min(d.nbr_cpu_mean, 0.3 * d.ncores)
        elif d.mech is M.TOO_FEW_WORKERS:
            d.workers = float(max(1, math.floor(d.need_cores / d.margin)))
            if d.need_cores / d.workers < d.margin:
                d.decode_s = d.decode_s * d.margin * d.workers / d.need_cores
                d.need_cores = d.demand * d.batch * d.decode_s
            d.nbr_cpu_mean = min(d.nbr_cpu_mean, 0.2 * d.ncores)
        else:
            d.workers = float(min(max(2, math.ceil(d.need_cores * 1.5)), 48))
            d.shared = True
            d.nbr_cpu_mean = max(0.0, d.ncores - d.gpus * d.need_cores / d.margin)
        d.tags.append("cpu-limit" if d.quota < 1e6 else "no-cpu-limit")
    elif d.rng.random() < 0.5:
        d.quota = d.gpus * (d.workers + 1.0) * float(d.rng.uniform(1.2, 2.0))  # a limit that leaves room
    if d.intent is not B.CPU and d.nbr_cpu_mean > d.ncores - d.gpus * (d.workers + 1) * 1.2:
        d.nbr_cpu_mean = max(0.0, d.ncores - d.gpus * (d.workers + 1) * 1.2)


def _storage(d: SimpleNamespace) -> None:
    """Where the samples are read from and its ceiling."""
    d.need_bw = d.gpus * d.demand * d.batch * d.stored  # bytes/s the loaders read with a cold cache
    d.dataset = float(d.rng.uniform(0.5, 20.0)) * 1e12
    d.store_net = 0.0
    d.dstate = 1.0
    if d.intent is B.IO:
        d.store_bw = d.need_bw / d.margin
        if d.mech is M.NETWORK_STORAGE:
            d.store_net = 1.0
            d.name, d.ceiling, _ = NETWORK_STORES[int(d.rng.integers(len(NETWORK_STORES)))]
            d.dstate = 0.0 if d.name == "object-store" else 1.0
            d.tags.append(d.name)
        else:
            d.name, d.dev_bw, d.iops, d.lat, d.qd = LOCAL_DISKS[int(d.rng.integers(len(LOCAL_DISKS)))]
            # Little's law: small random reads with few requests in flight cap the device far below its figure
            d.store_bw = min(d.store_bw, d.dev_bw, d.iops * d.stored, d.qd * d.stored / d.lat)
            d.store_bw = max(d.store_bw, d.need_bw / (d.margin * 1.5))
            d.tags.append(d.name)
        d.cache0 = 0.0
    else:
        if d.rng.random() < 0.4:
            d.store_net = 1.0
            d.name, d.ceiling, _ = NETWORK_STORES[int(d.rng.integers(len(NETWORK_STORES)))]
            d.dstate = 0.0 if d.name == "object-store" else 1.0
        else:
            d.name, d.ceiling, _, _, _ = LOCAL_DISKS[int(d.rng.integers(3))]
        d.store_bw = max(d.ceiling, d.need_bw * d.close)
        d.cache0 = float(d.rng.uniform(0.0, 0.3))
        if d.intent is B.GPU and d.hard:
            # a hard GPU Job: the loaders' reads fall short often enough that the data wait nearly matches
            d.store_bw, d.cache0 = d.need_bw * float(d.rng.uniform(0.5, 0.62)), 0.0
            d.tags.append("second:io")
        d.tags.append(d.name)


def _memory(d: SimpleNamespace) -> None:
    """The cgroup's memory limit, swap, and what presses on it."""
    # --- host memory
    d.node_mem = float(d.rng.choice([256, 512, 1024, 2048])) * 2**30
    d.mem_limit = float(d.rng.uniform(0.1, 0.4)) * d.node_mem
    d.anon = d.mem_limit * float(d.rng.uniform(0.3, 0.8))
    d.swap = 1.0 if d.rng.random() < 0.3 else 0.0
    d.fault_s = float(d.rng.choice([15e-6, 120e-6]))  # zram vs a disk swap device
    d.touch = 0.0
    d.restart_s = 0.0
    if d.intent is B.MEMORY and d.mech is M.HOST_MEMORY_PRESSURE:
        d.swap = 1.0 if d.rng.random() < 0.75 else 0.0
        if d.swap:
            d.over = float(d.rng.uniform(0.05, 0.3))
            d.anon = d.mem_limit * (1.0 + d.over)
            d.stall = min(0.85, 1.0 - 1.0 / (1.0 + d.margin * 1.2))
            d.touch = d.stall / (d.fault_s * 0.6 * d.over / (1.0 + d.over))
            d.tags.append("swap")
        else:
            d.restart_s = float(d.rng.uniform(60.0, 150.0))
            d.tags.append("oom-kills")
    d.workers_anon = d.anon


def _power(d: SimpleNamespace) -> None:
    """The enforced power limit: often below TDP."""
    # --- GPU power: an enforced limit often below TDP, and boards that differ
    d.plim = d.gpu.tdp_w * (float(d.rng.uniform(0.55, 0.85)) if d.rng.random() < 0.4 else 1.0)
    if d.plim < d.gpu.tdp_w:
        d.tags.append("power-capped")


STAGES = (_intent, _hardware, _model, _communication, _input, _storage, _memory, _power)
