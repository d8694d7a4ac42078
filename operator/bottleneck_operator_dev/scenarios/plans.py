"""Drawing one job's plan: hardware, topology, loader, stage times and how the GPU spends its time.

Each class has several mechanisms (the physical reason behind the class); a plan draws the target
mechanism's stage strongly, the others weakly, and is kept only when :func:`stages.truth` agrees.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator_dev.scenarios.hardware import Fabric, Part, Storage, draw_fabric, draw_part, draw_storage
from bottleneck_operator_dev.scenarios.stages import StageTimes, truth

MECHANISMS: dict[Bottleneck, tuple[str, ...]] = {
    Bottleneck.GPU: ("compute", "launch-bound", "throttled"),
    # "pcie" is peer-to-peer collectives over PCIe; "host-to-device" the batch copies themselves
    Bottleneck.INTERCONNECT: ("network", "nvlink", "pcie", "all-to-all", "pipeline", "host-to-device"),
    Bottleneck.CPU: ("saturated", "throttled", "too-few-workers"),
    Bottleneck.IO: ("local-disk", "network-storage", "object-store", "mmap"),
    # HBM-bandwidth-bound kernels are Memory by DESIGN.md (memory bandwidth on the GPU bounds the
    # job), although the stage that bounds the step is the kernels' own time
    Bottleneck.MEMORY: ("host-memory", "hbm-bandwidth"),
}
HOST_MEMORY = "host-memory"
HOST_TO_DEVICE = "host-to-device"
# What a host-to-device copy achieves against the link's datasheet rate: from pageable memory the
# driver stages each copy through a pinned buffer with a CPU memcpy, from pinned memory DMA runs near
# the link's practical peak.
PAGEABLE_COPY = (0.25, 0.45)
PINNED_COPY = (0.7, 0.85)
# Input copies beside busy kernels, as a share of the link, log-uniform: ResNet-50 at ~2,470 img/s on
# an A100 moves 0.4-1.5 GB/s of uint8 or float32 224x224 images, 0.01-0.05 of PCIe Gen4
# (TELEMETRY.md, derived); token batches a few thousandths of that; the H200 recordings' loops under
# 0.005 (tests/data/gpu-compute, gpu-launch).
INPUT_COPY = (0.001, 0.06)
# A small model on a large GPU: the real H200 loops held back by their disk, object store, loader,
# memory or pageable copies kept their GPU 0.1-2 % busy (tests/data/gpu-io, gpu-objectstore,
# gpu-loader, gpu-workers0, gpu-memory, ...), their input 50-800 times their kernels' time, where the
# stage draws below stop at six. A share of the plans that a host stage bounds draws such a model:
# kernels of 1-20 ms a step, the bounding stage 6-600 times that (log-uniform).
SMALL_MODEL_SHARE = 0.2
SMALL_MODEL_STEP = (0.001, 0.02)
STARVED = (6.0, 600.0)


@dataclass(frozen=True)
class Kernels:
    """What the GPU's pipes do while a kernel runs (per unit of kernel time)."""

    sm: float  # SM activity
    gr: float  # graphics-engine activity
    tensor: float
    dram: float
    occupancy: float
    fp32: float = 0.0  # FP32 pipes (see with_extras)
    fp16: float = 0.0  # FP16 pipes


