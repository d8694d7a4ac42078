"""The cluster a job lands on: boards, nodes, neighbours, exporters and how they are scraped.

Nothing here decides what limits the job; it draws the things real clusters differ in and no
simulator pins down: the board and its enforced power limit, clock spread between GPUs, which
exporters and DCGM field sets exist, scrape intervals from 5 to 60 s, shared nodes (no MIG),
exporter restarts, counter resets and the Prometheus major that reads the series.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.signals import Family
from bottleneck_operator_dev.familye.hardware import (
    BOARD_WEIGHTS,
    BOARDS,
    FABRIC_BY_KEY,
    GIB,
    STORAGE_BY_KEY,
    Board,
    Fabric,
    Storage,
)

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

# dcgm-exporter field sets: DEV fields only (no profiling), the shipped counters file, or a custom one.
FIELD_SETS = {
    "dev": frozenset({Family.DCGM_DEV}),
    "default": frozenset({Family.DCGM_DEV, Family.DCGM_PROF}),
    "full": frozenset(
        {Family.DCGM_DEV, Family.DCGM_PROF, Family.DCGM_PROF_SM, Family.DCGM_PROF_PIPES, Family.DCGM_POWER_CLOCKS}
    ),
}
SCRAPE_CHOICES = (5.0, 10.0, 15.0, 30.0, 60.0)
SCRAPE_WEIGHTS = (0.08, 0.12, 0.25, 0.4, 0.15)


@dataclass(frozen=True)
class Env:
    """Where and how one job runs and is watched.

    Attributes:
        board: the GPU board of every pod.
        pods: number of pods; gpus: GPUs per pod.
        node_of: node index of each pod (pods of one job may share a node).
        nodes: number of distinct nodes.
        node_cpus: logical CPUs per node.
        neighbours: other jobs' pods per node (shared nodes, no MIG).
        nb_cores, nb_disk_bps, nb_net_bps, nb_mem_frac, nb_io_psi, nb_cpu_psi: neighbours' load per node.
        power_limit: enforced power limit per GPU, W (pods x gpus).
        clock_spread: each GPU's sustained clock as a share of boost (silicon and cooling).
        hot: GPUs whose cooling makes them thermally slow down (pods x gpus, bool).
        fabric: the inter-node fabric (None for one node); ports: fabric ports per node.
        storage: where samples are read from.
        cpu_limit: per-pod CPU limit in cores (NaN: none).
        mem_limit: per-pod memory limit in bytes (NaN: none).
        node_mem: memory per node, bytes.
        swap: nodes have swap (Kubernetes NodeSwap).
        families: exporter families present.
        scrape: scrape interval per exporter short name, s.
        dcgm_collect: dcgm-exporter's collect interval, s.
        prometheus_major: 2 or 3.
        outages: (exporter, start offset s, duration s) gaps in scraping, offsets from the window start.
        resets: (exporter, offset s) counter resets.
        tags: what was drawn, for the reader.
    """

    board: Board
    pods: int
    gpus: int
    node_of: IntArray
    nodes: int
    node_cpus: int
    neighbours: IntArray
    nb_cores: FloatArray
    nb_disk_bps: FloatArray
    nb_net_bps: FloatArray
    nb_mem_frac: FloatArray
    nb_io_psi: FloatArray
    nb_cpu_psi: FloatArray
    power_limit: FloatArray
    clock_spread: FloatArray
    hot: npt.NDArray[np.bool_]
    fabric: Fabric | None
    ports: int
    storage: Storage
    cpu_limit: FloatArray
    mem_limit: FloatArray
    node_mem: float
    swap: bool
    families: frozenset[Family]
    scrape: dict[str, float]
    dcgm_collect: float
    prometheus_major: int
    outages: tuple[tuple[str, float, float], ...] = ()
    resets: tuple[tuple[str, float], ...] = ()
    tags: tuple[str, ...] = field(default=())


def pick_board(rng: np.random.Generator, *, nvlink: bool | None = None) -> Board:
    """A board by how common it is, optionally only those with (or without) NVLink."""
    keep = [i for i, b in enumerate(BOARDS) if nvlink is None or (b.nvlink_bps > 0) == nvlink]
    w = np.array([BOARD_WEIGHTS[i] for i in keep])
    return BOARDS[keep[int(rng.choice(len(keep), p=w / w.sum()))]]


def _topology(rng: np.random.Generator, board: Board, pods: int, gpus: int) -> tuple[IntArray, int]:
    """Pods to nodes: whole-node pods get a node each; small pods may pair up on one node."""
    per_node = max(1, board.gpus_per_node // gpus)
    if pods > 1 and per_node > 1 and rng.random() < 0.35:
        node_of = np.arange(pods, dtype=np.int64) // per_node
    else:
        node_of = np.arange(pods, dtype=np.int64)
    return node_of, int(node_of.max()) + 1


def _neighbours(rng: np.random.Generator, env_nodes: int, gpus: int, board: Board, cpus: int) -> dict[str, FloatArray]:
    """Other jobs' pods on each node and the load they add (none where the job fills the node)."""
    free_gpus = board.gpus_per_node - gpus
    shared = rng.random(env_nodes) < (0.75 if free_gpus > 0 else 0.2)
    count = np.where(shared, rng.integers(1, 6, env_nodes), 0)
    heavy = rng.random(env_nodes) < 0.25
    load = np.where(shared, rng.uniform(0.02, 0.25, env_nodes) + heavy * rng.uniform(0.1, 0.45, env_nodes), 0.0)
    return {
        "count": count.astype(np.int64),
        "cores": load * cpus,
        "disk": np.where(shared, rng.lognormal(np.log(30e6), 1.2, env_nodes) * (1 + 8 * heavy), 0.0),
        "net": np.where(shared, rng.lognormal(np.log(40e6), 1.2, env_nodes) * (1 + 5 * heavy), 0.0),
        "mem": np.where(shared, rng.uniform(0.05, 0.35, env_nodes), 0.0),
        "io_psi": np.where(shared & heavy, rng.uniform(0.02, 0.3, env_nodes), rng.uniform(0.0, 0.02, env_nodes)),
        "cpu_psi": np.where(shared & heavy, rng.uniform(0.02, 0.2, env_nodes), rng.uniform(0.0, 0.02, env_nodes)),
    }


