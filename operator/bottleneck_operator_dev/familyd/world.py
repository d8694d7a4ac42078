"""What differs between real clusters, drawn once per job: the setup its telemetry is read from.

A job here runs on one cluster whose exporters, field sets, scrape intervals, limits and neighbours
are drawn independently of the job's bottleneck, except where the bottleneck's mechanism needs a
property (a CPU limit for CFS throttling, two nodes for a network-bound all-reduce): those the
mechanism draws (:mod:`.mechanisms`) set on top of this one.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from bottleneck_operator.contract.signals import Family
from bottleneck_operator_dev.familyd.hardware import (
    BOARD_WEIGHTS,
    BOARDS,
    ETHERNET_GBPS,
    GIB,
    INFINIBAND_GBPS,
    ROCE_GBPS,
    STORAGE,
    Board,
    Fabric,
    Storage,
    gbps,
)

Rng = np.random.Generator

# dcgm-exporter's field sets (TELEMETRY.md): DEV only (no profiling module, or a counters file without
# PROF), the shipped default file (GR_ENGINE, tensor, DRAM, PCIe), and a custom "full" file.
FIELD_SETS = ("dev-only", "default", "full")


@dataclass(frozen=True)
class Exporters:
    """How the job's telemetry is collected.

    Attributes:
        interval: seconds between scrapes, by exporter short name ("dcgm", "cadvisor", "ksm", "node",
            "sidecar"); every value a multiple of 5 s, the grid the job is simulated on.
        dcgm_collect: dcgm-exporter's own collection period (``-c``), s: a faster scrape repeats it.
        field_set: one of :data:`FIELD_SETS`.
        families: the families the cluster publishes (before the job's own hardware removes some,
            NVLink fields on a PCIe board for instance).
        prometheus_major: 2 or 3 (how ``rate()`` treats a range's edges).
    """

    interval: dict[str, float]
    dcgm_collect: float
    field_set: str
    families: frozenset[Family]
    prometheus_major: int


@dataclass(frozen=True)
class Setup:
    """One job's hardware and cluster.

    Attributes:
        board: the GPU board.
        power_cap_w: the enforced power limit (equal to or below the board's TDP).
        clock_lock: application clocks as a share of the boost clock (1.0: not locked).
        pods: number of pods; gpus: GPUs per pod; pods_per_node: the job's pods sharing one node.
        node_cpus: logical CPUs per node; node_mem: bytes per node.
        cpu_limit: the trainer container's CPU limit in cores, None without one.
        mem_limit: its memory limit in bytes, None without one.
        swap: whether the nodes have swap (NodeSwap, LimitedSwap).
        fabric: the inter-node fabric, None when the job fits on one node.
        storage: where the samples are read from.
        neighbours: other workloads' pods on each of the job's nodes.
        exporters: how the telemetry is collected.
        checkpoint: (period, duration) of periodic checkpoint pauses in seconds, or None.
        hcas: the nodes carry InfiniBand/RoCE adapters even when the job itself stays on one node.
    """

    board: Board
    power_cap_w: float
    clock_lock: float
    pods: int
    gpus: int
    pods_per_node: int
    node_cpus: int
    node_mem: float
    cpu_limit: float | None
    mem_limit: float | None
    swap: bool
    fabric: Fabric | None
    storage: Storage
    neighbours: tuple[int, ...]
    exporters: Exporters
    checkpoint: tuple[float, float] | None
    hcas: bool = False

    @property
    def nodes(self) -> int:
        return -(-self.pods // self.pods_per_node)

    @property
    def total_gpus(self) -> int:
        return self.pods * self.gpus

    def node_of(self, pod: int) -> int:
        return pod // self.pods_per_node


def _choice(rng: Rng, options: tuple[float, ...] | tuple[int, ...], weights: tuple[float, ...]) -> float:
    p = np.asarray(weights, dtype=float)
    return float(options[int(rng.choice(len(options), p=p / p.sum()))])


def draw_exporters(rng: Rng) -> Exporters:
    """Scrape intervals 5-60 s, a DCGM field set, and which exporter families the cluster has."""
    interval = {
        "dcgm": _choice(rng, (5, 10, 15, 30, 60), (0.1, 0.15, 0.35, 0.3, 0.1)),
        "cadvisor": _choice(rng, (10, 15, 30, 60), (0.15, 0.35, 0.4, 0.1)),
        "ksm": _choice(rng, (15, 30, 60), (0.3, 0.5, 0.2)),
        "node": _choice(rng, (5, 15, 30, 60), (0.1, 0.35, 0.4, 0.15)),
        "sidecar": _choice(rng, (5, 15, 30), (0.3, 0.4, 0.3)),
    }
    field_set = FIELD_SETS[int(rng.choice(3, p=[0.2, 0.45, 0.35]))]
    families = {Family.DCGM_DEV}
    if field_set != "dev-only":
        families.add(Family.DCGM_PROF)
    if field_set == "full":
        families |= {Family.DCGM_PROF_SM, Family.DCGM_PROF_PIPES}
        if rng.random() < 0.5:
            families.add(Family.DCGM_PROF_NVLINK)
    if rng.random() < (0.6 if field_set == "full" else 0.25):
        families.add(Family.DCGM_POWER_CLOCKS)
    for family, p in ((Family.CADVISOR, 0.93), (Family.KSM, 0.88), (Family.NODE, 0.93), (Family.SIDECAR, 0.7)):
        if rng.random() < p:
            families.add(family)
    if Family.CADVISOR not in families and Family.SIDECAR not in families:
        # A job with neither its own cgroup's view nor the sidecar's has no host evidence at all: the
        # family keeps at least one of them so that every label stays decidable from the telemetry.
        families.add(Family.CADVISOR if rng.random() < 0.5 else Family.SIDECAR)
    if Family.NODE in families:
        families.add(Family.NODE_IB)  # kept only where the nodes have HCAs (see finish_setup)
        if rng.random() < 0.9:  # PSI needs kernel >= 4.20 and psi=1 on some distributions
            families.add(Family.NODE_PSI)
    collect = _choice(rng, (1, 5, 10, 30), (0.1, 0.25, 0.25, 0.4))
    collect = min(collect, interval["dcgm"]) if rng.random() < 0.5 else collect
    return Exporters(interval, collect, field_set, frozenset(families), 2 if rng.random() < 0.6 else 3)


def draw_fabric(rng: Rng, kind: str | None = None) -> Fabric:
    """An inter-node fabric: TCP Ethernet, InfiniBand or RoCE, with 1-8 rails per node."""
    kind = kind or str(rng.choice(["ethernet", "infiniband", "roce"], p=[0.35, 0.4, 0.25]))
    if kind == "ethernet":
        return Fabric(
            kind, gbps(_choice(rng, ETHERNET_GBPS, (0.2, 0.2, 0.4, 0.2))), int(rng.choice([1, 2])), False, False
        )
    rates = INFINIBAND_GBPS if kind == "infiniband" else ROCE_GBPS
    ports = int(rng.choice([1, 2, 4, 8], p=[0.25, 0.25, 0.25, 0.25]))
    rate = _choice(rng, rates, tuple(1.0 for _ in rates))
    return Fabric(kind, gbps(rate), ports, True, bool(rng.random() < 0.7))


def draw_setup(rng: Rng) -> Setup:
    """A cluster and a job shape, independent of the bottleneck the job will have."""
    board = BOARDS[int(rng.choice(len(BOARDS), p=np.asarray(BOARD_WEIGHTS) / sum(BOARD_WEIGHTS)))]
    pods = int(rng.choice([1, 2, 3, 4, 6, 8, 12, 16], p=[0.3, 0.2, 0.04, 0.18, 0.04, 0.14, 0.04, 0.06]))
    gpus = int(min(board.gpus_per_node, rng.choice([1, 2, 4, 8], p=[0.2, 0.2, 0.25, 0.35])))
    per_node = 2 if gpus * 2 <= board.gpus_per_node and pods > 1 and rng.random() < 0.3 else 1
    capped = rng.random() < 0.35  # admins cap power for density or cost
    cap = board.tdp_w * (float(rng.uniform(0.6, 0.95)) if capped else 1.0)
    node_cpus = int(
        rng.choice([32, 48, 64, 96, 128, 192, 224, 256])
        if board.gpus_per_node == 8
        else rng.choice([16, 32, 48, 64, 96])
    )
    node_mem = (
        float(rng.choice([256, 512, 1024, 2048])) * GIB
        if board.gpus_per_node == 8
        else float(rng.choice([64, 128, 256, 512])) * GIB
    )
    per_pod_share = gpus / board.gpus_per_node
    cpu_limit = None
    if rng.random() < 0.55:
        cpu_limit = float(max(2, round(node_cpus * per_pod_share * float(rng.uniform(0.3, 0.95)))))
    mem_limit = float(node_mem * per_pod_share * float(rng.uniform(0.3, 0.9))) if rng.random() < 0.7 else None
    fabric = draw_fabric(rng) if pods > per_node else None
    storage = STORAGE[str(rng.choice(list(STORAGE), p=[0.3, 0.05, 0.2, 0.25, 0.2]))]
    shared = gpus < board.gpus_per_node
    neighbours = tuple(
        int(rng.integers(1, 7)) if shared and rng.random() < 0.7 else int(rng.random() < 0.2)
        for _ in range(-(-pods // per_node))
    )
    checkpoint = None
    if rng.random() < 0.35:
        checkpoint = (float(rng.uniform(300, 1800)), float(rng.uniform(20, 150)))
    return Setup(
        board=board,
        power_cap_w=cap,
        clock_lock=float(rng.uniform(0.8, 0.95)) if rng.random() < 0.1 else 1.0,
        pods=pods,
        gpus=gpus,
        pods_per_node=per_node,
        node_cpus=node_cpus,
        node_mem=node_mem,
        cpu_limit=cpu_limit,
        mem_limit=mem_limit,
        swap=bool(rng.random() < 0.25),
        fabric=fabric,
        storage=storage,
        neighbours=neighbours,
        exporters=draw_exporters(rng),
        checkpoint=checkpoint,
        hcas=board.gpus_per_node == 8 and bool(rng.random() < 0.6),
    )


def finish_setup(setup: Setup) -> Setup:
    """Drop the families the job's hardware cannot have, once the mechanism has settled the setup."""
    families = set(setup.exporters.families)
    if setup.board.nvlink_bps <= 0:
        families.discard(Family.DCGM_PROF_NVLINK)
    rdma = setup.fabric is not None and setup.fabric.rdma
    if not (rdma or (setup.fabric is None and setup.hcas)):
        families.discard(Family.NODE_IB)
    if Family.SIDECAR in families:
        families.add(Family.SIDECAR_NET)  # the sidecar counts its pod's network namespace too
    if setup.cpu_limit is None:
        families.discard(Family.CADVISOR_CFS)
    elif Family.CADVISOR in families:
        families.add(Family.CADVISOR_CFS)
    return replace(setup, exporters=replace(setup.exporters, families=frozenset(families)))
