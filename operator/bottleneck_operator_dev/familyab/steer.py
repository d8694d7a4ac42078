"""Steering a draw toward a block's intended class, without deciding the label.

A fleet draw lands on GPU or CPU more often than on the other classes (see docs/familyab.md), so
after a few plain draws the family draws from a tilted distribution: a workload kind and settings
that make the intended class's stage likely to be the long one. The label still comes from the
physics (:mod:`.label`); a tilted draw whose physics says otherwise is rejected like any other.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator_dev.familyab.config import Config
from bottleneck_operator_dev.familyab.fleet import Rng, draw_config, draw_format, draw_storage, fits, pick_str
from bottleneck_operator_dev.familyab.hardware import GPUS, NODE_TYPES, Nic
from bottleneck_operator_dev.familyab.stages import working_set_gib

# Workload kinds a tilted draw starts from, per intended class.
TILT_KINDS: dict[Bottleneck, dict[str, float]] = {
    Bottleneck.IO: {"cv": 0.55, "speech": 0.25, "small": 0.2},
    Bottleneck.CPU: {"cv": 0.5, "speech": 0.3, "rec": 0.2},
    Bottleneck.INTERCONNECT: {"nlp": 0.45, "rec": 0.25, "cv": 0.15, "gnn": 0.15},
    Bottleneck.GPU: {"nlp": 0.35, "cv": 0.25, "speech": 0.1, "small": 0.3},
    Bottleneck.MEMORY: {"rec": 0.35, "cv": 0.25, "gnn": 0.2, "nlp": 0.2},
}


def placed(cfg: Config, gpus_per_pod: int, pods: int, pods_per_node: int) -> Config:
    """``cfg`` placed anew; the pod's limits and its processes' memory follow its GPU count."""
    ratio = gpus_per_pod / cfg.gpus_per_pod
    return dataclasses.replace(
        cfg,
        gpus_per_pod=gpus_per_pod,
        pods=pods,
        pods_per_node=max(1, min(pods_per_node, cfg.node.gpus // gpus_per_pod)),
        cpu_limit=cfg.cpu_limit * ratio if cfg.cpu_limit else None,
        mem_limit_gib=cfg.mem_limit_gib * ratio if cfg.mem_limit_gib else None,
        base_gib=cfg.base_gib * ratio,
    )


def with_gpu(rng: Rng, cfg: Config, keys: tuple[str, ...]) -> Config:
    """``cfg`` moved to one of the GPUs ``keys`` that holds its model, on a server of that GPU."""
    options = [k for k in keys if fits(cfg.model, GPUS[k])] or ["a100"]
    gpu = GPUS[str(rng.choice(options))]
    node = NODE_TYPES[gpu.key][int(rng.integers(len(NODE_TYPES[gpu.key])))]
    precision = cfg.precision
    if precision == "tf32" and gpu.tf32_tflops <= 0:
        precision = "amp"
    moved = dataclasses.replace(cfg, gpu=gpu, node=node, precision=precision, nb_cpu=min(cfg.nb_cpu, node.cpus * 0.9))
    return placed(moved, min(cfg.gpus_per_pod, node.gpus), cfg.pods, cfg.pods_per_node)


def tilt_io(rng: Rng, cfg: Config) -> Config:
    """Storage that cannot keep up: a busy filer, few object streams, a SATA drive or a shared NVMe."""
    kind = pick_str(rng, {"nfs": 0.3, "object": 0.25, "lustre": 0.1, "sata": 0.2, "nvme": 0.15})
    store = draw_storage(rng, kind)
    cfg = with_gpu(rng, cfg, ("a100", "h100", "v100", "a10"))
    busy = store.node_gbs * 1e9 * rng.uniform(0.7, 0.95)  # neighbours reading the same local drive
    return dataclasses.replace(
        cfg,
        storage=store,
        fmt=draw_format(rng, cfg.model.kind, store),
        storage_share=float(rng.uniform(0.05, 0.5)),
        streams=int(rng.integers(1, 4)),
        cached=float(rng.uniform(0.0, 0.3)),
        nb_disk_bps=busy if kind == "nvme" else cfg.nb_disk_bps,
        cpu_limit=None,
        workers=int(rng.choice([6, 8, 12, 16])),
        dali=False,
    )


def tilt_cpu(rng: Rng, cfg: Config) -> Config:
    """A loader short of cores: too few workers, a tight CPU limit, or a node full of neighbours."""
    bind = pick_str(rng, {"too-few-workers": 0.4, "throttled": 0.4, "saturated": 0.2})
    cfg = with_gpu(rng, cfg, ("a100", "h100", "v100", "a10"))
    cfg = dataclasses.replace(cfg, dali=False, storage=draw_storage(rng, "nvme"), cached=0.95)
    if bind == "too-few-workers":
        return dataclasses.replace(cfg, workers=int(rng.choice([1, 2, 3])), cpu_limit=None)
    if bind == "throttled":
        return dataclasses.replace(cfg, workers=8, cpu_limit=float(rng.choice([2, 3, 4]) * cfg.gpus_per_pod))
    return dataclasses.replace(cfg, workers=16, cpu_limit=None, nb_cpu=cfg.node.cpus * rng.uniform(0.75, 0.92))


def tilt_interconnect(rng: Rng, cfg: Config) -> Config:
    """Gradients over a slow network, or tensors over PCIe (no NVLink, host-resident features)."""
    path = pick_str(rng, {"network": 0.6, "pcie": 0.4})
    if path == "network":
        nodes = int(rng.choice([2, 4]))
        nic = Nic("eth", float(rng.choice([10.0, 25.0])), 1, False)
        return dataclasses.replace(
            placed(cfg, cfg.node.gpus, nodes, 1),
            nic=nic,
            net_eff=float(rng.uniform(0.35, 0.6)),
            gdr=False,
            overlap_comm=float(rng.uniform(0.2, 0.6)),
        )
    cfg = with_gpu(rng, cfg, ("a10", "l4", "t4", "h100pcie"))
    return dataclasses.replace(
        placed(cfg, cfg.node.gpus if cfg.model.kind != "gnn" else 1, 1, 1),
        pinned=bool(rng.random() < 0.3),
        precision="amp",
        arch="host" if cfg.model.kind == "rec" else cfg.arch,
    )


def tilt_gpu(rng: Rng, cfg: Config) -> Config:
    """Everything but the GPU is generous; the GPU is modest, or the kernels are tiny."""
    if cfg.model.kind == "small":
        cfg = with_gpu(rng, cfg, ("a100", "h100"))
        return dataclasses.replace(cfg, launch_us=float(rng.uniform(8.0, 20.0)), cpu_limit=None)
    cfg = with_gpu(rng, cfg, ("v100", "t4", "a10", "l4", "p100"))
    return dataclasses.replace(
        placed(cfg, cfg.gpus_per_pod, 1, 1),
        precision=str(rng.choice(["fp32", "amp"])),
        storage=draw_storage(rng, "nvme"),
        cached=0.95,
        cpu_limit=None,
        workers=16,
        nb_cpu=0.0,
        mem_limit_gib=None,
        launch_us=1.0,
    )


def tilt_memory(rng: Rng, cfg: Config) -> Config:
    """Embedding gathers on a fast-math GPU, or a pod whose working set outgrows its limit."""
    if rng.random() < 0.5:
        cfg = with_gpu(rng, cfg, ("h100", "a100", "l4"))
        return dataclasses.replace(
            placed(cfg, cfg.gpus_per_pod, 1, 1),
            precision="amp",
            arch="a2a" if cfg.arch in ("host", "ps") else cfg.arch,
            hbm_scale=1.0,
            launch_us=1.0,
            storage=draw_storage(rng, "nvme"),
            cached=0.95,
            cpu_limit=None,
            workers=16,
        )
    ws = working_set_gib(cfg)
    return dataclasses.replace(
        cfg,
        mem_limit_gib=float(np.ceil(ws / rng.uniform(0.95, 1.12))),
        swap=bool(rng.random() < 0.35),
    )


TILTS = {
    Bottleneck.IO: tilt_io,
    Bottleneck.CPU: tilt_cpu,
    Bottleneck.INTERCONNECT: tilt_interconnect,
    Bottleneck.GPU: tilt_gpu,
    Bottleneck.MEMORY: tilt_memory,
}


def steered_config(rng: Rng, intent: Bottleneck) -> Config:
    """A fleet draw of a kind suited to ``intent``, tilted toward it."""
    cfg = draw_config(rng, pick_str(rng, TILT_KINDS[intent]))
    return TILTS[intent](rng, cfg)