def _power(rng: np.random.Generator, board: Board, pods: int, gpus: int) -> tuple[FloatArray, FloatArray]:
    """Enforced power limits (a share of clusters cap below the board's maximum) and clock spread."""
    if rng.random() < 0.3:
        cap = board.tdp_w * rng.uniform(0.6, 0.92)
        limit = np.full((pods, gpus), round(cap / 5) * 5.0)
    else:
        limit = np.full((pods, gpus), board.tdp_w)
    spread = np.clip(rng.normal(1.0, rng.uniform(0.004, 0.025), (pods, gpus)), 0.9, 1.0)
    return limit, spread


def _families(rng: np.random.Generator, fabric: Fabric | None) -> frozenset[Family]:
    """Which exporters and field sets this cluster runs."""
    field_set = str(rng.choice(["dev", "default", "full"], p=[0.2, 0.45, 0.35]))
    fams: set[Family] = set(FIELD_SETS[field_set])
    if field_set == "default" and rng.random() < 0.3:
        fams.add(Family.DCGM_POWER_CLOCKS)
    if field_set == "full" and rng.random() < 0.35:
        fams.add(Family.DCGM_PROF_NVLINK)
    for fam, p in ((Family.CADVISOR, 0.92), (Family.KSM, 0.85), (Family.NODE, 0.9), (Family.SIDECAR, 0.7)):
        if rng.random() < p:
            fams.add(fam)
    if Family.SIDECAR in fams:
        fams.add(Family.SIDECAR_NET)  # the collector counts its pod's network namespace too
    if Family.NODE in fams:
        if rng.random() < 0.85:
            fams.add(Family.NODE_PSI)
        if fabric is not None and fabric.ib_counters:
            fams.add(Family.NODE_IB)
    return frozenset(fams)


