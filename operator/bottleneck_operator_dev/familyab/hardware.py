"""Hardware figures: GPUs, host links, networks and storage, from datasheets and shared/TELEMETRY.md.

Every number here is a capability (what the part can do at best); how much of it a Job gets is
decided in :mod:`.stages`. docs/familyab.md lists each figure with its source.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Gpu:
    """One GPU model.

    Attributes:
        key: short name used in tags.
        model_name: dcgm-exporter's ``modelName`` label.
        half_tflops: dense FP16/BF16 rate (tensor cores where the GPU has them).
        tf32_tflops: dense TF32 tensor rate, 0 where the GPU has none (FP32 is used instead).
        fp32_tflops: FP32 rate without tensor cores.
        hbm_gbs: memory bandwidth, GB/s.
        memory_gib: framebuffer size.
        tdp_w: board power (the default enforced limit).
        boost_mhz: maximum SM clock.
        nvlink_gbs: NVLink bandwidth per GPU and direction, GB/s (0: PCIe card, no NVLink).
        pcie_gen: host link generation (x16).
        prof: DCGM profiling support: "full", "multiplexed" (T4/A10: groups share counters) or
            "none" (pre-Volta: no PROF fields at all).
        tensor_cores: whether FP16 runs on tensor cores (tensor pipe activity exists).
    """

    key: str
    model_name: str
    half_tflops: float
    tf32_tflops: float
    fp32_tflops: float
    hbm_gbs: float
    memory_gib: float
    tdp_w: float
    boost_mhz: float
    nvlink_gbs: float
    pcie_gen: int
    prof: str
    tensor_cores: bool

    @property
    def idle_w(self) -> float:
        """Power with no kernel running: about a sixth of TDP on datacenter boards (assumed)."""
        return 0.17 * self.tdp_w


# TELEMETRY.md's hardware table for the dense rates, bandwidths and NVLink; TDP, clocks, TF32/FP32
# rates and the P100 from the vendors' datasheets (see the doc's table for which is which).
GPUS: dict[str, Gpu] = {
    g.key: g
    for g in (
        Gpu("v100", "Tesla V100-SXM2-32GB", 125.0, 0.0, 15.7, 900.0, 32.0, 300.0, 1530.0, 150.0, 3, "full", True),
        Gpu("a100", "NVIDIA A100-SXM4-80GB", 312.0, 156.0, 19.5, 2039.0, 80.0, 400.0, 1410.0, 300.0, 4, "full", True),
        Gpu("h100", "NVIDIA H100 80GB HBM3", 989.0, 494.0, 67.0, 3350.0, 80.0, 700.0, 1980.0, 450.0, 5, "full", True),
        Gpu("h100pcie", "NVIDIA H100 PCIe", 756.0, 378.0, 51.0, 2000.0, 80.0, 350.0, 1755.0, 0.0, 5, "full", True),
        Gpu("a10", "NVIDIA A10", 125.0, 62.5, 31.2, 600.0, 24.0, 150.0, 1695.0, 0.0, 4, "multiplexed", True),
        Gpu("l4", "NVIDIA L4", 121.0, 60.0, 30.3, 300.0, 24.0, 72.0, 2040.0, 0.0, 4, "full", True),
        Gpu("t4", "Tesla T4", 65.0, 0.0, 8.1, 320.0, 16.0, 70.0, 1590.0, 0.0, 3, "multiplexed", True),
        Gpu("p100", "Tesla P100-PCIE-16GB", 18.7, 0.0, 9.3, 720.0, 16.0, 250.0, 1329.0, 0.0, 3, "none", False),
    )
}

# PCIe x16 per direction, GB/s (TELEMETRY.md, from the per-lane rates).
PCIE_GBS = {3: 15.8, 4: 31.5, 5: 63.0}


@dataclass(frozen=True)
class NodeType:
    """A server shape: how many GPUs, cores and GiB of RAM it has."""

    gpus: int
    cpus: int
    mem_gib: float


# Shapes the traces and vendors publish: DGX A100 (8 GPUs, 128 cores, 1 TiB), DGX H100 (8, 112,
# 2 TiB), PAI's T4 machine (2 GPUs, 96 cores, 512 GB: clusterdata v2020 README), Philly's 8-GPU
# servers, and common 4-GPU PCIe servers (assumed).
NODE_TYPES: dict[str, tuple[NodeType, ...]] = {
    "v100": (NodeType(8, 96, 768.0), NodeType(4, 48, 384.0)),
    "a100": (NodeType(8, 128, 1024.0),),
    "h100": (NodeType(8, 112, 2048.0),),
    "h100pcie": (NodeType(8, 128, 1024.0), NodeType(4, 64, 512.0)),
    "a10": (NodeType(4, 64, 512.0), NodeType(8, 96, 768.0)),
    "l4": (NodeType(4, 48, 384.0), NodeType(8, 96, 768.0)),
    "t4": (NodeType(2, 96, 512.0), NodeType(4, 64, 256.0)),
    "p100": (NodeType(8, 56, 512.0), NodeType(4, 40, 256.0)),
}


@dataclass(frozen=True)
class Nic:
    """A node's data network for collectives: its port speed, ports and transport."""

    kind: str  # "eth" or "ib" (InfiniBand) or "roce" (RDMA over Ethernet)
    gbps: float  # per port
    ports: int
    rdma: bool

    @property
    def node_bytes_per_s(self) -> float:
        """Line rate of all ports together, bytes/s."""
        return self.gbps * self.ports * 1e9 / 8.0

    @property
    def tag(self) -> str:
        return f"{self.kind}{int(self.gbps)}x{self.ports}{'-rdma' if self.rdma else '-tcp'}"


