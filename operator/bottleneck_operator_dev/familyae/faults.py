"""The misconfigurations: one per Job, each taken from a guide practitioners read.

A fault changes one thing about a healthy configuration, by a severity ``s`` in [0, 1] that the label
module raises when the account says the fault did not yet become the limit. Each fault names the
class and contract mechanism it is meant to produce; the account decides whether it did.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from bottleneck_operator.contract.verdict import Bottleneck, Mechanism
from bottleneck_operator_dev.familyae import hardware as hw
from bottleneck_operator_dev.familyae.stages import MAIN_CORES_PER_RANK, build_terms
from bottleneck_operator_dev.familyae.workload import JobConfig

Apply = Callable[[JobConfig, float, np.random.Generator], JobConfig]


def _lerp(a: float, b: float, s: float) -> float:
    return a + (b - a) * s


@dataclass(frozen=True)
class Fault:
    """One documented misconfiguration.

    Attributes:
        key: its name (a tag).
        bottleneck, mechanism: what it is meant to make the Job's limit.
        source: the guide that documents it (resolved in docs/familyae.md).
        needs: what the healthy Job must have for the fault to exist (a vision loader, several nodes...).
        apply: the change, at a severity in [0, 1].
    """

    key: str
    bottleneck: Bottleneck
    mechanism: Mechanism
    source: str
    needs: frozenset[str]
    apply: Apply


def _gpu_pace(cfg: JobConfig) -> float:
    t = build_terms(cfg)
    return float(t.math[0] + t.hbm[0])


def too_few_workers(cfg: JobConfig, s: float, rng: np.random.Generator) -> JobConfig:
    # num_workers defaults to 0 (loading in the training process) [PT TUNING]; 1-2 workers is the
    # other common leftover from a notebook.
    workers = int(np.floor(cfg.workers * _lerp(0.35, 0.0, s)))
    return replace(cfg, workers=min(workers, 2), variant=f"num_workers={min(workers, 2)}")


def cpu_quota(cfg: JobConfig, s: float, rng: np.random.Generator) -> JobConfig:
    # A CFS quota (cpu.max, set from the container's CPU limit) below what decoding needs throttles
    # every thread of the pod [CGROUP V2].
    n = cfg.batch * cfg.gpus_per_pod
    demand = n * cfg.decode_s / _gpu_pace(cfg) + MAIN_CORES_PER_RANK * cfg.gpus_per_pod
    limit = max(1.0, float(np.round(demand * _lerp(0.6, 0.15, s))))
    workers = max(cfg.workers, int(np.ceil(limit * 1.5 / cfg.gpus_per_pod)))
    return replace(cfg, cpu_limit=limit, workers=workers, variant=f"cpu-limit={limit:g}")


def cpu_saturated(cfg: JobConfig, s: float, rng: np.random.Generator) -> JobConfig:
    # Heavy CPU-side augmentation (RandAugment-style chains, decoding at full resolution) with no
    # limit: the node's cores run out [DALI].
    workers = int(np.ceil(cfg.free_cores / cfg.gpus_per_pod)) + 1
    factor = _lerp(2.0, 6.0, s)
    return replace(cfg, decode_s=cfg.decode_s * factor, cpu_limit=0.0, workers=min(workers, 32), variant="cpu-augment")


def _cache_room_hit(cfg: JobConfig) -> float:
    """Share of reads the page cache serves: what fits of the dataset in the pod's spare memory."""
    return float(min(0.9, max(0.0, cfg.mem_limit - cfg.anon_bytes) / cfg.dataset_bytes))


def nfs_small_files(cfg: JobConfig, s: float, rng: np.random.Generator) -> JobConfig:
    # One file per sample on a network filesystem: each read costs lookups and a read round trip
    # [EFS PERF]; many small files are the classic slow case [PT TUNING: location of the data].
    miss = 1.0 - _cache_room_hit(cfg)
    store = hw.nfs(min(cfg.node.eth_gbps / 8 * 0.8, float(rng.uniform(0.3, 1.5))), _lerp(2e-3, 20e-3, s))
    ops = float(rng.uniform(2.0, 3.0)) * miss
    return replace(cfg, storage=store, read_ops=ops, read_bytes=cfg.read_bytes * miss, variant="small-files")


def cold_object_store(cfg: JobConfig, s: float, rng: np.random.Generator) -> JobConfig:
    # One GET per sample from an object store, no page cache in between [S3 PERF].
    store = hw.object_store(min(cfg.node.eth_gbps / 8 * 0.6, float(rng.uniform(1.0, 3.0))), _lerp(0.015, 0.15, s))
    return replace(cfg, storage=store, read_ops=1.0, variant="get-per-sample")


