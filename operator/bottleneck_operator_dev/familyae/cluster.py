"""The draw of a healthy, well-tuned Job: hardware, layout, workload, then the input side sized to it.

"Well tuned" follows the guides a team would read: mixed precision on tensor cores, enough DataLoader
workers with pinned memory (PyTorch Performance Tuning Guide), GPU decoding where the CPUs cannot keep
up (DALI), data staged or sharded so storage keeps pace, NCCL over RDMA where the nodes have it. The
input side is then sized so that each stage takes a drawn share of the GPU's compute time, which
leaves the healthy Job limited by its GPU's math, as DESIGN.md describes the healthy state.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from bottleneck_operator_dev.familyae import hardware as hw
from bottleneck_operator_dev.familyae.stages import MAIN_CORES_PER_RANK, account, build_terms
from bottleneck_operator_dev.familyae.workload import (
    LM_MM_EFF,
    VISION_MM_EFF,
    JobConfig,
    ModelKind,
    draw_model,
    fits_batch,
    hbm_bytes_for,
    lm_costs,
    precision_factors,
    vision_costs,
)

IMAGENET_JPEG_BYTES = 110e3  # derived: ImageNet-1k train (~140 GB) over 1.28 M images [IMAGENET]


def _u(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(rng.uniform(lo, hi))


def draw_gpu_node(rng: np.random.Generator, needs: frozenset[str]) -> tuple[hw.Gpu, hw.NodeShape]:
    """A GPU model (weighted by how common it is) and a node built around it."""
    weights = np.array(hw.GPU_WEIGHTS)
    if "rdma_node" in needs:  # a fault that disables RDMA needs a node that has it
        weights = weights * np.array([any(f.rdma for f in hw.NODES_FOR[g.key][0].fabrics) for g in hw.GPUS])
    gpu = hw.GPUS[int(rng.choice(len(hw.GPUS), p=weights / weights.sum()))]
    shapes = hw.NODES_FOR[gpu.key]
    return gpu, shapes[int(rng.integers(0, len(shapes)))]


def draw_layout(rng: np.random.Generator, node: hw.NodeShape, needs: frozenset[str]) -> tuple[int, int, int]:
    """(GPUs per pod, pods, pods per node)."""
    sizes = (1, 2, 4, 8) if node.gpus == 8 else (1, 2, 4)
    probs = np.array((0.15, 0.12, 0.23, 0.5) if node.gpus == 8 else (0.25, 0.2, 0.55))
    gpp = int(rng.choice(sizes, p=probs))
    pods = int(rng.choice((1, 2, 3, 4, 6, 8), p=(0.3, 0.25, 0.08, 0.2, 0.05, 0.12)))
    if "multinode" in needs:
        pods = max(pods, int(rng.integers(2, 5)))
    if "multigpu" in needs and gpp < 2:
        gpp = int(rng.choice([s for s in sizes if s >= 2]))
    fit = node.gpus // gpp
    ppn = min(pods, int(rng.integers(1, fit + 1)))
    if "multinode" in needs:
        ppn = max(1, min(ppn, pods // 2))
    return gpp, pods, ppn


def _vision(rng: np.random.Generator, gpu: hw.Gpu, kind: ModelKind, precision: str) -> dict[str, float]:
    size = int(rng.choice((160, 192, 224, 224, 224, 256)))
    flops, act = vision_costs(kind, size)
    mm_eff = VISION_MM_EFF[kind.key]
    _eff, act_factor = precision_factors(gpu, precision, mm_eff)
    batch = fits_batch(gpu, kind, act * act_factor, (16, 32, 48, 64, 96, 128, 192, 256))
    fp32_input = rng.random() < 0.6  # ToTensor+Normalize on the CPU ships float32 (torchvision recipe)
    return {
        "size": size,
        "flops": flops,
        "mm_eff": mm_eff,
        "hbm_bytes": hbm_bytes_for(flops, mm_eff, _u(rng, *kind.hbm_share)) * act_factor,
        "batch": batch,
        "read_bytes": IMAGENET_JPEG_BYTES * _u(rng, 0.8, 1.3),
        "dataset_bytes": IMAGENET_JPEG_BYTES * (1.28e6 if rng.random() < 0.7 else 14e6),
        "decode_s": _u(rng, 1 / 200, 1 / 50) * _u(rng, 1.0, 1.3),  # 50-200 JPEG/s per core [TELEMETRY]
        "h2d_bytes": 3.0 * size * size * (4.0 if fp32_input else 1.0),
        "grad_bytes": 4.0 * kind.params,
    }


def _lm(rng: np.random.Generator, gpu: hw.Gpu, kind: ModelKind) -> dict[str, float]:
    seq = int(rng.choice((1024, 2048)))
    flops, act = lm_costs(kind, seq)
    mm_eff = LM_MM_EFF * (0.8 if kind.params < 2e8 else 1.0)
    batch = fits_batch(gpu, kind, act, (1, 2, 4, 6, 8, 12, 16, 24, 32))
    batch = min(batch, max(1, 65536 // seq))
    return {
        "size": seq,
        "flops": flops,
        "mm_eff": mm_eff,
        "hbm_bytes": hbm_bytes_for(flops, mm_eff, _u(rng, *kind.hbm_share)),
        "batch": batch,
        "read_bytes": seq * 2.0,  # uint16 token ids from a memory-mapped shard
        "dataset_bytes": _u(rng, 20e9, 400e9),
        "decode_s": _u(rng, 5e-5, 3e-4),  # slicing a window and collating (assumed)
        "h2d_bytes": seq * 8.0 * 2,  # int64 inputs and labels
        "grad_bytes": (2.0 if rng.random() < 0.3 else 4.0) * kind.params,  # bf16 compression hook or fp32
    }


def draw_storage(rng: np.random.Generator, node: hw.NodeShape) -> tuple[hw.Storage, float]:
    """Healthy storage and requests per sample: local NVMe with files, or sharded remote reads."""
    pick = rng.random()
    if pick < 0.45:
        return hw.nvme(node.nvme_gbs * _u(rng, 0.6, 1.0)), 1.0
    shard_ops = _u(rng, 0.002, 0.02)  # one request per 50-500 samples (tar/WebDataset shards)
    if pick < 0.75:
        return hw.nfs(min(_u(rng, 0.8, 2.5), node.eth_gbps / 8 * 0.8), _u(rng, 0.5e-3, 2e-3)), shard_ops
    return hw.object_store(min(node.eth_gbps / 8 * 0.6, _u(rng, 1.0, 5.0)), _u(rng, 0.02, 0.08)), shard_ops


def draw_fabric(rng: np.random.Generator, node: hw.NodeShape) -> tuple[hw.Fabric, float]:
    """The node's fabric and the share of its line rate NCCL reaches (assumed ranges)."""
    fabric = node.fabrics[0] if rng.random() < 0.8 else node.fabrics[int(rng.integers(0, len(node.fabrics)))]
    return fabric, _u(rng, 0.75, 0.9) if fabric.rdma else _u(rng, 0.45, 0.7)


