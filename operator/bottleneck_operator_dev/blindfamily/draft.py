"""A job's physical set-up, from which its stage times follow.

A :class:`Draft` holds what a platform engineer would know about a job: its GPUs, the loader's
workers and CPU limit, where the data lives, the fabric, the per-sample costs. :func:`stages_of`
turns that into seconds per stage; nothing sets a stage time directly. The mechanisms change the
set-up (a slower disk, fewer workers, a lower CPU limit, a bigger model on a slower network) and
the stage times follow.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator_dev.blindfamily.clusters import Cluster
from bottleneck_operator_dev.blindfamily.hardware import STORAGE, Board
from bottleneck_operator_dev.blindfamily.stages import Stages
from bottleneck_operator_dev.blindfamily.workloads import KERNELS, Archetype, draw, gpu_rate

# NCCL's socket transport (several sockets and threads) reaches 65-90 % of an Ethernet NIC;
# RDMA 80-92 % of the ports' rate.
SOCKET_EFF = (0.65, 0.9)
RDMA_EFF = (0.8, 0.92)


@dataclass
class Draft:
    """A job being drawn. Mutable while its mechanism and reliefs adjust it; read-only afterwards.

    Rates are bytes/s, times seconds, sizes bytes. "Per pod" quantities are shared by the pod's
    ``k`` GPUs; "per GPU" ones are each GPU's.
    """

    cls: Bottleneck
    mechanism: str
    cluster: Cluster
    board: Board
    arch: Archetype
    kernel: str  # the arithmetic kind: "gemm", "conv" or "fp32"
    k: int  # GPUs per pod
    n_pods: int
    pods_per_node: int
    batch: float  # samples per GPU per step
    flop_rate: float  # samples/s per GPU if arithmetic bound
    hbm_ratio: float  # memory-traffic time over arithmetic time
    launch_s: float  # kernel launch time per step
    read_bytes: float  # per sample
    cpu_s: float  # per sample
    h2d_bytes: float  # per sample
    grad_bytes: float  # all-reduce payload per GPU per step
    tp_bytes: float  # extra NVLink traffic per GPU per step (tensor parallelism)
    storage: str
    storage_bps: float  # per pod
    workers: int  # loader processes per pod
    cores: float  # cores the decode work gets per pod
    cpu_limit: float | None
    serial_input: bool
    h2d_overlap: bool
    pcie_bps: float  # effective host-to-device rate per GPU
    nic_gbps: float  # the node's Ethernet speed, Gb/s
    nic_bps: float  # Ethernet per node, bytes/s, after NCCL's socket efficiency
    rdma_bps: float  # RDMA per node in use by the job, 0 when it does not use RDMA
    gdr: bool  # GPUDirect RDMA
    p2p_bps: float  # PCIe peer-to-peer per GPU per direction, for boards without NVLink
    nvl_bps: float  # NVLink per GPU per direction, effective
    overlap: float
    clock_ratio: float  # sustained SM clock over boost (power cap, thermal)
    memstall: float = 0.0  # trainer's host-memory stall per step
    mem_in_ratio: float = 0.5
    swap: str = "none"  # "none", "zram" or "disk"
    io_mode: str = ""  # "mmap", "io.max", "fuse" or ""
    power_cap_w: float = 0.0  # enforced power limit, 0 for the board's default
    thermal: bool = False  # the boards run hot and slow down (clock-event reason set)
    stage: str = ""  # the bounding stage, once settled
    straggler: tuple[int, float] | None = None  # (pod, factor on the bounding stage)
    # The plausible range of the one quantity a mechanism sets (the mechanism clips into it).
    bounds: tuple[float, float] = (0.0, float("inf"))
    tags: list[str] = field(default_factory=list)

    @property
    def nodes(self) -> int:
        return math.ceil(self.n_pods / self.pods_per_node)

    @property
    def gpus_per_node(self) -> int:
        return self.k * min(self.pods_per_node, self.n_pods)

    @property
    def ranks(self) -> int:
        return self.k * self.n_pods


def comm_loads(d: Draft) -> dict[str, float]:
    """Seconds per step each link needs for the all-reduce (ring: 2(N-1)/N of the payload per rank).

    Inside a node the ring runs over NVLink, or PCIe peer-to-peer without it; between nodes each
    node sends about twice the payload over the network, which every GPU stages over its own PCIe
    (GPUDirect RDMA or a bounce through host memory: DCGM sees the GPU's PCIe bytes either way).
    """
    loads: dict[str, float] = {}
    kn, nn = d.gpus_per_node, d.nodes
    n = kn * nn
    if kn > 1:
        intra = 2.0 * (kn - 1) / kn * d.grad_bytes + d.tp_bytes
        loads["nvlink" if d.board.nvlink_bps > 0 else "p2p"] = intra / (
            d.nvl_bps if d.board.nvlink_bps > 0 else d.p2p_bps
        )
    if nn > 1:
        net = 2.0 * (n - 1) / n * d.grad_bytes
        if d.rdma_bps > 0:
            loads["rdma"] = net / d.rdma_bps
        else:
            loads["net"] = net / d.nic_bps
        loads["staging"] = net / kn / (0.8 * d.board.pcie_bps)
    return loads


def stages_of(d: Draft) -> Stages:
    """Seconds per stage for one pod, from the set-up."""
    flop = d.batch / d.flop_rate
    loads = comm_loads(d)
    # A few hops of latency per step on top of the bandwidth term (NCCL's ring, ~tens of microseconds).
    comm = max(loads.values()) + 2e-4 * math.log2(max(d.ranks, 1)) if loads else 0.0
    return Stages(
        read=d.batch * d.k * d.read_bytes / d.storage_bps,
        cpu=d.batch * d.k * d.cpu_s / max(d.cores, 1e-3),
        h2d=d.batch * d.h2d_bytes / d.pcie_bps,
        comm=comm,
        overlap=d.overlap,
        flop=flop,
        launch=d.launch_s,
        hbm=flop * d.hbm_ratio,
        mem_gpu=d.memstall,
        mem_in=d.memstall * d.mem_in_ratio,
        serial_input=d.serial_input,
        h2d_overlap=d.h2d_overlap,
    )


def link_rates(d: Draft) -> dict[str, float]:
    """Bytes/s on each link while the all-reduce runs (the slowest link runs at its capacity)."""
    loads = comm_loads(d)
    if not loads:
        return {}
    busy = max(loads.values())
    kn, nn = d.gpus_per_node, d.nodes
    n = kn * nn
    intra = 2.0 * (kn - 1) / kn * d.grad_bytes + d.tp_bytes if kn > 1 else 0.0
    net = 2.0 * (n - 1) / n * d.grad_bytes if nn > 1 else 0.0
    return {
        "nvlink": intra / busy if "nvlink" in loads else 0.0,
        "p2p": intra / busy if "p2p" in loads else 0.0,
        "net": net / busy if "net" in loads else 0.0,
        "rdma": net / busy if "rdma" in loads else 0.0,
        "staging": net / kn / busy if nn > 1 else 0.0,
    }


def base_draft(
    rng: np.random.Generator, cls: Bottleneck, mechanism: str, c: Cluster, board: Board, arch: Archetype
) -> Draft:
    """A healthy set-up for the job: the mechanism then breaks one thing, reliefs fix the rest."""
    k = int(rng.choice([g for g in (1, 2, 4, 8) if g <= c.node_gpus]))
    n_pods = int(rng.choice([1, 1, 1, 2, 2, 4, 4, 8, 16])) if k >= 2 or rng.random() < 0.5 else 1
    ppn = int(rng.choice([1, max(1, c.node_gpus // k)])) if n_pods > 1 else 1
    kernel = arch.kernel if arch.kernel in ("gemm", "conv", "fp32") else "gemm"
    batch, flop_rate, hbm_ratio, launch_s = _compute(rng, arch, board)
    storage = str(rng.choice([*c.local, *c.shared]))
    spec = STORAGE[storage]
    nic = float(rng.choice(c.nic_gbps)) * 1e9 / 8
    workers, free, limit = _loader(rng, c, k)
    d = Draft(
        cls=cls,
        mechanism=mechanism,
        cluster=c,
        board=board,
        arch=arch,
        kernel=kernel,
        k=k,
        n_pods=n_pods,
        pods_per_node=ppn,
        batch=batch,
        flop_rate=flop_rate,
        hbm_ratio=hbm_ratio,
        launch_s=launch_s,
        read_bytes=draw(arch.read_bytes, rng),
        cpu_s=draw(arch.cpu_s, rng, log=True),
        h2d_bytes=draw(arch.h2d_bytes, rng),
        grad_bytes=draw(arch.params, rng, log=True) * arch.grad_bytes,
        tp_bytes=0.0,
        storage=storage,
        storage_bps=draw((spec.low_bps, spec.high_bps), rng, log=True),
        workers=workers,
        cores=min(float(workers), free),
        cpu_limit=limit,
        serial_input=False,
        h2d_overlap=rng.random() < 0.4,
        pcie_bps=board.pcie_bps * float(rng.uniform(0.6, 0.82)),
        nic_gbps=nic * 8 / 1e9,
        nic_bps=nic * float(rng.uniform(*SOCKET_EFF)),
        rdma_bps=c.rdma_gbps * 1e9 / 8 * float(rng.uniform(*RDMA_EFF)) if c.rdma else 0.0,
        gdr=bool(c.rdma) and rng.random() < 0.8,
        p2p_bps=board.pcie_bps * float(rng.uniform(0.45, 0.75)),
        nvl_bps=board.nvlink_bps / 2 * float(rng.uniform(0.7, 0.85)),
        overlap=float(rng.uniform(0.4, 0.9)),
        clock_ratio=1.0,
        mem_in_ratio=float(rng.uniform(0.3, 1.0)),
    )
    _power_cap(d, rng)
    if c.name == "t4-gen3" and rng.random() < 0.3:
        # Passively cooled T4s in servers built for inference run hot and clock down.
        d.thermal, d.clock_ratio = True, float(rng.uniform(0.72, 0.92))
        d.flop_rate *= d.clock_ratio
        d.tags.append("thermal-slowdown")
    return d


def _compute(rng: np.random.Generator, arch: Archetype, board: Board) -> tuple[float, float, float, float]:
    """Batch per GPU, arithmetic rate, memory-traffic ratio and launch time per step.

    For bandwidth-bound workloads the published rate is the bandwidth-bound one, so the arithmetic
    alone would run faster; for launch-bound ones it is the launch-bound one.
    """
    rate = gpu_rate(arch, board, arch.kernel, rng)
    batch = float(round(draw(arch.batch, rng, log=True)))
    # 400-2,500 kernels a step at 5-12 us each: eager PyTorch's per-op overhead.
    hbm_ratio, launch_s = float(rng.uniform(0.3, 0.7)), float(rng.uniform(400, 2500) * rng.uniform(5e-6, 12e-6))
    flop_rate = rate
    if arch.kernel == "hbm":
        hbm_ratio = float(rng.uniform(1.8, 5.0))
        flop_rate = rate * hbm_ratio
    elif arch.kernel == "launch":
        launch_s = batch / rate
        flop_rate = rate * float(rng.uniform(2.0, 6.0))
    return batch, flop_rate, hbm_ratio, launch_s


def _loader(rng: np.random.Generator, c: Cluster, k: int) -> tuple[int, float, float | None]:
    """Loader workers per pod, the cores they can use, and the pod's CPU limit if it has one.

    Without a limit a pod can use idle cores beyond its share of the node; limits are set at or
    below that share.
    """
    workers = k * int(rng.integers(4, 13))
    free = c.node_cpus * min(1.0, k / c.node_gpus * float(rng.uniform(1.0, 2.0)))
    limit = None
    if rng.random() < c.p_cpu_limit:
        limit = float(max(k + 2, round(free * float(rng.uniform(0.6, 1.0)))))
        free = limit - k
    return workers, free, limit


def _power_cap(d: Draft, rng: np.random.Generator) -> None:
    """Slow the arithmetic where the cluster caps the boards below what the kernels would draw.

    Dynamic power goes roughly with the square of the clock in this range, so a cap at share
    ``f`` of the demand above idle leaves the clock at about sqrt(f); memory-bound work barely slows.
    """
    c, b = d.cluster, d.board
    if rng.random() >= c.p_power_cap:
        return
    cap = b.tdp_w * float(rng.uniform(*c.cap_frac))
    demand = b.idle_w + (b.tdp_w - b.idle_w) * float(np.mean(KERNELS[d.kernel].power))
    d.tags.append("power-capped")
    d.power_cap_w = cap
    if demand > cap:
        d.clock_ratio = float(np.clip(np.sqrt((cap - b.idle_w) / (demand - b.idle_w)), 0.55, 1.0))
        d.flop_rate *= d.clock_ratio**0.9
        d.hbm_ratio *= d.clock_ratio**0.6
