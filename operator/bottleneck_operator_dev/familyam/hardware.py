"""Boards, nodes and placements: where a Job's pods land and what that place can deliver.

Every capacity a stage later runs against is drawn here, from published figures (docs/familyam.md
lists each with its source), so that a stage's speed follows from where Kubernetes put the pod,
not from the class the Job was meant to show.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.verdict import Bottleneck


@dataclass(frozen=True)
class Board:
    """One GPU model, datasheet figures (TELEMETRY.md "Hardware figures"; TDP and clocks: NVIDIA datasheets)."""

    model_name: str
    tflops: float  # dense BF16/FP16 tensor TFLOPS
    hbm_gbps: float  # memory bandwidth, GB/s
    nvlink_gbps: float  # NVLink total per GPU, GB/s (both directions); 0 without NVLink
    pcie_gen: int
    tdp_w: float
    idle_w: float
    max_clock_mhz: float
    prof: bool  # datacenter Volta-or-newer: PROF fields exist


BOARDS: tuple[Board, ...] = (
    Board("Tesla V100-SXM2-32GB", 125.0, 900.0, 300.0, 3, 300.0, 40.0, 1530.0, True),
    Board("NVIDIA A100-SXM4-80GB", 312.0, 2039.0, 600.0, 4, 400.0, 55.0, 1410.0, True),
    Board("NVIDIA H100 80GB HBM3", 989.0, 3350.0, 900.0, 5, 700.0, 70.0, 1980.0, True),
    Board("NVIDIA H100 PCIe", 756.0, 2000.0, 0.0, 5, 350.0, 45.0, 1755.0, True),
    Board("NVIDIA L4", 121.0, 300.0, 0.0, 4, 72.0, 16.0, 2040.0, True),
    Board("NVIDIA A10", 125.0, 600.0, 0.0, 4, 150.0, 25.0, 1695.0, True),
    Board("Tesla T4", 65.0, 320.0, 0.0, 3, 70.0, 12.0, 1590.0, False),
)

# PCIe x16 per direction, GB/s (TELEMETRY.md "Hardware figures", derived from per-lane rates).
PCIE_X16_GBPS = {3: 15.8, 4: 31.5, 5: 63.0}
# Storage reads, GB/s (TELEMETRY.md): SATA SSD, NVMe Gen3/Gen4; network file systems and object
# stores per client up to about EFS's 1.5 GiB/s, usually well below local NVMe.
LOCAL_DISKS = {"sata": 0.55, "nvme3": 3.5, "nvme4": 7.0}
# Fabrics: port speed in Gb/s (TELEMETRY.md "NICs / InfiniBand"); RDMA kinds bypass netdev.
FABRICS = {"ib-edr": 100.0, "ib-hdr": 200.0, "ib-ndr": 400.0, "roce-100": 100.0, "roce-200": 200.0}
ETHERNET = {"eth-10": 10.0, "eth-25": 25.0, "eth-100": 100.0}


@dataclass(frozen=True)
class Placement:
    """One pod's place: its node's topology and how Kubernetes placed the pod on it.

    Attributes:
        node: node name.
        sockets: CPU sockets (NUMA nodes) of the node.
        node_cpus: logical CPUs of the node.
        gpus: GPUs given to the pod.
        gpus_share_switch: the pod's GPUs sit under one PCIe switch (peer-to-peer stays off the root).
        nic_near_gpus: the NIC is under the GPUs' switch (GPUDirect RDMA possible).
        gpudirect: GPUDirect RDMA in use (else inter-node traffic is staged through host memory).
        fabric: "ib-*", "roce-*" or "eth-*"; RDMA for the first two.
        nics: NICs the pod's traffic spreads over.
        cpu_policy: kubelet CPU manager policy, "none" (threads float) or "static" (pinned cores).
        far_socket: the pod's cores sit on the socket away from its GPUs.
        cpu_limit: CFS quota in cores, None without a limit.
        mem_limit_gb: memory limit, GB (drawn as a multiple of the working set, which the workload
            fixes later: family.py scales it once the workload is drawn).
        storage: "nvme3", "nvme4", "sata" (local) or "nfs", "object" (remote).
        storage_gbps: what the storage delivers to this pod, GB/s, after neighbours take their share.
        neighbours: other pods on the node.
        neighbour_cores: cores the neighbours keep busy.
        swap: the node has swap (zram or disk); without it, overshoot ends in OOM kills.
    """

    node: str
    sockets: int
    node_cpus: int
    gpus: int
    gpus_share_switch: bool
    nic_near_gpus: bool
    gpudirect: bool
    fabric: str
    nics: int
    cpu_policy: str
    far_socket: bool
    cpu_limit: float | None
    mem_limit_gb: float
    storage: str
    storage_gbps: float
    neighbours: int
    neighbour_cores: float
    swap: bool

    @property
    def rdma(self) -> bool:
        return not self.fabric.startswith("eth")

    @property
    def link_gbps(self) -> float:
        """The fabric's usable bytes per NIC, GB/s (Gb/s over 8)."""
        return (FABRICS.get(self.fabric) or ETHERNET[self.fabric]) / 8.0

    @property
    def remote_storage(self) -> bool:
        return self.storage in ("nfs", "object")