def draw_base(rng: np.random.Generator, needs: frozenset[str]) -> JobConfig:
    """Hardware, layout and workload, before the input side is sized."""
    gpu, node = draw_gpu_node(rng, needs)
    gpp, pods, ppn = draw_layout(rng, node, needs)
    kind = draw_model(rng, needs)
    precision = "bf16" if gpu.bf16 and rng.random() < 0.75 else "fp16"
    work = _vision(rng, gpu, kind, precision) if kind.family == "vision" else _lm(rng, gpu, kind)
    fabric, net_eff = draw_fabric(rng, node)
    storage, ops = draw_storage(rng, node)
    nvlink = gpu.nvlink_gbs > 0
    free_gpus = node.gpus - gpp * ppn
    neighbours = int(rng.integers(1, min(3, free_gpus) + 1)) if free_gpus > 0 and rng.random() < 0.8 else 0
    neighbours += int(rng.random() < 0.2)  # CPU-only neighbours (data jobs, daemons)
    return JobConfig(
        gpu=gpu, node=node, gpus_per_pod=gpp, pods=pods, pods_per_node=ppn, neighbours=neighbours,
        neighbour_cores=node.cpus * _u(rng, 0.02, 0.3) if neighbours else 0.0,
        fabric=fabric, net_eff=net_eff, intra="nvlink" if nvlink else "pcie",
        intra_gbs=gpu.nvlink_gbs * _u(rng, 0.7, 0.85) if nvlink else hw.pcie_gbs(gpu.pcie_gen, 16) * _u(rng, 0.6, 0.85),
        pcie_gen=gpu.pcie_gen, pcie_width=16, pageable=1.0, storage=storage,
        swap=str(rng.choice(("none", "disk", "zram"), p=(0.7, 0.2, 0.1))),  # LimitedSwap is opt-in [K8S SWAP]
        power_limit_w=gpu.tdp_w if rng.random() < 0.85 else gpu.tdp_w * _u(rng, 0.8, 0.95),
        model=kind, precision=precision, size=int(work["size"]), batch=int(work["batch"]),
        flops=work["flops"], mm_eff=work["mm_eff"], hbm_bytes=work["hbm_bytes"],
        kernels=3.0 * kind.fwd_kernels + 60.0, launch_s=_u(rng, 6e-6, 12e-6),
        read_bytes=work["read_bytes"], read_ops=ops if kind.family == "vision" else 0.002,
        dataset_bytes=work["dataset_bytes"], decode_s=work["decode_s"], gpu_decode=False,
        h2d_bytes=work["h2d_bytes"], grad_bytes=work["grad_bytes"], workers=4, cpu_limit=0.0,
        mem_limit=0.0, anon_bytes=0.0,
    )  # fmt: skip