# Share of line rate a collective reaches: RDMA close to line rate (nccl-tests busbw on IB), TCP
# sockets well below it and with kernel CPU cost (assumed ranges).
RDMA_EFFICIENCY = (0.82, 0.94)
TCP_EFFICIENCY = (0.35, 0.65)


@dataclass(frozen=True)
class Storage:
    """Where the training data is read from.

    Attributes:
        kind: "nvme", "sata" (local block devices), "nfs", "lustre" (kernel network file
            systems), "object" (HTTP object store read from inside the pod).
        node_gbs: best read rate one node can get, GB/s (before sharing).
        latency_s: time to open and start reading one file or object.
        block: whether reads are block-device reads (cAdvisor fs reads, node disk counters).
        kernel_client: whether reads block in the kernel (D state, iowait, io pressure).
        pod_netns: whether the bytes cross the pod's own network interfaces.
    """

    kind: str
    node_gbs: float
    latency_s: float
    block: bool
    kernel_client: bool
    pod_netns: bool

    @property
    def local(self) -> bool:
        return self.block


def storage(kind: str, node_gbs: float, latency_s: float) -> Storage:
    """A storage of ``kind`` with the given capability, its client semantics fixed by the kind."""
    block = kind in ("nvme", "sata")
    return Storage(kind, node_gbs, latency_s, block, kind != "object", kind == "object")


# Capability ranges per kind (GB/s per node, seconds per file). Local drives and EFS from
# TELEMETRY.md; Lustre client and filer shares assumed; object-store latency from the S3
# performance whitepaper (small requests: tens of ms), per-connection throughput from the
# Akamai object storage guide (about 1 Gbps per connection).
STORAGE_RANGES: dict[str, tuple[tuple[float, float], tuple[float, float]]] = {
    "nvme": ((3.5, 7.0), (0.00005, 0.0002)),
    "sata": ((0.45, 0.55), (0.0002, 0.0005)),
    "nfs": ((0.3, 1.5), (0.001, 0.004)),
    "lustre": ((1.0, 5.0), (0.0005, 0.002)),
    "object": ((0.5, 3.0), (0.02, 0.06)),
}
OBJECT_STREAM_BPS = (50e6, 125e6)  # one HTTP connection
