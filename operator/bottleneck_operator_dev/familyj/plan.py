"""One job's plan: the cluster it runs on and what one training step asks of each stage.

A plan holds scalars only. The step model (``stepmodel``) turns it into stage times per pod and
per tick; the exporters (``gpu``, ``host``, ``scrape``) turn those into what a cluster shows.
Stage demands are seconds per micro-step for one pod at nominal conditions (boost clock, storage
and fabric at their nominal bandwidth).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from bottleneck_operator_dev.familyj.hardware import BOARDS, FABRICS, GIB, NODE_CPUS, STORAGE, Board, Fabric, Storage

Rng = np.random.Generator

# What real teams run, with the share of GPU time their tensor (GEMM) kernels take and how much
# input one GPU reads and decodes per second of its work. The shares follow the usual make-up of
# these models (attention/MLP GEMMs in transformers, convolutions in CNNs, embedding gathers in
# recsys); the input rates follow from samples per second and sample sizes (tokens are a few bytes,
# a JPEG ~110 KB, a video clip megabytes) and TELEMETRY.md's 50-200 JPEGs per core-second.
WORKLOADS: dict[str, tuple[tuple[float, float], float, float]] = {
    # name: ((gemm share low, high), input MB per GPU-second, decode core-s per GPU-second)
    "llm-pretrain-fsdp": ((0.68, 0.85), 0.5, 0.05),
    "llm-finetune-zero": ((0.62, 0.8), 0.3, 0.1),
    "recsys-embeddings": ((0.25, 0.45), 40.0, 0.6),
    "vision-jpeg": ((0.5, 0.72), 120.0, 3.0),
    "video-clips": ((0.5, 0.7), 200.0, 6.0),
    "speech-asr": ((0.45, 0.65), 30.0, 1.5),
    "diffusion-unet": ((0.55, 0.72), 60.0, 1.5),
    "gnn-sampling": ((0.2, 0.4), 20.0, 2.0),
}


@dataclass
class Plan:
    """Everything drawn for one job (mutable while its recipe sets the bounding stage)."""

    label_target: str
    mechanism: str
    workload: str
    board: Board
    gpus_per_pod: int
    pods: int
    pods_per_node: int
    node_cpus: int
    node_mem_bytes: float
    storage: Storage
    fabric: Fabric  # the nodes' NIC; only jobs spanning nodes send their collectives over it
    # stage demands, seconds per micro-step per pod at nominal conditions
    read_s: float = 0.0
    decode_s: float = 0.0
    loader_overlap: float = 0.8
    main_s: float = 0.0
    hostopt_s: float = 0.0
    h2d_s: float = 0.0
    h2d_overlap: float = 0.0
    gemm_flop_s: float = 0.3
    gemm_byte_s: float = 0.1
    memk_flop_s: float = 0.02
    memk_byte_s: float = 0.08
    small_s: float = 0.01
    comm_s: float = 0.0
    comm_overlap: float = 0.5
    comm_intra_share: float = 1.0  # share of comm time spent on the intra-node link
    accum: int = 1
    bubble: float = 0.0
    swap_s: float = 0.0
    loader_mem: float = 0.0
    # host side
    workers: int = 8  # loader worker processes per training process
    cpu_limit: float | None = None  # cores per pod
    mem_limit: float | None = None  # bytes per pod
    working_set: float = 0.0
    swap: bool = False  # swap configured on the nodes
    fp32: bool = False  # FP32/TF32 math without BF16 tensor kernels
    mmap_dataset: bool = False
    pcie_peer: bool = False  # GPU-to-GPU collectives cross PCIe (no NVLink)
    gdr: bool = False  # GPUDirect RDMA: NIC traffic shows on the GPU's PCIe counters
    spin: float = 0.8  # share of a core the training process burns while it waits on the GPU
    # the cluster around it
    mig: tuple[str, float, float] | None = None
    timeslice: float = 0.0  # share of the GPU a time-sliced neighbour takes
    power_limit_frac: float = 1.0
    clock_spread: float = 0.02
    neighbours: int = 0
    neighbour_cpu: float = 0.0  # cores per node used by pods of other jobs
    neighbour_disk: float = 0.0  # bytes/s read by neighbours per node
    neighbour_net: float = 0.0  # bytes/s neighbours receive per node
    neighbour_rdma: float = 0.0  # bytes/s neighbours move over the RDMA NICs per node
    store_bps: float = 1e9  # storage bandwidth one pod gets at nominal
    straggler: tuple[int, str, float] | None = None  # (pod, stage, slowdown)
    checkpoint_every: float = 0.0  # seconds between pauses (0: none)
    checkpoint_len: float = 0.0
    tags: list[str] = field(default_factory=list)

    @property
    def nodes(self) -> int:
        return math.ceil(self.pods / self.pods_per_node)

    @property
    def gpus(self) -> int:
        return self.pods * self.gpus_per_pod

    def node_of(self, pod: int) -> int:
        return pod // self.pods_per_node

    @property
    def cap_clock(self) -> float:
        """The clock share the enforced power limit leaves a busy GPU (dynamic power grows ~f^2-f^3)."""
        return min(1.0, float((self.power_limit_frac / 0.9) ** 0.45))


def pick(rng: Rng, options: tuple[tuple[object, float], ...]) -> object:
    """One option drawn by its weight."""
    weights = np.array([w for _, w in options])
    return options[int(rng.choice(len(options), p=weights / weights.sum()))][0]


def loguniform(rng: Rng, low: float, high: float) -> float:
    return float(np.exp(rng.uniform(np.log(low), np.log(high))))


def draw_shape(rng: Rng, board: Board) -> tuple[int, int, int]:
    """GPUs per pod, pods, pods per node: 1-8 GPUs per pod, 1-16 pods, packed as schedulers do."""
    gpp = int(rng.choice([1, 2, 4, 8], p=[0.35, 0.15, 0.2, 0.3]))
    gpp = min(gpp, board.per_node)
    pods = int(rng.choice([1, 2, 3, 4, 6, 8, 12, 16], p=[0.3, 0.15, 0.05, 0.17, 0.05, 0.13, 0.05, 0.1]))
    per_node = max(1, board.per_node // gpp)
    # some clusters spread one pod per node (anti-affinity, topology spread)
    if rng.random() < 0.3:
        per_node = 1
    return gpp, pods, min(per_node, pods)


def draw_base(rng: Rng, label: str, mechanism: str) -> Plan:
    """The job before its recipe: cluster, shape, workload and healthy stage demands."""
    board = pick(rng, BOARDS)
    assert isinstance(board, Board)
    workload = str(rng.choice(sorted(WORKLOADS)))
    gpp, pods, per_node = draw_shape(rng, board)
    storage = STORAGE[str(rng.choice(sorted(STORAGE)))]
    fabric = pick(rng, FABRICS)
    assert isinstance(fabric, Fabric)
    plan = Plan(
        label_target=label,
        mechanism=mechanism,
        workload=workload,
        board=board,
        gpus_per_pod=gpp,
        pods=pods,
        pods_per_node=per_node,
        node_cpus=int(rng.choice(NODE_CPUS[2:] if board.per_node >= 8 else NODE_CPUS[:5])),
        node_mem_bytes=float(rng.choice([256, 512, 1024, 2048])) * GIB,
        storage=storage,
        fabric=fabric,
    )
    _draw_gpu_work(rng, plan)
    _draw_host_side(rng, plan)
    _draw_communication(rng, plan)
    return plan


def _draw_gpu_work(rng: Rng, plan: Plan) -> None:
    """The GPU's kernels per micro-step: tensor GEMMs and bandwidth-bound kernels, roofline style."""
    (lo, hi), _, _ = WORKLOADS[plan.workload]
    gpu_s = loguniform(rng, 0.12, 2.5)  # one micro-step's kernels at boost clock
    gemm = gpu_s * rng.uniform(lo, hi)
    memk = gpu_s - gemm
    plan.fp32 = rng.random() < 0.12
    plan.gemm_flop_s = gemm
    plan.gemm_byte_s = gemm * rng.uniform(0.15, 0.6)  # GEMM tiles reuse operands: well under their math time
    plan.memk_byte_s = memk * 0.9
    plan.memk_flop_s = memk * rng.uniform(0.1, 0.45)  # elementwise/normalisation: little math per byte
    plan.small_s = gpu_s * rng.uniform(0.01, 0.06)


