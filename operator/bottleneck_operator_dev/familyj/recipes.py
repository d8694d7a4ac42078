"""Recipes: how a job of each class and mechanism comes about, then tuned until the step model agrees.

A recipe sets up the circumstances a class arises from on real clusters (a throttled pod, a bucket
read over HTTP, a PCIe-only box doing all-reduce, a tokeniser in the training process, a pod at its
memory limit with swap on, ...) and names the demand that makes it bind. :func:`settle` then picks
the smallest strength of that demand at which removing its class shortens the step most, by a margin
drawn per job: most jobs clearly bound, some borderline, some with a close rival stage raised first.
The label is never set here: the step model's account decides it afterwards.
"""

from __future__ import annotations

import math

import numpy as np

from bottleneck_operator.contract.verdict import Bottleneck, Mechanism
from bottleneck_operator_dev.familyj.hardware import BOARDS, STORAGE, Board
from bottleneck_operator_dev.familyj.plan import Plan, Rng
from bottleneck_operator_dev.familyj.stepmodel import nominal, savings

_CANDIDATES = np.geomspace(0.02, 100.0, 64)[None, :]


def knobs_of(plan: Plan, cls: Bottleneck) -> tuple[str, ...]:
    """The demands that make a class bind in this plan."""
    if cls is Bottleneck.IO:
        return ("read_s",)
    if cls is Bottleneck.CPU:
        return ("hostopt_s",) if plan.hostopt_s else ("main_s",) if "main-process" in plan.tags else ("decode_s",)
    if cls is Bottleneck.INTERCONNECT:
        return ("comm_s",) if (plan.comm_s and plan.mechanism != Mechanism.PCIE.value) or plan.pcie_peer else ("h2d_s",)
    if cls is Bottleneck.MEMORY:
        return ("swap_s", "loader_mem") if plan.swap_s else ("memk_byte_s",)
    return ("gemm_flop_s", "small_s")


def settle(plan: Plan, cls: Bottleneck, margin: float, speedup: float = 1.0) -> bool:
    """Scale the class's demands to the smallest strength that makes it bind by ``margin``.

    Args:
        plan: the job, changed in place.
        cls: the class to make bind.
        margin: the class's saving over the runner-up's that is asked for.
        speedup: the least speed-up removing the class must give (how severe the bottleneck is).

    Returns:
        False when no strength in the range makes it bind (the caller draws again).
    """
    names = knobs_of(plan, cls)
    scale = {name: _CANDIDATES for name in names}
    base, saved = savings(plan, nominal(plan), scale)
    order = np.sort(np.stack([saved[c] for c in saved]), axis=0)
    target = saved[cls]
    ok = (target >= order[-1]) & (target >= margin * np.maximum(order[-2], 1e-12)) & (target > 0)
    ok &= base >= speedup * (base - target)
    if not ok.any():
        return False
    mult = float(_CANDIDATES[0, int(np.argmax(ok))])
    for name in names:
        setattr(plan, name, getattr(plan, name) * mult)
    return True


def gpu_seconds(plan: Plan) -> float:
    return plan.gemm_flop_s + plan.memk_byte_s + plan.small_s


def prepare(rng: Rng, plan: Plan, cls: Bottleneck) -> None:
    """Set up the circumstances of the plan's class and mechanism (before :func:`settle`)."""
    {
        Bottleneck.IO: _io,
        Bottleneck.CPU: _cpu,
        Bottleneck.INTERCONNECT: _interconnect,
        Bottleneck.GPU: _gpu,
        Bottleneck.MEMORY: _memory,
    }[cls](rng, plan)


def _io(rng: Rng, plan: Plan) -> None:
    if plan.mechanism == Mechanism.LOCAL_DISK.value:
        name = str(rng.choice(["nvme-gen4", "nvme-gen3", "sata-ssd", "cloud-volume", "cloud-volume"]))
    else:
        name = str(rng.choice(["nfs", "lustre-o2ib", "fuse-bucket", "object-store-http", "object-store-http"]))
    plan.storage = STORAGE[name]
    lo, hi = plan.storage.client_bps
    plan.store_bps = rng.uniform(lo, hi) / (plan.pods_per_node if plan.storage.block else 1)
    plan.mmap_dataset = plan.storage.block and rng.random() < 0.3
    plan.tags.append(f"storage:{name}")
    if plan.mmap_dataset:
        plan.tags.append("mmap-dataset")


def _cpu(rng: Rng, plan: Plan) -> None:
    mech, draw = plan.mechanism, rng.random()
    if plan.straggler is not None and plan.straggler[1] == "cpu" and mech != Mechanism.SATURATED.value:
        # a pod short of CPU on a contended node is saturation, not its quota or its worker count
        plan.straggler = None
        plan.tags.remove("straggler:cpu")
    if mech == Mechanism.THROTTLED.value:
        fair = plan.node_cpus / plan.pods_per_node
        plan.cpu_limit = float(max(2, round(fair * rng.uniform(0.08, 0.35))))
        # more workers than the quota has cores: the quota, not the worker count, is what binds
        plan.workers = max(plan.workers, math.ceil(plan.cpu_limit / plan.gpus_per_pod) + 2)
    elif mech == Mechanism.TOO_FEW_WORKERS.value:
        plan.cpu_limit = None if rng.random() < 0.6 else plan.cpu_limit
        plan.workers = int(rng.choice([0, 1, 2, 3]))
        if plan.workers == 0:  # num_workers=0: decoding and augmentation run in the training process
            plan.main_s += plan.decode_s
            plan.decode_s = 0.0
            plan.tags.append("main-process")
    elif draw < 0.3:
        plan.tags += ["main-process", "tokenise-on-the-fly"]
        plan.cpu_limit = None
    elif draw < 0.5 and plan.workload.startswith("llm"):
        # ZeRO-Offload: the optimiser's Adam step runs on the host over many threads
        plan.hostopt_s = gpu_seconds(plan) * 0.2 * plan.accum
        plan.h2d_s *= 4.0
        plan.tags.append("zero-offload")
        plan.cpu_limit = None
    else:
        plan.cpu_limit = None
        # workers enough to occupy every core of the pod's share of the node
        plan.workers = max(plan.workers, math.ceil(plan.node_cpus / plan.pods_per_node / plan.gpus_per_pod) + 1)
        plan.tags.append("decode-heavy")


