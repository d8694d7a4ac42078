"""The hardware and the cluster set-ups family G draws from: boards, storage, fabrics, exporters.

Figures are the vendors' published ones (sources beside each table, and in docs/familyg.md). What
differs between real clusters and no datasheet pins down (power caps, field sets, scrape intervals,
which collectors run) is drawn per job in :func:`draw_cluster`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

GB = 1e9


@dataclass(frozen=True)
class Board:
    """One GPU model, as its datasheet gives it.

    Attributes:
        model: dcgm-exporter's ``modelName``.
        tdp_w: the default (maximum) board power limit, W.
        idle_w: power drawn with a context open and no kernel running, W (typical, not a spec).
        max_clock: the maximum boost SM clock, MHz.
        tflops: dense BF16/FP16 tensor throughput, TFLOP/s.
        hbm_bps: memory bandwidth, B/s.
        fb_gib: framebuffer, GiB.
        pcie_bps: host PCIe bandwidth per direction (x16), B/s.
        nvlink_bps: NVLink bandwidth per GPU per direction, B/s (0: no NVLink).
        prof: whether DCGM profiling (PROF) fields exist on it.
    """

    model: str
    tdp_w: float
    idle_w: float
    max_clock: float
    tflops: float
    hbm_bps: float
    fb_gib: float
    pcie_bps: float
    nvlink_bps: float
    prof: bool = True


# NVIDIA datasheets: A100 (2021), H100 (2023), H200 (2024), L40S (2023), L4 (2023), A10 (2021),
# V100 (2020); PCIe x16 per direction: Gen3 15.8, Gen4 31.5, Gen5 63 GB/s (PCI-SIG lane rates).
BOARDS: tuple[Board, ...] = (
    Board("NVIDIA A100-SXM4-80GB", 400, 55, 1410, 312, 2039 * GB, 80, 31.5 * GB, 300 * GB),
    Board("NVIDIA A100 80GB PCIe", 300, 45, 1410, 312, 1935 * GB, 80, 31.5 * GB, 0),
    Board("NVIDIA H100 80GB HBM3", 700, 75, 1980, 989, 3350 * GB, 80, 63 * GB, 450 * GB),
    Board("NVIDIA H100 PCIe", 350, 50, 1755, 756, 2000 * GB, 80, 63 * GB, 0),
    Board("NVIDIA H200", 700, 80, 1980, 989, 4800 * GB, 141, 63 * GB, 450 * GB),
    Board("NVIDIA L40S", 350, 35, 2520, 362, 864 * GB, 48, 31.5 * GB, 0),
    Board("NVIDIA L4", 72, 16, 2040, 121, 300 * GB, 24, 31.5 * GB, 0),
    Board("NVIDIA A10G", 150, 25, 1710, 125, 600 * GB, 24, 31.5 * GB, 0),
    Board("Tesla V100-SXM2-32GB", 300, 40, 1530, 125, 900 * GB, 32, 15.8 * GB, 150 * GB),
)
# How often each board is drawn: the large training fleets are mostly A100/H100-class.
BOARD_WEIGHTS = np.array([0.2, 0.07, 0.22, 0.06, 0.12, 0.11, 0.06, 0.08, 0.08])


@dataclass(frozen=True)
class Storage:
    """Where the training data lives, as the node sees it.

    Attributes:
        kind: a short name.
        rate_bps: what one node can read from it at best, B/s.
        block: reads show in diskstats and in the cgroup's io.stat (local or attached block device).
        network: reads arrive over the node's Ethernet NIC (netdev counters).
        rdma: reads arrive over InfiniBand (Lustre/GPFS over o2ib: the IB port counters).
        dstate: readers sleep uninterruptibly (iowait, D state, io pressure) rather than in a socket.
        remote: counts as network storage for the IO mechanism.
    """

    kind: str
    rate_bps: float
    block: bool
    network: bool
    rdma: bool
    dstate: bool
    remote: bool


# Samsung/Micron NVMe Gen4 spec sheets (~7 GB/s), SATA III SSDs (~0.55 GB/s), AWS EBS gp3 baseline
# 125 MB/s provisionable to 1 GB/s, Amazon EFS up to ~1.5 GiB/s per client, S3 per-prefix and
# per-connection limits (~100 MB/s per connection; tens of connections per node).
STORAGES: tuple[Storage, ...] = (
    Storage("local-nvme", 7.0 * GB, True, False, False, True, False),
    Storage("local-sata-ssd", 0.55 * GB, True, False, False, True, False),
    Storage("cloud-block-volume", 0.6 * GB, True, False, False, True, False),
    Storage("nfs", 1.2 * GB, False, True, False, True, True),
    Storage("object-store-http", 2.5 * GB, False, True, False, False, True),
    Storage("fuse-object-store", 0.9 * GB, False, True, False, True, True),
    Storage("lustre-o2ib", 10.0 * GB, False, False, True, True, True),
)


@dataclass(frozen=True)
class Fabric:
    """How the nodes of a multi-node job talk.

    Attributes:
        kind: a short name.
        rate_bps: per node, per direction, B/s.
        netdev: the traffic shows in node_network_* (a kernel TCP stack carries it).
        ib_counters: the traffic shows in node_infiniband_port_* (an RDMA NIC with port counters).
        gpudirect: NIC reads/writes GPU memory directly: the bytes cross each GPU's PCIe both ways.
    """

    kind: str
    rate_bps: float
    netdev: bool
    ib_counters: bool
    gpudirect: bool


# IB HDR 200 and NDR 400 Gb/s per port (NVIDIA ConnectX-6/7), one port per GPU on DGX-class nodes;
# RoCE v2 on 100-400 GbE; plain TCP sockets on 25-100 GbE; AWS EFA (400 Gb/s per p4d node) exposes
# no port data counters to node-exporter's infiniband collector.
FABRICS: tuple[Fabric, ...] = (
    Fabric("ib-ndr-8port", 8 * 50 * GB, False, True, True),
    Fabric("ib-hdr-4port", 4 * 25 * GB, False, True, True),
    Fabric("roce-200g-2port", 2 * 25 * GB, False, True, True),
    Fabric("tcp-100g", 12.5 * GB, True, False, False),
    Fabric("tcp-25g", 3.1 * GB, True, False, False),
    Fabric("efa-400g", 50 * GB, False, False, True),
)


@dataclass(frozen=True)
class Cluster:
    """What one job's cluster looks like to the exporters.

    Attributes:
        board: the GPU model.
        power_limit_w: the enforced power limit (at or below the board's TDP).
        node_cpus: logical CPUs per node.
        node_mem_bytes: RAM per node.
        swap: the node has swap on (NodeSwap, LimitedSwap) so pressure shows as swap-in.
        storage: where the data lives.
        fabric: the inter-node fabric.
        scrape: seconds between Prometheus scrapes of every exporter.
        dcgm_collect: seconds between dcgm-exporter's own field updates (a faster scrape repeats them).
        dcgm_fields: "dev" (DEV fields only), "default" (a shipped counters file) or "full".
        power_fields: the counters file exports the power limit and clock-event reasons.
        psi: the kernel exposes pressure files (>= 4.20) and node-exporter reads them.
        ib_collector: node-exporter's infiniband collector is on.
        sidecar: the collector sidecar runs in the job's pods.
        ksm: kube-state-metrics is scraped.
    """

    board: Board
    power_limit_w: float
    node_cpus: int
    node_mem_bytes: float
    swap: bool
    storage: Storage
    fabric: Fabric
    scrape: float
    dcgm_collect: float
    dcgm_fields: str
    power_fields: bool
    psi: bool
    ib_collector: bool
    sidecar: bool
    ksm: bool


SCRAPES = np.array([5.0, 10.0, 15.0, 30.0, 60.0])
SCRAPE_WEIGHTS = np.array([0.08, 0.12, 0.3, 0.4, 0.1])


def pick(rng: np.random.Generator, items: tuple[object, ...], weights: np.ndarray | None = None) -> int:
    """Index of one item, by weight (uniform without)."""
    p = None if weights is None else weights / weights.sum()
    return int(rng.choice(len(items), p=p))


def draw_cluster(rng: np.random.Generator, storage: Storage, fabric: Fabric) -> Cluster:
    """A cluster around a given storage and fabric: the board, caps, exporters, intervals.

    Args:
        rng: the job's generator.
        storage: where the job's data lives (chosen by the job's design).
        fabric: the inter-node fabric (chosen by the job's design).

    Returns:
        The cluster.
    """
    board = BOARDS[pick(rng, BOARDS, BOARD_WEIGHTS)]  # type: ignore[arg-type]
    capped = rng.random() < 0.35
    limit = board.tdp_w * (rng.uniform(0.6, 0.92) if capped else 1.0)
    scrape = float(rng.choice(SCRAPES, p=SCRAPE_WEIGHTS / SCRAPE_WEIGHTS.sum()))
    fields = ("dev", "default", "full")[pick(rng, ("dev", "default", "full"), np.array([0.2, 0.45, 0.35]))]
    if not board.prof:
        fields = "dev"
    return Cluster(
        board=board,
        power_limit_w=float(limit),
        node_cpus=int(rng.choice([32, 48, 64, 96, 128, 192, 224, 256])),
        node_mem_bytes=float(rng.choice([256, 512, 1024, 2048])) * 2**30,
        swap=bool(rng.random() < 0.3),
        storage=storage,
        fabric=fabric,
        scrape=scrape,
        dcgm_collect=max(scrape, float(rng.choice([1.0, 5.0, 30.0], p=[0.3, 0.3, 0.4]))),
        dcgm_fields=fields,
        power_fields=bool(fields == "full" or rng.random() < 0.25),
        psi=bool(rng.random() < 0.85),
        ib_collector=bool(rng.random() < 0.8),
        sidecar=bool(rng.random() < 0.8),
        ksm=bool(rng.random() < 0.9),
    )
