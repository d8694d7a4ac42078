"""The cluster: boards, node pools, storage, fabrics and what its exporters are set up to publish.

Figures are the vendors' published ones (datasheets cited in docs/familyp.md); idle power is a
typical reading of an idle board, not a datasheet figure. Bandwidths are per direction, in bytes/s.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

GB = 1e9
GIB = float(2**30)


@dataclass(frozen=True)
class Board:
    """One GPU model as dcgm-exporter names it, with its datasheet figures."""

    model: str
    tdp_w: float
    idle_w: float
    max_clock_mhz: float
    hbm_bps: float
    fb_gib: float
    pcie_bps: float  # host link, x16, per direction
    nvlink_bps: float  # per GPU per direction; 0 without NVLink
    prof: str  # "full": all PROF groups; "engine": GR_ENGINE_ACTIVE only (T4-class)
    mig: bool


BOARDS: dict[str, Board] = {
    "h100-sxm": Board("NVIDIA H100 80GB HBM3", 700.0, 75.0, 1980.0, 3.35e12, 80.0, 63 * GB, 450 * GB, "full", True),
    "h200-sxm": Board("NVIDIA H200", 700.0, 80.0, 1980.0, 4.8e12, 141.0, 63 * GB, 450 * GB, "full", True),
    "h100-pcie": Board("NVIDIA H100 PCIe", 350.0, 50.0, 1755.0, 2.0e12, 80.0, 63 * GB, 0.0, "full", True),
    "a100-sxm": Board("NVIDIA A100-SXM4-80GB", 400.0, 58.0, 1410.0, 2.039e12, 80.0, 31.5 * GB, 300 * GB, "full", True),
    "a100-pcie": Board("NVIDIA A100-PCIE-40GB", 250.0, 38.0, 1410.0, 1.555e12, 40.0, 31.5 * GB, 0.0, "full", True),
    "l40s": Board("NVIDIA L40S", 350.0, 34.0, 2520.0, 0.864e12, 48.0, 31.5 * GB, 0.0, "full", False),
    "l4": Board("NVIDIA L4", 72.0, 16.0, 2040.0, 0.3e12, 24.0, 31.5 * GB, 0.0, "full", False),
    "a10g": Board("NVIDIA A10G", 150.0, 22.0, 1710.0, 0.6e12, 24.0, 31.5 * GB, 0.0, "full", False),
    "v100-sxm": Board("Tesla V100-SXM2-32GB", 300.0, 42.0, 1530.0, 0.9e12, 32.0, 15.8 * GB, 150 * GB, "full", False),
    "t4": Board("Tesla T4", 70.0, 10.0, 1590.0, 0.32e12, 16.0, 15.8 * GB, 0.0, "engine", False),
}


@dataclass(frozen=True)
class NodePool:
    """A pool of identical nodes.

    Attributes:
        name: the pool's name (becomes part of node names).
        board: key into :data:`BOARDS`.
        gpus: GPUs per node.
        cpus: logical CPUs per node.
        mem_gib: host memory.
        nvswitch: GPUs all-to-all over NVSwitch (else NVLink mesh or PCIe only).
        fabric: "ib", "roce" or "tcp": how nodes talk.
        fabric_bps: the node's inter-node bandwidth, all ports, per direction.
        nvme_bps: local NVMe read throughput the node sustains.
    """

    name: str
    board: str
    gpus: int
    cpus: int
    mem_gib: float
    nvswitch: bool
    fabric: str
    fabric_bps: float
    nvme_bps: float


POOLS: tuple[NodePool, ...] = (
    NodePool("hgx-h100", "h100-sxm", 8, 224, 2048.0, True, "ib", 400 * GB, 12 * GB),
    NodePool("hgx-h200", "h200-sxm", 8, 224, 2048.0, True, "ib", 400 * GB, 14 * GB),
    NodePool("hgx-a100-ib", "a100-sxm", 8, 256, 1024.0, True, "ib", 200 * GB, 7 * GB),
    NodePool("hgx-a100-roce", "a100-sxm", 8, 128, 1024.0, True, "roce", 50 * GB, 6 * GB),
    NodePool("pcie-h100", "h100-pcie", 8, 128, 1024.0, False, "roce", 50 * GB, 7 * GB),
    NodePool("pcie-a100", "a100-pcie", 4, 64, 512.0, False, "tcp", 12.5 * GB, 3.5 * GB),
    NodePool("pcie-l40s", "l40s", 8, 128, 768.0, False, "roce", 25 * GB, 7 * GB),
    NodePool("pcie-l4", "l4", 4, 48, 192.0, False, "tcp", 3.1 * GB, 3.5 * GB),
    NodePool("cloud-a10g", "a10g", 4, 48, 192.0, False, "tcp", 6.25 * GB, 2.0 * GB),
    NodePool("legacy-v100", "v100-sxm", 8, 80, 512.0, False, "ib", 12.5 * GB, 3.0 * GB),
    NodePool("infer-t4", "t4", 4, 48, 192.0, False, "tcp", 3.1 * GB, 1.5 * GB),
)

# Storage a loader reads from: (kind, low, high sustained per-node read rate in bytes/s).
# "nvme" and "block" show as block reads; "nfs" as network bytes with iowait and D-state readers;
# "object" (HTTP object store) as network bytes with readers asleep in S state (no iowait).
STORAGE: dict[str, tuple[float, float]] = {
    "nvme": (1.5 * GB, 6.5 * GB),
    "block": (0.12 * GB, 0.5 * GB),
    "nfs": (0.2 * GB, 1.4 * GB),
    "object": (0.15 * GB, 2.2 * GB),
}


@dataclass(frozen=True)
class Exporters:
    """How the job's cluster publishes telemetry.

    Attributes:
        dcgm_fields: "dev" (DEV only), "default" (a shipped counters file) or "full" (a custom one).
        dcgm_collect: dcgm-exporter's collect interval (its cache: a faster scrape repeats values).
        scrape: seconds between scrapes, by exporter short name.
        present: exporters that run in this cluster ("dcgm" always).
        psi: the nodes' kernels expose pressure (>= 4.20, not disabled).
        ib_collector: node-exporter's infiniband collector reads the RDMA ports.
        power_clocks: the counters file exports the enforced power limit and clock-event reasons.
    """

    dcgm_fields: str
    dcgm_collect: float
    scrape: dict[str, float]
    present: frozenset[str]
    psi: bool
    ib_collector: bool
    power_clocks: bool


def draw_exporters(rng: np.random.Generator) -> Exporters:
    """One cluster's exporter setup, as clusters differ in practice."""
    fields = str(rng.choice(["dev", "default", "full"], p=[0.25, 0.45, 0.30]))
    base = float(rng.choice([5.0, 10.0, 15.0, 30.0, 60.0], p=[0.08, 0.17, 0.35, 0.3, 0.1]))
    scrape = {}
    for exporter in ("dcgm", "cadvisor", "ksm", "node", "sidecar"):
        # Some teams scrape their own ServiceMonitors on their own interval.
        own = rng.random() < 0.25
        scrape[exporter] = float(rng.choice([10.0, 15.0, 30.0, 60.0])) if own else base
    present = {"dcgm"}
    for exporter, p in (("cadvisor", 0.95), ("ksm", 0.9), ("node", 0.93), ("sidecar", 0.7)):
        if rng.random() < p:
            present.add(exporter)
    return Exporters(
        dcgm_fields=fields,
        dcgm_collect=float(rng.choice([30.0, 10.0, 5.0], p=[0.6, 0.25, 0.15])),
        scrape=scrape,
        present=frozenset(present),
        psi=bool(rng.random() < 0.85),
        ib_collector=bool(rng.random() < 0.8),
        power_clocks=fields == "full" and bool(rng.random() < 0.7),
    )