@dataclass(frozen=True)
class Plan:
    """Everything the renderer needs about one job."""

    label: Bottleneck
    mechanism: str
    margin: float
    part: Part
    fabric: Fabric
    storage: Storage
    stages: StageTimes
    kernels: Kernels
    n_pods: int
    gpus_per_pod: int
    pods_per_node: int
    node_cpus: int
    node_mem_bytes: float
    workers: int  # DataLoader workers per pod (0: loading in the training loop)
    cpu_limit: float | None  # cores per pod
    loader_cores: float  # cores the input stage can use per pod
    h2d_bytes: float  # host-to-device bytes per step per GPU
    comm_bytes: float  # collective bytes per step per GPU
    comm_path: str  # "nvlink", "pcie", "ethernet", "rdma"
    mem_limit_bytes: float | None
    working_set_bytes: float
    swap: bool
    fb_frac: float
    mig: str | None  # MIG profile, e.g. "3g.40gb"
    straggler: float  # clock factor of the slowest GPU (1: none)
    bubble: float  # pipeline bubble share of the step (0: no pipeline parallelism)
    launch_core: bool  # one host core per GPU busy launching kernels
    tags: tuple[str, ...] = field(default=())
    power_cap: float = 1.0  # the limit the boards enforce, as a share of their default (TDP)
    fp32_math: bool = False  # kernels compute in FP32 on the FP32 pipes (TF32 off), not the tensor pipes
    oom_kills: int = 0  # processes of a pod the OOM killer ends during the window (the trainer survives)


