"""What differs between real clusters: boards, node sizes, limits, storage, fabric, exporters' setup.

Intent leans each draw (an IO-leaning Job more often reads from a network file system, a CPU-leaning
one gets a tight CPU limit), but nothing here sets a class: the stage times decide it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from bottleneck_operator.contract.signals import Family
from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator_dev.familyan.hardware import (
    BOARD_BY_KEY,
    FABRIC_BY_KEY,
    STORAGE_BY_KEY,
    Board,
    Fabric,
    Storage,
)
from bottleneck_operator_dev.familyan.workloads import GB, _pick, _u

# Boards each workload kind is usually run on (weights over hardware.BOARDS' keys).
_BOARDS_FOR: dict[str, dict[str, float]] = {
    "llm-pretrain": {"A100-SXM4": 4, "H100-SXM5": 4, "V100-SXM2": 1},
    "recsys-embedding": {"A100-SXM4": 3, "H100-SXM5": 2, "V100-SXM2": 1},
    "diffusion": {"A100-SXM4": 3, "H100-SXM5": 2, "L4": 1, "A10": 1, "H100-PCIe": 1},
    "image-jpeg": {"A100-SXM4": 3, "V100-SXM2": 2, "A10": 2, "L4": 1, "T4": 1, "H100-PCIe": 1},
    "speech-audio": {"A100-SXM4": 3, "V100-SXM2": 2, "A10": 1, "H100-PCIe": 1},
    "finetune-smallfiles": {"A10": 2, "L4": 2, "T4": 2, "A100-SXM4": 2, "H100-PCIe": 1},
    "rl-env": {"A10": 2, "L4": 1, "T4": 1, "A100-SXM4": 2, "V100-SXM2": 1},
}


@dataclass(frozen=True)
class Cluster:
    """The machines and monitoring one Job runs under.

    Attributes:
        board: the GPU model.
        nodes: nodes (one pod of the Job on each).
        per_node: GPUs per pod.
        node_cpus: logical CPUs per node.
        cpu_limit: the pod's CPU limit in cores, None without one.
        node_mem: node RAM, bytes.
        swap: node swap, bytes (0: none, as most Kubernetes nodes).
        storage: where the data is read from; ``storage_share`` of its bandwidth is this Job's.
        storage_share: see above (a busy filer leaves less).
        fabric: the inter-node network; ``ports`` of it per node.
        ports: see above.
        power_limit: enforced board power limit, W (the TDP unless capped).
        clock_spread: per-GPU relative spread of achieved clocks.
        scrape: each exporter's scrape interval, s, by short name ("dcgm", "node", ...).
        dcgm_collect: dcgm-exporter's collect interval, s (its -c flag).
        fields: DCGM field set: "dev-only", "default", "custom" or "full".
        layout: the label layout read, per exporter.
        missing: families this cluster does not export.
        tags: what was drawn, for the Job's tags.
    """

    board: Board
    nodes: int
    per_node: int
    node_cpus: int
    cpu_limit: float | None
    node_mem: float
    swap: float
    storage: Storage
    storage_share: float
    fabric: Fabric
    ports: int
    power_limit: float
    clock_spread: float
    scrape: dict[str, float]
    dcgm_collect: float
    fields: str
    layout: dict[str, str]
    missing: frozenset[Family]
    tags: tuple[str, ...] = field(default=())

    @property
    def gpus(self) -> int:
        return self.nodes * self.per_node

    def nic_bandwidth(self) -> float:
        """Bytes/s the node's ports carry per direction."""
        return self.fabric.gbps / 8 * 1e9 * self.ports


def _board(rng: np.random.Generator, kind: str) -> Board:
    weights = _BOARDS_FOR[kind]
    return BOARD_BY_KEY[_pick(rng, tuple(weights), tuple(weights.values()))]


def _shape(rng: np.random.Generator, kind: str, board: Board, intent: Bottleneck) -> tuple[int, int]:
    """Nodes and GPUs per node: SXM boards come eight to a node, PCIe boards one to eight."""
    per_node = int(rng.choice([4, 8], p=[0.25, 0.75])) if board.nvlink else int(rng.choice([1, 2, 4, 8]))
    multi = {"llm-pretrain": 0.8, "recsys-embedding": 0.5, "image-jpeg": 0.3, "speech-audio": 0.25, "diffusion": 0.3}
    p = multi.get(kind, 0.05) + (0.2 if intent is Bottleneck.INTERCONNECT else 0.0)
    nodes = int(rng.choice([2, 4, 8], p=[0.5, 0.35, 0.15])) if rng.random() < min(p, 0.95) else 1
    return nodes, per_node


def _fabric(rng: np.random.Generator, intent: Bottleneck, per_node: int) -> tuple[Fabric, int]:
    if intent is Bottleneck.INTERCONNECT:
        key = _pick(rng, ("tcp-25g", "tcp-100g", "roce-100g", "roce-200g", "ib-hdr"), (3, 3, 2, 1, 1))
    else:
        key = _pick(rng, ("tcp-25g", "tcp-100g", "roce-100g", "roce-200g", "ib-hdr", "ib-ndr"), (0.5, 1.5, 1, 1, 2, 2))
    fabric = FABRIC_BY_KEY[key]
    if not fabric.rdma:
        return fabric, 1
    many = 0.2 if intent is Bottleneck.INTERCONNECT else 0.6
    return fabric, per_node if rng.random() < many else int(rng.choice([1, 2]))