def size_input(cfg: JobConfig, rng: np.random.Generator, needs: frozenset[str]) -> JobConfig:
    """Workers, CPU limit, memory limit and storage sized to the GPU's pace (the tuning a team does)."""
    t = build_terms(cfg)
    gpu_time = float(t.math[0] + t.hbm[0])
    n = cfg.batch * cfg.gpus_per_pod
    if n * cfg.decode_s / gpu_time > 0.5 * cfg.free_cores and "cpu_decode" not in needs:
        cfg = replace(cfg, decode_s=cfg.decode_s * _u(rng, 0.12, 0.2), gpu_decode=True)  # DALI
    per_sample = cfg.decode_s + cfg.read_ops * cfg.storage.lat_s
    total = n * per_sample / (_u(rng, 0.35, 0.6) * gpu_time)
    workers = int(np.clip(np.ceil(total / cfg.gpus_per_pod), 2, 16))
    workers = max(2, min(workers, int(cfg.free_cores * 0.9 / cfg.gpus_per_pod)))
    demand = n * cfg.decode_s / gpu_time + MAIN_CORES_PER_RANK * cfg.gpus_per_pod
    limit = 0.0
    if rng.random() < 0.6:
        limit = float(min(np.ceil(max(demand * _u(rng, 1.5, 2.2), workers * cfg.gpus_per_pod)), cfg.free_cores))
    anon = cfg.gpus_per_pod * _u(rng, 6, 12) * hw.GIB + workers * cfg.gpus_per_pod * _u(rng, 0.4, 1.2) * hw.GIB
    room = cfg.node.mem_gib * hw.GIB * cfg.pod_share * 0.95
    mem_limit = float(np.ceil(max(min(anon * _u(rng, 1.6, 2.6), room), anon * 1.3) / hw.GIB) * hw.GIB)
    cfg = replace(cfg, workers=workers, cpu_limit=limit, anon_bytes=anon, mem_limit=mem_limit)
    node_bytes = n * cfg.pods_per_node * cfg.read_bytes
    if node_bytes / (cfg.storage.gbs * 1e9) > 0.6 * gpu_time:  # stage the data on local NVMe
        cfg = replace(cfg, storage=hw.nvme(cfg.node.nvme_gbs), read_ops=min(cfg.read_ops, 1.0))
    if cfg.pods > 1 and not cfg.fabric.rdma and account(cfg).limit == "comm":
        rdma = [f for f in cfg.node.fabrics if f.rdma]
        if rdma:
            cfg = replace(cfg, fabric=rdma[0], net_eff=_u(rng, 0.75, 0.9))
    return cfg


def draw_healthy(rng: np.random.Generator, needs: frozenset[str], tries: int = 12) -> JobConfig:
    """A well-tuned Job whose step is limited by its GPU's math (redrawn, bounded, until it is)."""
    cfg = size_input(draw_base(rng, needs), rng, needs)
    for _ in range(tries - 1):
        if account(cfg).limit == "math" and not ("cpu_decode" in needs and cfg.gpu_decode):
            break
        cfg = size_input(draw_base(rng, needs), rng, needs)
    return cfg
