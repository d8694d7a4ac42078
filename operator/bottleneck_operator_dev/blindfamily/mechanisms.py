"""The mechanisms of each class, and how a job is settled on one of them.

Settling: put the mechanism's cause in place, set its free quantity so that removing its stage
would speed the step up by a drawn severity, then check the label with :func:`stages.label_of`.
When another stage gets in the way (a job meant to be IO-bound whose loader is also short of
cores), that stage is relieved the way its owner would (more workers, a faster disk, the page
cache, pinned memory, more overlap) and the job is settled again; a job that cannot be settled
is dropped and redrawn, so near ties never enter the labelled set.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator_dev.blindfamily import mech_device as dev
from bottleneck_operator_dev.blindfamily import mech_input as inp
from bottleneck_operator_dev.blindfamily.draft import Draft, comm_loads, stages_of
from bottleneck_operator_dev.blindfamily.hardware import STORAGE
from bottleneck_operator_dev.blindfamily.stages import STAGE_CLASS, label_of, solve, stage_of, without_stage

Setup = Callable[[Draft, np.random.Generator], bool]
Force = Callable[[Draft, float], bool]

_IMAGES = ("resnet", "vit", "asr", "video", "detection", "diffusion", "unet3d")
_HOSTMEM = ("dlrm", "gnn", "llm", "asr", "resnet", "video")


@dataclass(frozen=True)
class Mechanism:
    """One way a class bounds a job.

    Attributes:
        name: the mechanism's name (``BlindJob.mechanism``).
        cls: the class it belongs to.
        stage: the stage it works through (see ``stages.STAGE_CLASS``).
        weight: its share within the class.
        archetypes: the workloads it can happen to.
        setup, force: see :mod:`.mech_input`.
        severity: range of the speed-up its removal would give.
        link: for all-reduce mechanisms, the link that must be the slowest.
    """

    name: str
    cls: Bottleneck
    stage: str
    weight: float
    archetypes: tuple[str, ...]
    setup: Setup
    force: Force | None
    severity: tuple[float, float] = (1.4, 3.5)
    link: str | None = None


IO, CPU, NET, GPU, MEM = (Bottleneck.IO, Bottleneck.CPU, Bottleneck.INTERCONNECT, Bottleneck.GPU, Bottleneck.MEMORY)

MECHANISMS: tuple[Mechanism, ...] = (
    Mechanism("local-disk", IO, "read", 1.0, (*_IMAGES, "surrogate"), inp.local_disk, inp.force_read),
    Mechanism("block-volume", IO, "read", 0.8, (*_IMAGES, "surrogate"), inp.block_volume, inp.force_read),
    Mechanism("cgroup-io-throttled", IO, "read", 0.5, _IMAGES, inp.io_max, inp.force_read),
    Mechanism("nfs", IO, "read", 1.2, (*_IMAGES, "gnn", "surrogate"), inp.nfs, inp.force_read),
    Mechanism("object-store", IO, "read", 1.0, _IMAGES, inp.object_store, inp.force_read),
    Mechanism("mmap-dataset", IO, "read", 0.7, ("gnn", "surrogate", "resnet"), inp.mmap_dataset, inp.force_read),
    Mechanism("parallel-fs-rdma", IO, "read", 0.5, (*_IMAGES, "surrogate"), inp.lustre, inp.force_read),
    Mechanism("too-few-workers", CPU, "cpu", 1.2, _IMAGES, inp.few_workers, inp.force_cpu_cost),
    Mechanism(
        "single-process-loader",
        CPU,
        "cpu",
        0.5,
        ("resnet", "asr", "detection", "unet3d"),
        inp.single_process,
        inp.force_cpu_cost,
    ),
    Mechanism("cfs-throttled", CPU, "cpu", 1.2, _IMAGES, inp.cfs_limit, inp.force_cpu_limit),
    Mechanism(
        "saturated-augmentation",
        CPU,
        "cpu",
        1.0,
        ("resnet", "vit", "video", "detection", "asr", "unet3d"),
        inp.saturated,
        inp.force_cpu_cost,
    ),
    Mechanism(
        "ethernet-allreduce",
        NET,
        "comm",
        1.1,
        ("llm", "bert", "vit", "diffusion", "asr", "resnet", "dlrm"),
        dev.ethernet,
        dev.force_grad,
        (1.35, 3.0),
        "net",
    ),
    Mechanism(
        "rdma-allreduce",
        NET,
        "comm",
        0.9,
        ("llm", "diffusion", "vit", "dlrm", "asr"),
        dev.rdma,
        dev.force_grad,
        (1.35, 3.0),
        "rdma",
    ),
    Mechanism(
        "pcie-h2d",
        NET,
        "h2d",
        1.0,
        ("unet3d", "video", "surrogate", "diffusion", "dlrm"),
        dev.host_to_device,
        dev.force_h2d,
        (1.35, 3.0),
    ),
    Mechanism(
        "pcie-p2p-allreduce",
        NET,
        "comm",
        0.9,
        ("llm", "bert", "vit", "diffusion", "asr", "resnet"),
        dev.pcie_p2p,
        dev.force_grad,
        (1.35, 3.0),
        "p2p",
    ),
    Mechanism("nvlink-tensor-parallel", NET, "comm", 0.4, ("llm",), dev.nvlink_tp, dev.force_tp, (1.35, 2.5), "nvlink"),
    Mechanism(
        "compute-bound",
        GPU,
        "flop",
        1.6,
        ("llm", "vit", "bert", "diffusion", "resnet", "asr", "detection", "video"),
        dev.compute,
        None,
    ),
    Mechanism(
        "launch-bound",
        GPU,
        "launch",
        0.8,
        ("rl", "gnn", "bert", "surrogate"),
        dev.launch,
        dev.force_launch,
        (1.35, 3.0),
    ),
    Mechanism("fp32-compute", GPU, "flop", 0.8, ("surrogate", "resnet", "bert", "vit", "unet3d"), dev.fp32, None),
    Mechanism(
        "hbm-bandwidth", MEM, "hbm", 1.6, ("dlrm", "gnn", "llm", "surrogate"), dev.hbm, dev.force_hbm, (1.35, 3.0)
    ),
    Mechanism("host-swap", MEM, "memstall", 0.6, _HOSTMEM, dev.host_swap, dev.force_memstall, (1.6, 3.5)),
    Mechanism("host-reclaim", MEM, "memstall", 0.5, _HOSTMEM, dev.host_reclaim, dev.force_memstall, (1.6, 3.5)),
    Mechanism("cgroup-memory-limit", MEM, "memstall", 0.6, _HOSTMEM, dev.cgroup_memory, dev.force_memstall, (1.6, 3.5)),
)


def of_class(cls: Bottleneck) -> tuple[Mechanism, ...]:
    return tuple(m for m in MECHANISMS if m.cls is cls)


def settle(d: Draft, m: Mechanism, severity: float, rng: np.random.Generator) -> bool:
    """Force the mechanism, relieve whatever competes with it, and check that the label holds."""
    for _ in range(6):
        if m.force is not None:
            x = solve(stages_of(d), m.stage, severity)
            if x <= 0.0 or not m.force(d, x):
                return False
        s = stages_of(d)
        if label_of(s) is m.cls and stage_of(s) == m.stage and _link_ok(d, m):
            return True
        step = s.step
        gains = {k: step / max(without_stage(s, k).step, 1e-12) for k in STAGE_CLASS if k != m.stage}
        if not relieve(d, max(gains, key=lambda k: gains[k]), rng):
            return False
    return False


def _link_ok(d: Draft, m: Mechanism) -> bool:
    if m.link is None:
        return True
    loads = comm_loads(d)
    return bool(loads) and max(loads, key=lambda k: loads[k]) == m.link


def relieve(d: Draft, stage: str, rng: np.random.Generator) -> bool:
    """Take a competing stage out of the way as the job's owner would; False when nothing is left to try."""
    if stage == "read":
        return _relieve_read(d, rng)
    if stage == "cpu":
        return _relieve_cpu(d, rng)
    if stage == "h2d" and d.pcie_bps < 0.8 * d.board.pcie_bps:
        d.pcie_bps = 0.8 * d.board.pcie_bps
        return True
    if stage == "comm" and d.overlap < 0.9:
        d.overlap = 0.92
        return True
    if stage == "comm" and "bf16-grads" not in d.tags and d.grad_bytes > d.arch.params[0]:
        d.grad_bytes /= 2.0
        d.tags.append("bf16-grads")
        return True
    if stage == "launch" and "cuda-graphs" not in d.tags:
        d.launch_s /= 4.0
        d.tags.append("cuda-graphs")
        return True
    if stage == "hbm" and d.hbm_ratio > 0.5 and d.arch.kernel != "hbm":
        d.hbm_ratio = float(rng.uniform(0.3, 0.5))
        return True
    if stage == "memstall" and d.memstall > 0:
        d.memstall = 0.0
        return True
    return False