def slow_block_volume(cfg: JobConfig, s: float, rng: np.random.Generator) -> JobConfig:
    # A network block volume left at its baseline (gp3: 3,000 IOPS, 125 MiB/s) [EBS GP3], holding a
    # dataset far larger than the page cache the pod's limit leaves.
    miss = 1.0 - _cache_room_hit(cfg)
    base = hw.GP3_BASELINE
    mib = _lerp(600.0, base.gbs * hw.GB / hw.MIB, s)
    iops = _lerp(12_000.0, base.iops, s)
    store = hw.Storage("blockvol", mib * hw.MIB / hw.GB, iops, base.lat_s, "gp3")
    return replace(cfg, storage=store, read_ops=miss, read_bytes=cfg.read_bytes * miss, variant=f"gp3-{mib:.0f}MiBps")


def narrow_pcie(cfg: JobConfig, s: float, rng: np.random.Generator) -> JobConfig:
    # A card in a narrow slot or a link trained down (nvidia-smi shows the current width and
    # generation below the maximum) [CUDA BP: host-device bandwidth].
    widths = (8, 4, 2, 1)
    width = widths[min(3, int(s * 4))]
    gen = cfg.pcie_gen if s < 0.7 else max(1, cfg.pcie_gen - 2)
    h2d = max(cfg.h2d_bytes, 3.0 * cfg.size * cfg.size * 4.0)  # the float32 host-side normalise
    return replace(cfg, pcie_width=width, pcie_gen=gen, h2d_bytes=h2d, variant=f"pcie-gen{gen}-x{width}")


def p2p_disabled(cfg: JobConfig, s: float, rng: np.random.Generator) -> JobConfig:
    # NCCL_P2P_DISABLE=1: intra-node traffic goes through host memory (SHM) over PCIe [NCCL ENV].
    gbs = hw.pcie_gbs(cfg.pcie_gen, cfg.pcie_width) * _lerp(0.45, 0.12, s)
    return replace(cfg, intra="shm", intra_gbs=gbs, variant="NCCL_P2P_DISABLE=1")


def ib_disabled(cfg: JobConfig, s: float, rng: np.random.Generator) -> JobConfig:
    # NCCL_IB_DISABLE=1 (or no RDMA device in the pod): NCCL falls back to TCP sockets [NCCL ENV].
    gbps = _lerp(float(cfg.node.eth_gbps), 10.0, s)
    return replace(
        cfg, fabric=hw.Fabric("tcp", 1, gbps), net_eff=float(rng.uniform(0.45, 0.65)), variant="NCCL_IB_DISABLE=1"
    )


def one_nic(cfg: JobConfig, s: float, rng: np.random.Generator) -> JobConfig:
    # NCCL_IB_HCA naming one adapter, or NCCL_SOCKET_IFNAME a slow interface [NCCL ENV].
    if cfg.fabric.rdma and cfg.fabric.ports > 1:
        fab = hw.Fabric(cfg.fabric.kind, 1, cfg.fabric.port_gbps * _lerp(1.0, 0.25, s))
        return replace(cfg, fabric=fab, variant="NCCL_IB_HCA=one-port")
    fab = hw.Fabric("tcp", 1, _lerp(25.0, 5.0, s))
    return replace(cfg, fabric=fab, net_eff=float(rng.uniform(0.45, 0.65)), variant="NCCL_SOCKET_IFNAME=slow-nic")


def tiny_batch(cfg: JobConfig, s: float, rng: np.random.Generator) -> JobConfig:
    # A tiny per-GPU batch in eager mode with a for-loop optimizer: the host thread cannot issue
    # kernels as fast as the GPU runs them; CUDA graphs / torch.compile are the cure [CUDA GRAPH BP],
    # foreach/fused optimizers cut the per-parameter kernels [TORCH OPTIM].
    batch = max(1, int(cfg.batch * _lerp(0.1, 0.0, s)))
    tensors = 161.0 if cfg.model.family == "vision" and cfg.model.layers == 16 else cfg.model.layers * 12.0 + 4.0
    kernels = cfg.kernels + tensors * 6.0
    return replace(
        cfg, batch=batch, kernels=kernels, launch_s=cfg.launch_s * _lerp(1.0, 1.6, s), variant="eager-foreach-off"
    )


def more_math(cfg: JobConfig, s: float, rng: np.random.Generator) -> JobConfig:
    # The step needs more math than the GPU gives: FP32 matmuls (TF32 off by default since PyTorch
    # 1.12 [PT TF32], or AMP left off), a power limit well below TDP, or a bigger model.
    pick = rng.random()
    if pick < 0.45:
        return replace(cfg, precision="fp32", hbm_bytes=cfg.hbm_bytes * 1.8, variant="fp32-matmul")
    if pick < 0.7:
        return replace(cfg, power_limit_w=cfg.gpu.tdp_w * _lerp(0.65, 0.35, s), variant="power-capped")
    k = _lerp(1.6, 3.5, s)
    return replace(cfg, flops=cfg.flops * k, hbm_bytes=cfg.hbm_bytes * k**0.5, variant=f"model-x{k:.1f}")