def draw_board(rng: np.random.Generator, multi_gpu: bool) -> Board:
    """A board; NVLink boards for multi-GPU Jobs more often, as clusters buy them for that."""
    weights = np.array([0.1, 0.3, 0.25, 0.1, 0.1, 0.08, 0.07])
    if multi_gpu:
        weights = weights * np.array([1.0, 1.5, 1.5, 0.8, 0.3, 0.3, 0.3])
    return BOARDS[int(rng.choice(len(BOARDS), p=weights / weights.sum()))]


def draw_storage(rng: np.random.Generator, intent: Bottleneck) -> tuple[str, float]:
    """Storage kind and its bandwidth to one client, GB/s, before neighbours."""
    remote_p = 0.75 if intent is Bottleneck.IO else 0.3
    if rng.random() < remote_p:
        kind = "nfs" if rng.random() < 0.5 else "object"
        # EFS-like ceiling 1.5 GiB/s per client; throttled or busy shares far below it
        hi = 0.6 if intent is Bottleneck.IO else 1.6
        return kind, float(rng.uniform(0.08, hi))
    kinds = ("sata", "nvme3", "nvme4")
    p = (0.5, 0.3, 0.2) if intent is Bottleneck.IO else (0.1, 0.45, 0.45)
    kind = kinds[int(rng.choice(3, p=p))]
    return kind, LOCAL_DISKS[kind]


def _cpu(
    rng: np.random.Generator, intent: Bottleneck, node_cpus: int, gpus: int
) -> tuple[str, bool, float | None, float]:
    """CPU manager policy, far-socket pinning, CFS limit and neighbours' cores."""
    policy = "static" if rng.random() < 0.4 else "none"
    far = policy == "static" and rng.random() < (0.5 if intent in (Bottleneck.CPU, Bottleneck.GPU) else 0.25)
    per_gpu = rng.uniform(2.0, 6.0) if intent is Bottleneck.CPU else rng.uniform(6.0, 16.0)
    limit: float | None = float(min(node_cpus, round(per_gpu * gpus)))
    if policy == "none" and rng.random() < 0.35:
        limit = None  # burstable without a CPU limit: cAdvisor then emits no CFS counters
    # a crowded node: neighbours without limits keep most cores busy
    busy = rng.uniform(0.8, 0.98) if intent is Bottleneck.CPU and limit is None else rng.uniform(0.0, 0.5)
    return policy, bool(far), limit, float(busy * node_cpus)


def draw_fabric(rng: np.random.Generator, intent: Bottleneck, nodes: int) -> str:
    """The cluster's fabric, shared by every node of the Job: RDMA (IB, RoCE) or plain Ethernet."""
    if nodes > 1 and intent is Bottleneck.INTERCONNECT:
        return str(rng.choice(("ib-edr", "roce-100", "eth-10", "eth-25", "eth-100", "ib-hdr")))
    return str(rng.choice((*FABRICS, "eth-25", "eth-100")))


def draw_placement(
    rng: np.random.Generator, intent: Bottleneck, gpus: int, fabric: str, storage: tuple[str, float]
) -> Placement:
    """Where one pod lands: node topology, PCIe layout, CPU and memory settings, neighbours.

    The fabric and the dataset's storage are the cluster's, the same for every pod of the Job.
    """
    sockets = 2 if rng.random() < 0.8 else 1
    node_cpus = int(rng.choice((16, 32, 48, 64, 96))) * sockets  # logical CPUs per socket, times sockets
    share_switch = (gpus <= 2 and rng.random() < 0.7) or rng.random() < 0.3
    nic_near = rng.random() < (0.35 if intent is Bottleneck.INTERCONNECT else 0.7)
    rdma = not fabric.startswith("eth")
    gpudirect = rdma and nic_near and rng.random() < 0.9
    nics = int(rng.choice((1, 2, 4))) if rdma else 1
    policy, far, limit, neighbour_cores = _cpu(rng, intent, node_cpus, gpus)
    if sockets == 1:
        far = False
    kind, gbps = storage
    neighbours = int(rng.integers(1, 5)) if neighbour_cores > 0.5 * node_cpus else int(rng.integers(0, 4))
    # neighbours reading the same SATA disk or NFS export take their share of it
    shared = 1.0 / (1.0 + 0.5 * neighbours) if kind in ("sata", "nfs") else 1.0
    mem_need = rng.uniform(0.6, 1.0) if intent is Bottleneck.MEMORY else rng.uniform(1.2, 3.0)
    return Placement(
        node=f"gpu-{rng.choice(('a', 'b', 'c', 'k'))!s}{int(rng.integers(1, 400)):03d}",
        sockets=sockets,
        node_cpus=node_cpus,
        gpus=gpus,
        gpus_share_switch=bool(share_switch),
        nic_near_gpus=bool(nic_near),
        gpudirect=bool(gpudirect),
        fabric=fabric,
        nics=nics,
        cpu_policy=policy,
        far_socket=far,
        cpu_limit=limit,
        mem_limit_gb=float(mem_need),  # a multiplier for now: workload.py scales it by the working set
        storage=kind,
        storage_gbps=float(gbps * shared),
        neighbours=neighbours,
        neighbour_cores=neighbour_cores if neighbours else 0.0,
        swap=bool(rng.random() < 0.5),
    )