def _draw_host_side(rng: Rng, plan: Plan) -> None:
    """The input pipeline, the training process's own CPU and the memory it holds: all comfortable."""
    gpu_s = plan.gemm_flop_s + plan.memk_byte_s
    _, input_mb, decode_core_s = WORKLOADS[plan.workload]
    plan.workers = int(rng.choice([2, 4, 6, 8, 10, 12, 16]))
    lo, hi = plan.storage.client_bps
    plan.store_bps = rng.uniform(lo, hi) / plan.pods_per_node if plan.storage.block else rng.uniform(lo, hi)
    # what the workload reads and decodes per second of GPU work, against what the pod has
    gpus = plan.gpus_per_pod
    read_need = input_mb * 1e6 * gpus * loguniform(rng, 0.5, 2.0) / plan.store_bps
    decode_need = decode_core_s * gpus * loguniform(rng, 0.5, 2.0) / (plan.workers * gpus)
    plan.read_s = gpu_s * float(np.clip(read_need, 0.01, 0.45))
    plan.decode_s = gpu_s * float(np.clip(decode_need, 0.02, 0.5))
    plan.loader_overlap = rng.uniform(0.6, 1.0)
    plan.main_s = gpu_s * rng.uniform(0.01, 0.06)
    pinned = rng.random() < 0.7
    plan.h2d_s = gpu_s * rng.uniform(0.005, 0.08)
    plan.h2d_overlap = rng.uniform(0.6, 0.95) if pinned else 0.0
    plan.spin = rng.uniform(0.35, 1.0)
    plan.mmap_dataset = plan.storage.block and rng.random() < 0.2
    plan.swap = rng.random() < 0.25  # NodeSwap is beta and off by default: most nodes run without swap
    node_share = plan.node_mem_bytes / plan.pods_per_node
    plan.working_set = node_share * rng.uniform(0.1, 0.45)
    if rng.random() < 0.55:
        plan.mem_limit = plan.working_set * rng.uniform(1.3, 2.5)
    if rng.random() < 0.5:
        fair = plan.node_cpus / plan.pods_per_node
        plan.cpu_limit = float(max(2, round(fair * rng.uniform(0.3, 0.9))))


def _draw_communication(rng: Rng, plan: Plan) -> None:
    """Gradient/parameter traffic per optimiser step and how much of it hides behind backward."""
    gpu_s = plan.gemm_flop_s + plan.memk_byte_s
    if plan.gpus == 1:
        plan.comm_s = 0.0
        return
    plan.comm_s = gpu_s * rng.uniform(0.05, 0.4)
    plan.comm_overlap = rng.uniform(0.3, 0.9)
    plan.accum = int(rng.choice([1, 1, 1, 2, 4, 8, 16]))
    plan.pcie_peer = plan.board.nvlink_bps == 0 and plan.gpus_per_pod > 1
    multi_node = plan.nodes > 1
    plan.comm_intra_share = rng.uniform(0.1, 0.4) if multi_node else 1.0
    plan.gdr = multi_node and plan.fabric.rdma and rng.random() < 0.7
    if multi_node and plan.workload.startswith("llm") and rng.random() < 0.25:
        plan.bubble = rng.uniform(0.08, 0.3)  # pipeline parallel: (pp - 1) / (microbatches + pp - 1)
        plan.tags.append("pipeline-parallel")