def unfused_hbm(cfg: JobConfig, s: float, rng: np.random.Generator) -> JobConfig:
    # Memory-bound kernels stream device memory: eager attention that materialises the score matrix
    # instead of SDPA/FlashAttention, channels-first convolutions under AMP, or unfused pointwise
    # chains [PT TUNING: fuse pointwise, channels_last], [NV MEMLIMITED].
    if cfg.model.family == "lm":
        variant = "eager-attention"
    else:
        variant = "channels-first-amp" if rng.random() < 0.5 else "unfused-pointwise"
    return replace(cfg, hbm_bytes=cfg.hbm_bytes * _lerp(3.0, 10.0, s), variant=variant)


def cache_over_limit(cfg: JobConfig, s: float, rng: np.random.Generator) -> JobConfig:
    # The dataset cached in process memory (a dict of decoded samples, a copy-on-access list shared
    # with workers [TORCH DATA]) grows past the pod's memory limit: reclaim, swap-in and, without
    # swap, OOM kills [CGROUP V2].
    over = _lerp(0.08, 0.7, s)
    cache = max(cfg.mem_limit - cfg.anon_bytes, 1e9) / (1.0 - over)
    # a sample's own pages and the interpreter's objects it touches (assumed)
    pages = (cfg.h2d_bytes / 4096.0 + float(rng.uniform(30, 250))) * (1.0 + s)
    if cfg.swap == "disk":
        lat = float(rng.uniform(0.2e-3, 0.6e-3)) / 4.0  # swap readahead brings clusters of pages
    elif cfg.swap == "zram":
        lat = float(rng.uniform(15e-6, 40e-6))
    else:
        lat = float(rng.uniform(0.1e-3, 0.3e-3)) * 0.5  # refaults of evicted file pages
    oom = _lerp(4.0, 30.0, s) if cfg.swap == "none" else 0.0
    return replace(
        cfg, cache_bytes=cache, fault_pages=pages * over, fault_lat_s=lat, oom_per_hour=oom, variant=f"swap-{cfg.swap}"
    )


_B, _M = Bottleneck, Mechanism
FAULTS: tuple[Fault, ...] = (
    Fault("too-few-loader-workers", _B.CPU, _M.TOO_FEW_WORKERS, "PT TUNING", frozenset({"vision", "cpu_decode"}), too_few_workers),
    Fault("cpu-limit-below-decode-need", _B.CPU, _M.THROTTLED, "CGROUP V2", frozenset({"vision", "cpu_decode"}), cpu_quota),
    Fault("cpu-side-augmentation", _B.CPU, _M.SATURATED, "DALI", frozenset({"vision", "cpu_decode"}), cpu_saturated),
    Fault("small-files-on-nfs", _B.IO, _M.NETWORK_STORAGE, "EFS PERF", frozenset({"vision"}), nfs_small_files),
    Fault("object-get-per-sample", _B.IO, _M.NETWORK_STORAGE, "S3 PERF", frozenset({"vision"}), cold_object_store),
    Fault("block-volume-at-baseline", _B.IO, _M.LOCAL_DISK, "EBS GP3", frozenset({"vision"}), slow_block_volume),
    Fault("narrow-pcie-link", _B.INTERCONNECT, _M.PCIE, "CUDA BP", frozenset({"vision"}), narrow_pcie),
    Fault("nccl-p2p-disabled", _B.INTERCONNECT, _M.PCIE, "NCCL ENV", frozenset({"multigpu", "big_grads"}), p2p_disabled),
    Fault("nccl-ib-disabled", _B.INTERCONNECT, _M.NETWORK, "NCCL ENV", frozenset({"multinode", "big_grads", "rdma_node"}), ib_disabled),
    Fault("nccl-one-nic", _B.INTERCONNECT, _M.NETWORK, "NCCL ENV", frozenset({"multinode", "big_grads"}), one_nic),
    Fault("tiny-batch-eager", _B.GPU, _M.LAUNCH_BOUND, "CUDA GRAPH BP", frozenset(), tiny_batch),
    Fault("more-math-than-gpu", _B.GPU, _M.COMPUTE, "PT TF32", frozenset(), more_math),
    Fault("unfused-memory-bound-kernels", _B.MEMORY, _M.HBM_BANDWIDTH, "PT TUNING", frozenset(), unfused_hbm),
    Fault("dataset-cache-over-memory-limit", _B.MEMORY, _M.HOST_MEMORY_PRESSURE, "CGROUP V2", frozenset({"vision"}), cache_over_limit),
)  # fmt: skip


def faults_for(mechanism: Mechanism) -> tuple[Fault, ...]:
    """The faults meant to produce one mechanism."""
    return tuple(f for f in FAULTS if f.mechanism is mechanism)
