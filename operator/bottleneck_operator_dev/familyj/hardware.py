"""What the machines can do: GPU boards, fabrics and storage, from their datasheets.

Every figure here is a published capacity (the source is named beside it), never a value fitted to
telemetry. The step model divides work by these capacities; the exporters scale activity by them.
"""

from __future__ import annotations

from dataclasses import dataclass

GB = 1e9  # datasheets give bandwidths in decimal gigabytes per second
GIB = float(1 << 30)


@dataclass(frozen=True)
class Board:
    """One GPU board as its datasheet describes it.

    Attributes:
        model_name: dcgm-exporter's ``modelName`` label.
        tensor_tflops: dense BF16/FP16 tensor throughput (no sparsity).
        fp32_tflops: non-tensor FP32 throughput.
        hbm_bps: device-memory bandwidth, bytes/s.
        nvlink_bps: NVLink bandwidth per GPU per direction, bytes/s (0: no NVLink).
        pcie_bps: host PCIe x16 bandwidth per direction, bytes/s.
        tdp_w: the board's maximum power (TDP); enforced limits may sit below it.
        idle_w: typical draw with a context open and no kernel running.
        boost_mhz: maximum SM boost clock.
        memory_gib: framebuffer size.
        mig: whether the board can be partitioned with MIG.
        per_node: GPUs a typical node of this board carries.
        prof: whether DCGM's profiling (PROF) fields exist on it.
    """

    model_name: str
    tensor_tflops: float
    fp32_tflops: float
    hbm_bps: float
    nvlink_bps: float
    pcie_bps: float
    tdp_w: float
    idle_w: float
    boost_mhz: float
    memory_gib: float
    mig: bool
    per_node: int
    prof: bool = True


_GEN3, _GEN4, _GEN5 = 15.8 * GB, 31.5 * GB, 63.0 * GB  # PCIe x16 per direction (PCI-SIG lane rates)

# (board, weight in the cluster mix). Sources: NVIDIA A100 datasheet (2021), H100 datasheet (2023),
# H200 product brief (2024), L40S datasheet (2023: 362 TFLOPS BF16 dense, 864 GB/s, 350 W, 2520 MHz),
# A10 datasheet (125 TFLOPS FP16, 600 GB/s, 150 W), L4 datasheet (121 TFLOPS, 300 GB/s, 72 W),
# V100 datasheet (125 TFLOPS, 900 GB/s, NVLink2 300 GB/s total). NVLink per direction is half the
# datasheet's bidirectional total.
BOARDS: tuple[tuple[Board, float], ...] = (
    (Board("NVIDIA H100 80GB HBM3", 989, 67, 3350 * GB, 450 * GB, _GEN5, 700, 70, 1980, 80, True, 8), 0.24),
    (Board("NVIDIA A100-SXM4-80GB", 312, 19.5, 2039 * GB, 300 * GB, _GEN4, 400, 55, 1410, 80, True, 8), 0.19),
    (Board("NVIDIA H200", 989, 67, 4800 * GB, 450 * GB, _GEN5, 700, 75, 1980, 141, True, 8), 0.12),
    (Board("NVIDIA A100-SXM4-40GB", 312, 19.5, 1555 * GB, 300 * GB, _GEN4, 400, 50, 1410, 40, True, 8), 0.07),
    (Board("NVIDIA L40S", 362, 91.6, 864 * GB, 0.0, _GEN4, 350, 35, 2520, 48, False, 8), 0.11),
    (Board("NVIDIA A100 80GB PCIe", 312, 19.5, 1935 * GB, 0.0, _GEN4, 300, 45, 1410, 80, True, 8), 0.05),
    (Board("NVIDIA H100 PCIe", 756, 51, 2000 * GB, 0.0, _GEN5, 350, 50, 1755, 80, True, 8), 0.05),
    (Board("NVIDIA A10", 125, 31.2, 600 * GB, 0.0, _GEN4, 150, 20, 1695, 24, False, 4), 0.07),
    (Board("NVIDIA L4", 121, 30.3, 300 * GB, 0.0, _GEN4, 72, 16, 2040, 24, False, 8), 0.05),
    (Board("Tesla V100-SXM2-32GB", 125, 15.7, 900 * GB, 150 * GB, _GEN3, 300, 40, 1530, 32, False, 8), 0.05),
)

# MIG slices a job may get: (profile, share of the GPU's compute slices, share of its memory).
# From NVIDIA's MIG user guide: A100/H100 have 7 compute slices and 8 memory slices.
MIG_PROFILES: tuple[tuple[str, float, float], ...] = (
    ("1g", 1 / 7, 1 / 8),
    ("2g", 2 / 7, 2 / 8),
    ("3g", 3 / 7, 4 / 8),
    ("4g", 4 / 7, 4 / 8),
)