def _relieve_read(d: Draft, rng: np.random.Generator) -> bool:
    """The dataset into the page cache when it fits, else onto the fastest local disk."""
    if d.storage != "page-cache" and d.arch.dataset_gb[0] < 0.5 * d.cluster.node_mem_gb and d.io_mode == "":
        d.storage, d.storage_bps = "page-cache", float(rng.uniform(15e9, 40e9))
        return True
    fast = max(d.cluster.local, key=lambda k: STORAGE[k].high_bps)
    if d.storage_bps < STORAGE[fast].high_bps * 0.9:
        d.storage, d.storage_bps, d.io_mode = fast, STORAGE[fast].high_bps * float(rng.uniform(0.9, 1.0)), ""
        return True
    return False


def _relieve_cpu(d: Draft, rng: np.random.Generator) -> bool:
    """More workers, a higher limit, then decoding on the GPU (DALI)."""
    node_share = d.cluster.node_cpus / max(1, min(d.pods_per_node, d.n_pods))
    if d.serial_input:
        return False
    if d.cpu_limit is not None and d.cpu_limit < node_share:
        d.cpu_limit = float(min(node_share, round(d.cpu_limit * 2)))
        d.workers = max(d.workers, int(d.cpu_limit))
        d.cores = min(float(d.workers), d.cpu_limit - d.k)
        return True
    if d.cores < node_share - d.k - 1:
        d.workers = int(max(d.workers * 2, d.workers + 2))
        d.cores = min(float(d.workers), node_share - d.k)
        return True
    if "dali" not in d.tags:
        d.cpu_s *= float(rng.uniform(0.05, 0.15))
        d.flop_rate *= float(rng.uniform(0.85, 0.95))
        d.tags.append("dali")
        return True
    return False
