"""The clusters the blind family's jobs run on: node pools, fabrics, storage and exporter set-ups.

Eight kinds, each a pattern seen in practice: HGX nodes on InfiniBand or RoCE, a DGX-1 era pool on
old kernels, cloud GPU nodes (EKS A10G, GKE L4) on Ethernet with block volumes and object storage,
T4 inference nodes reused for training, PCIe H100 boxes, and a shared campus cluster.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Exporters:
    """How a cluster's exporters are set up, as probabilities per job.

    Attributes:
        prof: dcgm-exporter runs a counters file with PROF fields (else DEV fields only).
        sm: that file also turns on SM activity/occupancy (a custom file).
        pipes: and the FP32/FP16 pipe fields.
        nvlink_prof: and the NVLink PROF bytes.
        power_fields: the power limit and clock-event reasons are exported.
        psi: the nodes' kernels expose PSI (>= 4.20, and not booted with psi=0).
        ib_collector: node-exporter's infiniband collector runs (where nodes have HCAs).
        sidecar: the job kept the collector sidecar (did not opt out).
        cfs_dropped: the Prometheus config drops cAdvisor's CFS series to save cardinality.
        scrape_s: the scrape intervals in use.
        dcgm_collect_s: dcgm-exporter's collect intervals (``-c``; the default is 30 s).
    """

    prof: float
    sm: float
    pipes: float
    nvlink_prof: float
    power_fields: float
    psi: float
    ib_collector: float
    sidecar: float
    cfs_dropped: float
    scrape_s: tuple[float, ...]
    dcgm_collect_s: tuple[float, ...]


@dataclass(frozen=True)
class Cluster:
    """One kind of cluster: its nodes, storage, fabric and exporters.

    Attributes:
        name: short name, used in tags and node names.
        weight: how often a job lands here, before its mechanism's constraints.
        boards: the GPU models of its node pools.
        node_gpus, node_cpus, node_mem_gb: one node.
        nic_gbps: Ethernet speeds of its node pools, Gb/s.
        rdma: "" (none), "ib" or "roce"; both show only in node_infiniband_* counters.
        rdma_gbps: all RDMA ports of a node together, Gb/s.
        local, shared: the storage kinds (keys of ``STORAGE``) on the node and over the network.
        p_cpu_limit: a job's pods carry a CPU limit.
        p_swap: a node has swap (zram or a swap file).
        p_power_cap: the boards run below their default power limit.
        cap_frac: that cap as a share of TDP.
        p_neighbours: a node is shared with other jobs' pods.
        cgroup_v1: the nodes run cgroup v1 (no pressure files for the sidecar).
    """

    name: str
    weight: float
    boards: tuple[str, ...]
    node_gpus: int
    node_cpus: int
    node_mem_gb: int
    nic_gbps: tuple[float, ...]
    rdma: str
    rdma_gbps: float
    local: tuple[str, ...]
    shared: tuple[str, ...]
    exporters: Exporters
    p_cpu_limit: float
    p_swap: float
    p_power_cap: float
    cap_frac: tuple[float, float]
    p_neighbours: float
    cgroup_v1: bool = False


CLUSTERS: tuple[Cluster, ...] = (
    # HGX H100 with 8 NDR rails (400 Gb/s per port, TELEMETRY.md) and a custom counters file.
    Cluster(
        name="hgx-h100-ib",
        weight=1.0,
        boards=("NVIDIA H100 80GB HBM3",),
        node_gpus=8,
        node_cpus=224,
        node_mem_gb=2048,
        nic_gbps=(100.0, 200.0),
        rdma="ib",
        rdma_gbps=8 * 400.0,
        local=("nvme-raid",),
        shared=("lustre", "nfs", "object"),
        exporters=Exporters(
            prof=1.0,
            sm=0.85,
            pipes=0.55,
            nvlink_prof=0.3,
            power_fields=0.75,
            psi=1.0,
            ib_collector=0.9,
            sidecar=0.8,
            cfs_dropped=0.3,
            scrape_s=(10.0, 15.0, 30.0),
            dcgm_collect_s=(10.0, 30.0),
        ),
        p_cpu_limit=0.35,
        p_swap=0.0,
        p_power_cap=0.2,
        cap_frac=(0.72, 0.86),
        p_neighbours=0.2,
    ),
    # HGX A100 80 GB on RoCE (8 x 200 Gb/s), power-capped in part.
    Cluster(
        name="hgx-a100-roce",
        weight=1.0,
        boards=("NVIDIA A100-SXM4-80GB",),
        node_gpus=8,
        node_cpus=256,
        node_mem_gb=1024,
        nic_gbps=(100.0,),
        rdma="roce",
        rdma_gbps=8 * 200.0,
        local=("nvme",),
        shared=("nfs", "object"),
        exporters=Exporters(
            prof=1.0,
            sm=0.6,
            pipes=0.3,
            nvlink_prof=0.15,
            power_fields=0.5,
            psi=1.0,
            ib_collector=0.8,
            sidecar=0.7,
            cfs_dropped=0.2,
            scrape_s=(30.0,),
            dcgm_collect_s=(30.0, 60.0),
        ),
        p_cpu_limit=0.5,
        p_swap=0.05,
        p_power_cap=0.4,
        cap_frac=(0.75, 0.85),
        p_neighbours=0.35,
    ),
    # DGX-1 era: old kernels (no PSI, cgroup v1), older dcgm-exporter (often DEV only), EDR IB.
    Cluster(
        name="dgx1-v100-legacy",
        weight=0.8,
        boards=("Tesla V100-SXM2-32GB",),
        node_gpus=8,
        node_cpus=80,
        node_mem_gb=512,
        nic_gbps=(10.0, 25.0),
        rdma="ib",
        rdma_gbps=4 * 100.0,
        local=("sata-ssd",),
        shared=("nfs",),
        exporters=Exporters(
            prof=0.5,
            sm=0.2,
            pipes=0.0,
            nvlink_prof=0.0,
            power_fields=0.0,
            psi=0.0,
            ib_collector=0.6,
            sidecar=0.5,
            cfs_dropped=0.3,
            scrape_s=(30.0, 60.0),
            dcgm_collect_s=(60.0,),
        ),
        p_cpu_limit=0.4,
        p_swap=0.25,
        p_power_cap=0.1,
        cap_frac=(0.83, 0.9),
        p_neighbours=0.5,
        cgroup_v1=True,
    ),
    # EKS g5 nodes: A10G, no NVLink, Ethernet only, EBS/EFS/S3; CPU limits common.
    Cluster(
        name="eks-a10g",
        weight=1.0,
        boards=("NVIDIA A10G",),
        node_gpus=8,
        node_cpus=192,
        node_mem_gb=768,
        nic_gbps=(25.0, 50.0, 100.0),
        rdma="",
        rdma_gbps=0.0,
        local=("block-volume", "nvme"),
        shared=("efs", "object"),
        exporters=Exporters(
            prof=1.0,
            sm=0.0,
            pipes=0.0,
            nvlink_prof=0.0,
            power_fields=0.3,
            psi=1.0,
            ib_collector=0.0,
            sidecar=0.6,
            cfs_dropped=0.4,
            scrape_s=(30.0,),
            dcgm_collect_s=(30.0,),
        ),
        p_cpu_limit=0.75,
        p_swap=0.0,
        p_power_cap=0.0,
        cap_frac=(1.0, 1.0),
        p_neighbours=0.45,
    ),
    # GKE g2 nodes: L4, persistent disks and object storage; scrape intervals set per team.
    Cluster(
        name="gke-l4",
        weight=1.0,
        boards=("NVIDIA L4",),
        node_gpus=8,
        node_cpus=96,
        node_mem_gb=384,
        nic_gbps=(16.0, 32.0, 100.0),
        rdma="",
        rdma_gbps=0.0,
        local=("block-volume", "nvme"),
        shared=("object", "nfs"),
        exporters=Exporters(
            prof=1.0,
            sm=0.3,
            pipes=0.2,
            nvlink_prof=0.0,
            power_fields=0.4,
            psi=1.0,
            ib_collector=0.0,
            sidecar=0.7,
            cfs_dropped=0.3,
            scrape_s=(15.0, 30.0, 60.0),
            dcgm_collect_s=(30.0,),
        ),
        p_cpu_limit=0.8,
        p_swap=0.1,
        p_power_cap=0.0,
        cap_frac=(1.0, 1.0),
        p_neighbours=0.5,
    ),
    # T4 nodes repurposed from inference: Gen3, SATA, often DEV fields only, hot chassis.
    Cluster(
        name="t4-gen3",
        weight=0.8,
        boards=("Tesla T4",),
        node_gpus=4,
        node_cpus=64,
        node_mem_gb=384,
        nic_gbps=(10.0, 25.0),
        rdma="",
        rdma_gbps=0.0,
        local=("sata-ssd",),
        shared=("nfs", "object"),
        exporters=Exporters(
            prof=0.45,
            sm=0.0,
            pipes=0.0,
            nvlink_prof=0.0,
            power_fields=0.2,
            psi=0.5,
            ib_collector=0.0,
            sidecar=0.4,
            cfs_dropped=0.2,
            scrape_s=(30.0, 60.0),
            dcgm_collect_s=(30.0, 60.0),
        ),
        p_cpu_limit=0.5,
        p_swap=0.2,
        p_power_cap=0.0,
        cap_frac=(1.0, 1.0),
        p_neighbours=0.55,
    ),
    # H100 PCIe boxes without NVLink bridges, RoCE 2 x 200 Gb/s.
    Cluster(
        name="h100-pcie-roce",
        weight=0.9,
        boards=("NVIDIA H100 PCIe",),
        node_gpus=8,
        node_cpus=128,
        node_mem_gb=1024,
        nic_gbps=(100.0,),
        rdma="roce",
        rdma_gbps=2 * 200.0,
        local=("nvme",),
        shared=("nfs", "object"),
        exporters=Exporters(
            prof=1.0,
            sm=0.5,
            pipes=0.4,
            nvlink_prof=0.0,
            power_fields=0.6,
            psi=1.0,
            ib_collector=0.85,
            sidecar=0.7,
            cfs_dropped=0.25,
            scrape_s=(5.0, 15.0, 30.0),
            dcgm_collect_s=(30.0,),
        ),
        p_cpu_limit=0.6,
        p_swap=0.05,
        p_power_cap=0.1,
        cap_frac=(0.8, 0.9),
        p_neighbours=0.3,
    ),
    # A university cluster: A100 40 GB (and some 80 GB), HDR IB, NFS/Lustre, shared nodes, slow scrapes.
    Cluster(
        name="campus-a100",
        weight=1.0,
        boards=("NVIDIA A100-SXM4-40GB", "NVIDIA A100-SXM4-80GB"),
        node_gpus=8,
        node_cpus=128,
        node_mem_gb=1024,
        nic_gbps=(25.0,),
        rdma="ib",
        rdma_gbps=2 * 200.0,
        local=("nvme", "sata-ssd"),
        shared=("nfs", "lustre"),
        exporters=Exporters(
            prof=1.0,
            sm=0.4,
            pipes=0.2,
            nvlink_prof=0.0,
            power_fields=0.5,
            psi=1.0,
            ib_collector=0.7,
            sidecar=0.5,
            cfs_dropped=0.25,
            scrape_s=(60.0, 30.0),
            dcgm_collect_s=(60.0,),
        ),
        p_cpu_limit=0.7,
        p_swap=0.15,
        p_power_cap=0.5,
        cap_frac=(0.62, 0.75),
        p_neighbours=0.75,
    ),
)


def cluster(name: str) -> Cluster:
    """The cluster of that name (KeyError names it)."""
    for c in CLUSTERS:
        if c.name == name:
            return c
    raise KeyError(name)


def node_name(c: Cluster, serial: int, rng: np.random.Generator) -> str:
    """A node name in the cluster's own style; ``serial`` keeps names unique across the family."""
    if c.name == "eks-a10g":
        return f"ip-10-{20 + serial % 40}-{serial // 40 % 256}-{int(rng.integers(4, 250))}.ec2.internal"
    if c.name == "gke-l4":
        # GKE names a node <cluster>-<pool>-<instance-group hash>-<suffix>; a hash per 16 nodes.
        return f"gke-ml-l4-pool-{(serial // 16) * 2654435761 % 2**32:08x}-{serial:04x}"
    prefix = {
        "hgx-h100-ib": "h100-r{r:02d}-n{n:03d}",
        "hgx-a100-roce": "dgxa100-{r:02d}{n:03d}",
        "dgx1-v100-legacy": "dgx1-{n:03d}",
        "t4-gen3": "t4-worker-{n:03d}",
        "h100-pcie-roce": "hpc-gpu{n:04d}",
        "campus-a100": "c{r:02d}n{n:03d}.hpc.campus.edu",
    }[c.name]
    return prefix.format(r=serial // 32, n=serial)