def _storage(rng: np.random.Generator, intent: Bottleneck) -> tuple[Storage, float]:
    keys = ("nvme-gen4", "nvme-gen3", "sata-ssd", "nfs", "efs", "object-store")
    w = (1, 1, 1.5, 3, 2, 3) if intent is Bottleneck.IO else (3, 2, 0.5, 2, 1, 1.5)
    storage = STORAGE_BY_KEY[_pick(rng, keys, w)]
    share = _u(rng, 0.15, 0.6) if intent is Bottleneck.IO else _u(rng, 0.5, 1.0)
    return storage, share


def _monitoring(rng: np.random.Generator, board: Board) -> tuple[dict[str, float], float, str]:
    """Scrape intervals 5-60 s (a shared default, dcgm's chart at 15 s), collect interval, field set."""
    base = float(rng.choice([5, 10, 15, 20, 30, 60], p=[0.1, 0.15, 0.25, 0.1, 0.3, 0.1]))
    dcgm = base if rng.random() < 0.6 else float(rng.choice([15, 30]))
    scrape = {"dcgm": dcgm, "node": base, "cadvisor": base, "ksm": base, "sidecar": base}
    collect = float(rng.choice([30, 10, 5], p=[0.6, 0.25, 0.15]))
    fields = _pick(rng, ("dev-only", "default", "custom", "full"), (0.2, 0.35, 0.3, 0.15))
    return scrape, collect, fields


def _missing(
    rng: np.random.Generator, fabric: Fabric, fields: str, board: Board, cpu_limit: float | None
) -> set[Family]:
    gone: set[Family] = set()
    prof = {"dev-only": (), "default": (Family.DCGM_PROF,), "custom": (Family.DCGM_PROF, Family.DCGM_PROF_SM)}
    have = prof.get(fields, (Family.DCGM_PROF, Family.DCGM_PROF_SM, Family.DCGM_PROF_NVLINK, Family.DCGM_PROF_PIPES))
    gone |= {
        f
        for f in (Family.DCGM_PROF, Family.DCGM_PROF_SM, Family.DCGM_PROF_NVLINK, Family.DCGM_PROF_PIPES)
        if f not in have
    }
    if not board.nvlink:
        gone.add(Family.DCGM_PROF_NVLINK)
    if fields != "full" and rng.random() < 0.6:
        gone.add(Family.DCGM_POWER_CLOCKS)
    if cpu_limit is None:
        gone.add(Family.CADVISOR_CFS)  # cAdvisor emits CFS counters only for containers with a limit
    if not fabric.rdma or rng.random() < 0.2:
        gone.add(Family.NODE_IB)
    for fam, p in (
        (Family.SIDECAR, 0.2),
        (Family.NODE_PSI, 0.1),
        (Family.KSM, 0.06),
        (Family.NODE, 0.04),
        (Family.CADVISOR, 0.03),
    ):
        if rng.random() < p:
            gone.add(fam)
    if Family.SIDECAR in gone or rng.random() < 0.4:
        gone.add(Family.SIDECAR_NET)
    return gone


def draw_cluster(rng: np.random.Generator, kind: str, intent: Bottleneck) -> Cluster:
    """Everything about the Job's machines and monitoring except the memory limit (set with the workload)."""
    board = _board(rng, kind)
    nodes, per_node = _shape(rng, kind, board, intent)
    node_cpus = int(rng.choice([32, 48, 64, 96, 128, 192, 256]))
    node_cpus = max(node_cpus, 4 * per_node)
    if rng.random() < 0.35 and intent is not Bottleneck.CPU:
        cpu_limit = None
    else:
        per_gpu = _u(rng, 1.5, 5.0) if intent is Bottleneck.CPU else _u(rng, 4.0, 16.0)
        cpu_limit = float(min(node_cpus, round(per_gpu * per_node)))
    fabric, ports = _fabric(rng, intent, per_node)
    storage, share = _storage(rng, intent)
    capped = rng.random() < 0.3
    power_limit = board.tdp * (_u(rng, 0.6, 0.9) if capped else 1.0)
    scrape, collect, fields = _monitoring(rng, board)
    limit = None if cpu_limit is None else cpu_limit
    missing = _missing(rng, fabric, fields, board, limit)
    layout = {
        "dcgm": _pick(rng, ("pod-labels", "exported-labels"), (1, 2)),
        "node": _pick(rng, ("node-label", "pod-join"), (1, 2)),
        "cadvisor": _pick(rng, ("with-spec", "spec-dropped"), (1, 2)),
    }
    tags = (
        f"board:{board.key}",
        f"nodes:{nodes}",
        f"gpus-per-pod:{per_node}",
        f"storage:{storage.key}",
        f"fabric:{fabric.key}" if nodes > 1 else "fabric:single-node",
        f"dcgm-fields:{fields}",
        f"scrape:{scrape['dcgm']:g}s",
        f"dcgm-collect:{collect:g}s",
        "cpu-limit:none" if cpu_limit is None else f"cpu-limit:{cpu_limit:g}",
    ) + (("power-capped",) if capped else ())
    return Cluster(
        board=board,
        nodes=nodes,
        per_node=per_node,
        node_cpus=node_cpus,
        cpu_limit=cpu_limit,
        node_mem=float(rng.choice([256, 512, 1024, 2048])) * GB,
        swap=float(rng.choice([0.0, 64 * GB], p=[0.75, 0.25])),
        storage=storage,
        storage_share=share,
        fabric=fabric,
        ports=ports,
        power_limit=power_limit,
        clock_spread=_u(rng, 0.01, 0.05),
        scrape=scrape,
        dcgm_collect=collect,
        fields=fields,
        layout=layout,
        missing=frozenset(missing),
        tags=tags,
    )