def _interconnect(rng: Rng, plan: Plan) -> None:
    gpu_s = gpu_seconds(plan)
    if plan.mechanism == Mechanism.NETWORK.value:
        if plan.nodes == 1:
            plan.pods = max(plan.pods, int(rng.choice([2, 4, 8])))
            plan.pods_per_node = 1
        plan.comm_s = gpu_s * rng.uniform(0.2, 0.5)
        plan.comm_intra_share = rng.uniform(0.03, 0.25)
        plan.comm_overlap = rng.uniform(0.0, 0.6)
        plan.accum = int(rng.choice([1, 1, 2]))
        plan.tags.append(f"fabric:{plan.fabric.name}")
    elif plan.mechanism == Mechanism.NVLINK.value:
        plan.board = _board_where(rng, lambda b: b.nvlink_bps > 0)
        plan.pods, plan.gpus_per_pod, plan.pods_per_node = 1, int(rng.choice([4, 8])), 1
        _one_pod(plan)
        plan.comm_s, plan.comm_intra_share = gpu_s * rng.uniform(0.2, 0.5), 1.0
        plan.comm_overlap, plan.accum = rng.uniform(0.0, 0.25), 1
        plan.tags.append("tensor-parallel")
    elif rng.random() < 0.45:
        plan.board = _board_where(rng, lambda b: b.nvlink_bps == 0 and b.per_node >= 4)
        plan.pods, plan.gpus_per_pod, plan.pods_per_node = 1, int(rng.choice([2, 4])), 1
        _one_pod(plan)
        plan.pcie_peer, plan.comm_intra_share = True, 1.0
        plan.comm_s, plan.comm_overlap, plan.accum = gpu_s * 0.3, rng.uniform(0.0, 0.5), 1
        plan.tags.append("pcie-allreduce")
    else:
        plan.h2d_s = gpu_s * rng.uniform(0.1, 0.3)
        plan.h2d_overlap = rng.uniform(0.0, 0.5)
        plan.tags.append(str(rng.choice(["pageable-h2d", "host-embedding-offload", "activation-offload"])))


def _one_pod(plan: Plan) -> None:
    """A single-pod job has no straggler and no time-slicing neighbour or MIG slice of one GPU."""
    plan.straggler, plan.mig, plan.timeslice = None, None, 0.0
    plan.tags[:] = [t for t in plan.tags if not t.startswith(("straggler", "mig", "time-sliced"))]


def _board_where(rng: Rng, keep: object) -> Board:
    boards = [b for b, _ in BOARDS if callable(keep) and keep(b)]
    return boards[int(rng.integers(len(boards)))]


def _gpu(rng: Rng, plan: Plan) -> None:
    draw = rng.random()
    if draw < 0.15 and plan.gpus > 1:
        plan.comm_s = gpu_seconds(plan) * rng.uniform(1.0, 3.0)  # big exchange, hidden by accumulation
        plan.accum = int(rng.choice([8, 16, 32]))
        plan.tags.append("accumulation-hides-comm")
    elif draw < 0.3:
        plan.power_limit_frac = rng.uniform(0.55, 0.8)
        plan.tags.append("power-capped")
    if plan.fp32:
        plan.gemm_flop_s *= plan.board.tensor_tflops / plan.board.fp32_tflops / 4.0
        plan.tags.append("fp32-math")


def _memory(rng: Rng, plan: Plan) -> None:
    gpu_s = gpu_seconds(plan)
    if plan.mechanism == Mechanism.HBM_BANDWIDTH.value:
        plan.gemm_flop_s *= rng.uniform(0.3, 0.7)
        plan.memk_flop_s = plan.memk_byte_s * rng.uniform(0.05, 0.3)
        plan.tags.append(str(rng.choice(["unfused-attention", "embedding-gathers", "optimizer-bound", "norm-heavy"])))
        return
    plan.swap_s = gpu_s * 0.05
    plan.loader_mem = 0.05
    plan.mem_limit = None if rng.random() < 0.3 else plan.working_set * rng.uniform(1.0, 1.05)
    if plan.mem_limit is None:
        plan.tags.append("node-overcommitted")
    plan.tags.append("swap" if plan.swap else "page-cache-thrash")


def rival(rng: Rng, plan: Plan, cls: Bottleneck) -> Bottleneck | None:
    """Raise a second stage close to binding first (a mixed job); returns that class, if any."""
    others = [c for c in (Bottleneck.IO, Bottleneck.CPU, Bottleneck.GPU, Bottleneck.INTERCONNECT) if c is not cls]
    if (plan.gpus == 1 or plan.comm_s == 0.0) and Bottleneck.INTERCONNECT in others:
        others.remove(Bottleneck.INTERCONNECT)
    other = others[int(rng.integers(len(others)))]
    return other if settle(plan, other, 1.0, rng.uniform(1.05, 1.4)) else None