def _scrape(rng: np.random.Generator) -> tuple[dict[str, float], float]:
    """Scrape interval per exporter (one cluster default, some monitors overridden) and DCGM's collect interval."""
    base = float(rng.choice(SCRAPE_CHOICES, p=SCRAPE_WEIGHTS))
    scrape = {name: base for name in ("dcgm", "cadvisor", "ksm", "node", "sidecar")}
    for name in scrape:
        if rng.random() < 0.25:
            scrape[name] = float(rng.choice(SCRAPE_CHOICES, p=SCRAPE_WEIGHTS))
    collect = float(rng.choice([1.0, 5.0, 10.0, 30.0], p=[0.15, 0.2, 0.15, 0.5]))
    return scrape, collect


def _quirks(
    rng: np.random.Generator, duration: float
) -> tuple[tuple[tuple[str, float, float], ...], tuple[tuple[str, float], ...]]:
    """Exporter restarts (a gap in scraping) and counter resets somewhere in the window."""
    outages = []
    for name in ("dcgm", "node", "sidecar", "cadvisor"):
        if rng.random() < 0.06:
            outages.append((name, float(rng.uniform(0.1, 0.8) * duration), float(rng.uniform(40, 200))))
    resets = []
    for name in ("node_ib", "sidecar", "cadvisor"):
        if rng.random() < 0.07:
            resets.append((name, float(rng.uniform(0.1, 0.9) * duration)))
    return tuple(outages), tuple(resets)


def _tags(
    board: Board,
    storage_key: str,
    scrape: dict[str, float],
    fabric: Fabric | None,
    ports: int,
    limit: FloatArray,
    shared: bool,
    outages: tuple[tuple[str, float, float], ...],
    resets: tuple[tuple[str, float], ...],
) -> list[str]:
    """What was drawn, as tags a reader can filter on."""
    tags = [f"board:{board.key}", f"storage:{storage_key}", f"scrape:{int(scrape['dcgm'])}s"]
    if fabric is not None:
        tags += [f"fabric:{fabric.key}", f"ports:{ports}"]
    if float(limit.min()) < board.tdp_w:
        tags.append("power-capped")
    if shared:
        tags.append("shared-node")
    return tags + [f"outage:{o[0]}" for o in outages] + [f"reset:{r[0]}" for r in resets]


def draw_env(
    rng: np.random.Generator,
    duration: float,
    *,
    pods: int,
    gpus: int,
    board: Board,
    fabric_key: str | None,
    storage_key: str,
) -> Env:
    """Everything about the cluster around one job; its limits are set from its step by the caller."""
    node_of, nodes = _topology(rng, board, pods, gpus)
    cpus = int(rng.choice(board.node_cpus))
    nb = _neighbours(rng, nodes, gpus * int(np.bincount(node_of).max()), board, cpus)
    limit, spread = _power(rng, board, pods, gpus)
    hot = rng.random((pods, gpus)) < (0.03 if rng.random() < 0.3 else 0.0)
    fabric = FABRIC_BY_KEY[fabric_key] if fabric_key is not None and nodes > 1 else None
    fams = _families(rng, fabric)
    scrape, collect = _scrape(rng)
    outages, resets = _quirks(rng, duration)
    node_mem = float(rng.choice([256, 512, 1024, 2048])) * GIB
    ports = int(rng.choice([1, 2, 4, 8])) if fabric is not None else 0
    tags = _tags(board, storage_key, scrape, fabric, ports, limit, bool(nb["count"].any()), outages, resets)
    return Env(
        board=board,
        pods=pods,
        gpus=gpus,
        node_of=node_of,
        nodes=nodes,
        node_cpus=cpus,
        neighbours=nb["count"].astype(np.int64),
        nb_cores=nb["cores"],
        nb_disk_bps=nb["disk"],
        nb_net_bps=nb["net"],
        nb_mem_frac=nb["mem"],
        nb_io_psi=nb["io_psi"],
        nb_cpu_psi=nb["cpu_psi"],
        power_limit=limit,
        clock_spread=spread,
        hot=hot,
        fabric=fabric,
        ports=ports,
        storage=STORAGE_BY_KEY[storage_key],
        cpu_limit=np.full(pods, np.nan),
        mem_limit=np.full(pods, np.nan),
        node_mem=node_mem,
        swap=bool(rng.random() < 0.3),
        families=fams,
        scrape=scrape,
        dcgm_collect=collect,
        prometheus_major=int(rng.choice([2, 3], p=[0.6, 0.4])),
        outages=outages,
        resets=resets,
        tags=tuple(tags),
    )