@dataclass(frozen=True)
class Fabric:
    """How a node reaches the others.

    Attributes:
        name: short name used in tags.
        port_gbit: line rate of one port, Gb/s (IBTA: HDR 200, NDR 400; Ethernet 25-400 GbE).
        rdma: whether collectives bypass the kernel (InfiniBand, RoCE): netdev never sees them.
        ib_counters: whether node-exporter's infiniband collector sees the ports (an mlx5 RoCE NIC
            appears under /sys/class/infiniband as well).
        netdev_sees_rdma: whether the RDMA NIC's netdev counters also carry the RDMA bytes (some
            RoCE drivers fold them into the interface statistics).
    """

    name: str
    port_gbit: float
    rdma: bool
    ib_counters: bool
    netdev_sees_rdma: bool = False

    def port_bps(self) -> float:
        """Payload bytes per second of one port per direction (about 90 % of line rate after headers)."""
        return self.port_gbit * 1e9 / 8 * 0.9


FABRICS: tuple[tuple[Fabric, float], ...] = (
    (Fabric("ib-ndr", 400, True, True), 0.25),
    (Fabric("ib-hdr", 200, True, True), 0.2),
    (Fabric("roce-400", 400, True, True), 0.1),
    (Fabric("roce-200-netdev", 200, True, True, netdev_sees_rdma=True), 0.1),
    (Fabric("roce-100-nocollector", 100, True, False, netdev_sees_rdma=True), 0.05),
    (Fabric("tcp-100g", 100, False, False), 0.15),
    (Fabric("tcp-50g", 50, False, False), 0.1),
    (Fabric("tcp-25g", 25, False, False), 0.05),
)


@dataclass(frozen=True)
class Storage:
    """Where the training data is read from.

    Attributes:
        name: short name used in tags.
        client_bps: (low, high) read bandwidth one client (node) gets, bytes/s.
        block: reads go through a local block device (diskstats, cAdvisor and io.stat see them).
        dstate: readers sleep in D state (iowait, io pressure); False for HTTP object-store readers,
            which wait in socket receive (S state).
        via: where the bytes arrive when not a local block device: "netdev" or "ib" (RDMA LNet).
        cpu_per_gb: core-seconds of client CPU per GB read (TLS, HTTP, FUSE daemon, NFS RPC).
        request_bytes: typical read request size (diskstats reads per second = bytes / this).
    """

    name: str
    client_bps: tuple[float, float]
    block: bool
    dstate: bool
    via: str
    cpu_per_gb: float
    request_bytes: float


# NVMe Gen4 ~7 GB/s, Gen3 ~3.5 GB/s, SATA ~0.55 GB/s (vendor datasheets); cloud block volumes are
# throttled above the device (AWS gp3 125-1000 MB/s); Amazon EFS up to ~1.5 GiB/s per client; a
# single HTTP stream to S3 gives ~85-90 MB/s (AWS performance guidelines), so readers open many.
STORAGE: dict[str, Storage] = {
    s.name: s
    for s in (
        Storage("nvme-gen4", (4.5 * GB, 6.8 * GB), True, True, "", 0.05, 128 * 1024),
        Storage("nvme-gen3", (2.2 * GB, 3.3 * GB), True, True, "", 0.05, 128 * 1024),
        Storage("sata-ssd", (0.35 * GB, 0.52 * GB), True, True, "", 0.05, 64 * 1024),
        Storage("cloud-volume", (0.12 * GB, 1.0 * GB), True, True, "", 0.08, 256 * 1024),
        Storage("nfs", (0.3 * GB, 2.2 * GB), False, True, "netdev", 0.25, 1024 * 1024),
        Storage("lustre-o2ib", (1.5 * GB, 8.0 * GB), False, True, "ib", 0.15, 1024 * 1024),
        Storage("fuse-bucket", (0.15 * GB, 1.2 * GB), False, True, "netdev", 0.9, 1024 * 1024),
        Storage("object-store-http", (0.08 * GB, 2.5 * GB), False, False, "netdev", 0.7, 8 * 1024 * 1024),
    )
}

# Node CPU counts seen on GPU nodes (DGX A100: 256 threads, DGX H100: 224, cloud 8-GPU VMs 96-192,
# single-GPU cloud VMs 8-48).
NODE_CPUS = (32, 48, 64, 96, 128, 192, 224, 256)