def _u(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(rng.uniform(lo, hi))


def _kernels(rng: np.random.Generator, mechanism: str, part: Part) -> Kernels:
    if mechanism == "launch-bound":
        # kernels run part of the step and fill few SMs with few warps; their data stays in L2 (an
        # H200: SM 0.04-0.52 of its busy time, occupancy 0.03-0.13 of SM activity, DRAM and tensor
        # 0.0; tests/data/gpu-launch, gpu-launch-wide)
        gr = _u(rng, 0.45, 0.8)
        sm = gr * _u(rng, 0.03, 0.6)
        return Kernels(sm, gr, _u(rng, 0.0, 0.01), gr * _u(rng, 0.0, 0.05), sm * _u(rng, 0.02, 0.15))
    # a kernel occupies the graphics engine for as long as GPU_UTIL counts it (0.990 against 0.992 on an
    # H200's HBM-bound loop, 0.978 against 0.978 on its matmuls: tests/data/gpu-hbm, gpu-compute)
    # occupancy of the busy time: 0.84 and 0.32 in two real HBM-bound loops, 0.14 and 0.38 in two
    # compute-bound ones (tests/data/gpu-hbm, gpu-streamed, gpu-compute, gpu-transformer)
    if mechanism == "hbm-bandwidth":
        return Kernels(
            _u(rng, 0.75, 0.97), _u(rng, 0.97, 1.0), _u(rng, 0.0, 0.12), _u(rng, 0.6, 0.82), _u(rng, 0.3, 0.85)
        )
    tensor_hi = 0.75 if part.tdp_w > 300 else 0.55
    return Kernels(
        _u(rng, 0.6, 0.95), _u(rng, 0.97, 1.0), _u(rng, 0.15, tensor_hi), _u(rng, 0.15, 0.5), _u(rng, 0.12, 0.6)
    )


def _topology(rng: np.random.Generator, mechanism: str, part: Part) -> tuple[int, int, int]:
    """(pods, GPUs per pod, pods per node)."""
    if mechanism in ("nvlink", "pcie"):
        return 1, int(rng.choice([4, 8])), 1
    if mechanism in ("network", "all-to-all", "pipeline"):
        return int(rng.choice([2, 4, 8])), int(rng.choice([4, 8])), 1
    shape = rng.random()
    if shape < 0.45:
        return 1, int(rng.choice([1, 2, 4, 8])), 1
    if shape < 0.8:
        return int(rng.choice([2, 3, 4])), int(rng.choice([1, 2, 4, 8])), 1
    return int(rng.choice([2, 4])), 1, int(rng.choice([2, 4]))


def _log_u(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(np.exp(rng.uniform(np.log(lo), np.log(hi))))


def _stage_draw(
    rng: np.random.Generator, label: Bottleneck, mechanism: str, t_gpu: float, *, starved: bool = False
) -> dict[str, float]:
    """Stage times relative to ``t_gpu``: the target's high, the others low (some near the edge);
    ``starved``: the target's 6-600 times the kernels' time (a small model on a large GPU)."""
    weak = {k: t_gpu * float(rng.choice([_u(rng, 0.0, 0.3), _u(rng, 0.3, 0.85)], p=[0.6, 0.4])) for k in (
        "t_comm", "t_cpu", "t_io")}  # fmt: skip
    weak["t_mem"] = t_gpu * float(rng.choice([0.0, _u(rng, 0.0, 0.08)], p=[0.8, 0.2]))
    strong = t_gpu * float(rng.choice([_u(rng, 1.25, 2.0), _u(rng, 2.0, 6.0)], p=[0.55, 0.45]))
    if starved:
        strong = t_gpu * _log_u(rng, *STARVED)
    if mechanism == HOST_TO_DEVICE:
        weak["t_h2d"] = strong
    elif label is Bottleneck.INTERCONNECT:
        weak["t_comm"] = strong * 1.3
    elif label is Bottleneck.CPU:
        weak["t_cpu"] = strong
    elif label is Bottleneck.IO:
        weak["t_io"] = strong
    elif label is Bottleneck.MEMORY:
        weak["t_mem"] = strong if starved else t_gpu * _u(rng, 0.3, 3.0)
    return weak


def _comm_path(mechanism: str, part: Part, fabric: Fabric, n_pods: int) -> str:
    if mechanism == "nvlink" or (n_pods == 1 and part.nvlink_bps > 0):
        return "nvlink"
    if mechanism == "pcie" or n_pods == 1:
        return "pcie"
    return "rdma" if fabric.kind == "rdma" else "ethernet"


def _comm_bandwidth(path: str, part: Part, fabric: Fabric, gpus_per_node: int) -> float:
    """Bytes/s one GPU's collectives move on their bottleneck link."""
    if path == "nvlink":
        return part.nvlink_bps / 2
    if path == "pcie":
        return part.pcie_bps * 0.8
    return fabric.nic_bps * fabric.nics / gpus_per_node


def draw_plan(rng: np.random.Generator, label: Bottleneck, *, tries: int = 200) -> Plan:
    """A plan whose computed truth is ``label`` (rejection sampling over the stage draws)."""
    mechanism = str(rng.choice(MECHANISMS[label]))
    part = draw_part(rng)
    if mechanism in ("nvlink",) and part.nvlink_bps == 0:
        mechanism = "pcie"
    if mechanism == "pcie" and part.nvlink_bps > 0:
        mechanism = "nvlink"
    n_pods, gpp, ppn = _topology(rng, mechanism, part)
    if label is Bottleneck.GPU and mechanism == "throttled" and n_pods * gpp < 2:
        gpp = 4  # a straggler needs peers that wait for it
    node_gpus = gpp * ppn
    fabric = draw_fabric(rng, node_gpus)
    if mechanism == "network" and rng.random() < 0.5:
        fabric = Fabric("ethernet", float(rng.choice([25.0, 50.0])) / 8 * 1e9, 1, False)
    storage = draw_storage(rng)
    if label is Bottleneck.IO:
        kinds = {"local-disk": ("nvme", "sata"), "network-storage": ("nfs", "fuse"), "object-store": ("http",),
                 "mmap": ("mmap",)}[mechanism]  # fmt: skip
        while storage.kind not in kinds:
            storage = draw_storage(rng)
    # HBM-bandwidth-bound jobs are drawn like GPU-bound ones (no host stage bounds them): only their
    # kernels differ, and the class follows from those kernels
    stage_label = Bottleneck.GPU if mechanism == "hbm-bandwidth" else label
    starved = _host_bound(label, mechanism) and bool(rng.random() < SMALL_MODEL_SHARE)
    for _ in range(tries):
        t_gpu = _u(rng, *SMALL_MODEL_STEP) if starved else _u(rng, 0.08, 1.2)
        st = StageTimes(serial_input=False, overlap=_u(rng, 0.3, 0.9), t_gpu=t_gpu,
                        pinned=mechanism != HOST_TO_DEVICE or bool(rng.random() < 0.25),
                        **_stage_draw(rng, stage_label, mechanism, t_gpu, starved=starved))  # fmt: skip
        workers = int(rng.choice([2, 4, 6, 8, 10, 12, 16]))
        if label is Bottleneck.CPU and mechanism == "too-few-workers":
            workers = int(rng.choice([0, 0, 1, 2]))
        elif label is not Bottleneck.CPU and rng.random() < 0.08:
            workers = 0
        if workers == 0:
            st = replace(st, t_cpu=st.t_cpu * 0.6, t_io=st.t_io * 0.5, serial_input=True)
        got, margin = truth(st)
        if got is stage_label and margin > 0.12:
            plan = _finish(rng, label, mechanism, margin, part, fabric, storage, st, (n_pods, gpp, ppn), workers)
            return replace(plan, tags=(*plan.tags, "small-model")) if starved else plan
    raise RuntimeError(f"no plan for {label} after {tries} draws")  # pragma: no cover - draws always land


def _host_bound(label: Bottleneck, mechanism: str) -> bool:
    """A host stage bounds the step (a GPU-side or collective bound cannot starve the GPU of work)."""
    return label in (Bottleneck.IO, Bottleneck.CPU) or mechanism in (HOST_MEMORY, HOST_TO_DEVICE)


def _tags(
    mechanism: str, storage: Storage, fabric: Fabric, path: str, *, workers: int, node_gpus: int, mig: str | None
) -> list[str]:
    tags = [mechanism, storage.kind, fabric.kind, path]
    if workers == 0:
        tags.append("num-workers-0")
    if fabric.kind == "rdma" and fabric.gpudirect:
        tags.append("gpudirect")
    if fabric.nics >= node_gpus and fabric.kind == "rdma":
        tags.append("nic-per-gpu")
    if mig:
        tags.append("mig")
    return tags


def _finish(
    rng: np.random.Generator,
    label: Bottleneck,
    mechanism: str,
    margin: float,
    part: Part,
    fabric: Fabric,
    storage: Storage,
    st: StageTimes,
    topo: tuple[int, int, int],
    workers: int,
) -> Plan:
    n_pods, gpp, ppn = topo
    node_gpus = gpp * ppn
    node_cpus = int(rng.choice([32, 48, 64, 96, 128, 192, 224])) if node_gpus >= 4 else int(rng.choice([8, 16, 32, 48]))
    cpu_limit: float | None = None
    if mechanism == "throttled" and label is Bottleneck.CPU:
        cpu_limit = float(rng.choice([2, 4, 6, 8, 12, 16])) * max(1, gpp // 2)
    elif rng.random() < 0.35:
        cpu_limit = float(min(node_cpus // ppn, int(rng.choice([8, 16, 32, 48])) * gpp))
    free = node_cpus / ppn - 1.0 * gpp
    loader = float(workers) if workers else 1.0
    if cpu_limit is not None:
        loader = min(loader, max(0.5, cpu_limit - 0.6 * gpp))
    if label is Bottleneck.CPU and mechanism == "saturated":
        loader = max(loader, free * _u(rng, 0.85, 1.0))
    loader = max(0.5, min(loader, free))
    if label is Bottleneck.CPU and mechanism == "throttled" and cpu_limit is not None:
        # the workers want more than the quota: CFS throttles them in most periods
        workers = max(workers, int(cpu_limit) + 2)
        loader = cpu_limit
    path = _comm_path(mechanism, part, fabric, n_pods)
    comm_bw = _comm_bandwidth(path, part, fabric, node_gpus)
    mig = None
    if part.mig and n_pods == 1 and gpp == 1 and label is not Bottleneck.INTERCONNECT and rng.random() < 0.25:
        mig = str(rng.choice(["1g.10gb", "2g.20gb", "3g.40gb", "7g.80gb"]))
    node_mem = float(rng.choice([256, 512, 1024, 2048])) * 2**30
    ws = _u(rng, 0.05, 0.4) * node_mem / ppn
    mem_limit = ws * _u(rng, 1.3, 3.0) if rng.random() < 0.6 else None
    swap = bool(rng.random() < 0.2)
    if mechanism == HOST_MEMORY:
        mem_limit = ws * _u(rng, 0.97, 1.0) if rng.random() < 0.5 else None
        swap = mem_limit is None or bool(rng.random() < 0.6)
    if mechanism == HOST_TO_DEVICE:
        h2d_bytes = st.t_h2d * part.pcie_bps * _u(rng, *(PINNED_COPY if st.pinned else PAGEABLE_COPY))
    else:  # input copies beside the kernels, a small share of the link
        h2d_bytes = _log_u(rng, *INPUT_COPY) * part.pcie_bps * st.t_gpu
    tags = _tags(mechanism, storage, fabric, path, workers=workers, node_gpus=node_gpus, mig=mig)
    return Plan(
        label=label, mechanism=mechanism, margin=margin, part=part, fabric=fabric, storage=storage, stages=st,
        kernels=_kernels(rng, mechanism, part), n_pods=n_pods, gpus_per_pod=gpp, pods_per_node=ppn,
        node_cpus=node_cpus, node_mem_bytes=node_mem, workers=workers, cpu_limit=cpu_limit, loader_cores=loader,
        h2d_bytes=h2d_bytes, comm_bytes=st.t_comm * comm_bw, comm_path=path,
        mem_limit_bytes=mem_limit, working_set_bytes=ws, swap=swap, fb_frac=_u(rng, 0.3, 0.99),
        mig=mig, straggler=_u(rng, 0.55, 0.8) if mechanism == "throttled" and label is Bottleneck.GPU else 1.0,
        bubble=_u(rng, 0.15, 0.45) if mechanism == "pipeline" else 0.0,
        launch_core=mechanism == "launch-bound", tags=tuple(tags),
    )  # fmt: skip


# Shares drawn beside a plan (with_extras): boards capped below their default limit, FP32 math, and the
# Jobs under host memory pressure at a memory limit whose processes the OOM killer ends now and then.
POWER_CAPPED_SHARE = 0.1
FP32_MATH_SHARE = 0.1
OOM_KILL_SHARE = 0.4


def with_extras(plan: Plan, side: np.random.Generator, *, power_cap: float | None = None) -> Plan:
    """The plan with what was added after the family's first signals, drawn from ``side`` (so every draw
    of the job's own generator stays as it was): its boards' power cap, FP32 math, the pipes' activity,
    and OOM kills.

    Pipe activity per unit of kernel time, from an H200 (DCGM's pipe fields through NVML's GPM): fp32
    products with TF32 off kept the FP32 pipes 0.76 active at SM activity 0.97 and the tensor pipes at
    0.0; a transformer's layer norms and activations 0.03, fp32 HBM streams 0.01, bf16 products 0.0; the
    FP16 pipes 0.0 in every loop (bf16's elementwise ops run in FP32). Loops in fp16 mixed precision run
    some elementwise ops on the FP16 pipes. ``power_cap``: the cap of boards the plan shares a node with.
    """
    cap = float(side.uniform(0.6, 0.9)) if side.random() < POWER_CAPPED_SHARE else 1.0
    cap = cap if power_cap is None else power_cap
    fp32 = plan.mechanism not in ("launch-bound", "hbm-bandwidth") and bool(side.random() < FP32_MATH_SHARE)
    k = plan.kernels
    fp32_eff = _u(side, 0.7, 0.85) if fp32 else _u(side, 0.005, 0.06)
    fp16_eff = _u(side, 0.005, 0.05) if side.random() < 0.4 and not fp32 else 0.0
    kernels = replace(k, tensor=0.0 if fp32 else k.tensor, fp32=k.sm * fp32_eff, fp16=k.sm * fp16_eff)
    kills = int(side.integers(1, 4)) if side.random() < OOM_KILL_SHARE else 0
    if plan.mechanism != HOST_MEMORY or plan.mem_limit_bytes is None:
        kills = 0
    flags = (("power-capped", cap < 1.0), ("fp32-math", fp32), ("oom-kill", kills > 0))
    tags = (*plan.tags, *(t for t, on in flags if on))
    return replace(plan, kernels=kernels, power_cap=cap, fp32_math=fp32, oom_kills=kills, tags=tags)
