"""What one family-I job is before any telemetry: its hardware, its shape and its environment.

A plan is drawn from the job's own generator; the step model (``stages``) and the exporters
(``gpu``, ``host``) read it. Nothing here decides the label.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from bottleneck_operator_dev.familyi.hardware import (
    BOARD_WEIGHTS,
    BOARDS,
    FABRIC_WEIGHTS,
    FABRICS,
    NODE_SHAPES,
    STORAGE_WEIGHTS,
    STORAGES,
    Board,
    Fabric,
    NodeShape,
    Storage,
)

T = TypeVar("T")

SCRAPE_INTERVALS = (5.0, 10.0, 15.0, 30.0, 60.0)
SCRAPE_WEIGHTS = (0.06, 0.12, 0.37, 0.35, 0.1)


@dataclass(frozen=True)
class Plan:
    """The job's hardware and environment.

    Attributes:
        board: the GPUs' board.
        pods, gpus: pods of the job and GPUs per pod.
        storage: where the loader reads.
        fabric: between nodes (used only when ``pods`` > 1).
        node: the host each pod runs on.
        power_cap_w: the enforced power limit (admins cap below TDP for power budgets).
        cpu_limit: the workload containers' CPU limit in cores, None without one.
        workers: data-loader worker processes per pod.
        neighbours: other pods on the same node (shared nodes without MIG).
        neighbour_cpu: cores the neighbours keep busy.
        cache_hit: share of reads served from the page cache (datasets that fit it stop touching the disk).
        mmap_dataset: the dataset is memory-mapped (Arrow, LMDB): its reads are major faults, not swap.
        scrape: each exporter's scrape interval (s): dcgm, cadvisor, ksm, node, sidecar.
        dcgm_collect: dcgm-exporter's collect interval (s): a faster scrape repeats its cached value.
        accumulation: gradient-accumulation micro-steps per optimizer step.
    """

    board: Board
    pods: int
    gpus: int
    storage: Storage
    fabric: Fabric
    node: NodeShape
    power_cap_w: float
    cpu_limit: float | None
    workers: int
    neighbours: int
    neighbour_cpu: float
    cache_hit: float
    mmap_dataset: bool
    scrape: dict[str, float]
    dcgm_collect: float
    accumulation: int


def _pick(rng: np.random.Generator, items: tuple[T, ...], weights: tuple[float, ...]) -> T:
    p = np.asarray(weights, dtype=float)
    return items[int(rng.choice(len(items), p=p / p.sum()))]


def draw_plan(rng: np.random.Generator, *, min_pods: int = 1, min_gpus: int = 1, nvlink: bool | None = None) -> Plan:
    """A plan from the job's generator.

    Args:
        rng: the job's own generator.
        min_pods, min_gpus: lower bounds a mechanism needs (a fabric needs two pods).
        nvlink: require a board with NVLink (True) or without (False); None for any.
    """
    boards = [i for i, b in enumerate(BOARDS) if nvlink is None or (b.nvlink_bps > 0) == nvlink]
    board = BOARDS[boards[int(rng.choice(len(boards), p=_norm([BOARD_WEIGHTS[i] for i in boards])))]]
    pods = max(min_pods, int(_pick(rng, (1, 1, 2, 2, 4, 8, 16), (0.3, 0.1, 0.2, 0.1, 0.15, 0.1, 0.05))))
    gpus_choices = (8, 4, 2, 1) if board.nvlink_bps > 0 else (4, 2, 1, 8)
    gpus = max(min_gpus, int(_pick(rng, gpus_choices, (0.55, 0.2, 0.12, 0.13))))
    node = _pick(rng, NODE_SHAPES, (0.2, 0.2, 0.2, 0.2, 0.1, 0.1))
    shared = gpus < 8 and rng.random() < 0.6
    neighbours = int(rng.integers(1, 6)) if shared else 0
    scrape = {
        e: float(_pick(rng, SCRAPE_INTERVALS, SCRAPE_WEIGHTS)) for e in ("dcgm", "cadvisor", "ksm", "node", "sidecar")
    }
    if rng.random() < 0.5:  # one ServiceMonitor interval for the whole stack
        scrape = dict.fromkeys(scrape, scrape["node"])
    return Plan(
        board=board,
        pods=pods,
        gpus=gpus,
        storage=_pick(rng, STORAGES, STORAGE_WEIGHTS),
        fabric=_pick(rng, FABRICS, FABRIC_WEIGHTS),
        node=node,
        power_cap_w=board.tdp_w * (1.0 if rng.random() < 0.55 else float(rng.uniform(0.6, 0.95))),
        cpu_limit=float(rng.integers(4, 16) * gpus) if rng.random() < 0.4 else None,
        workers=int(rng.integers(2, 13)) * gpus,
        neighbours=neighbours,
        neighbour_cpu=float(rng.uniform(0.05, 0.7) * node.cpus) if neighbours else 0.0,
        cache_hit=float(rng.uniform(0.0, 0.95)) if rng.random() < 0.4 else 0.0,
        mmap_dataset=bool(rng.random() < 0.15),
        scrape=scrape,
        dcgm_collect=max(scrape["dcgm"], 30.0 if rng.random() < 0.5 else scrape["dcgm"]),
        accumulation=int(_pick(rng, (1, 2, 4, 8), (0.6, 0.15, 0.15, 0.1))),
    )


def _norm(weights: list[float]) -> list[float]:
    total = sum(weights)
    return [w / total for w in weights]


def loader_cores(plan: Plan) -> tuple[float, str]:
    """Cores the loader workers can use per pod, and what caps them.

    The trainer processes keep about one core per GPU busy (the Python loop and CUDA's
    synchronisation spin), so the workers get what is left under the limit or on the node.
    """
    caps = {"too-few-workers": float(plan.workers)}
    if plan.cpu_limit is not None:
        caps["throttled"] = max(0.5, plan.cpu_limit - plan.gpus)
    node_free = plan.node.cpus - plan.neighbour_cpu - plan.gpus
    caps["saturated"] = max(0.5, node_free)
    cause = min(caps.items(), key=lambda kv: kv[1])
    return cause[1], cause[0]
