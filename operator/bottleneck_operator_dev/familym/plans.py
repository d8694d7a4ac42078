"""A job's plan: its workload, hardware, parallelism and base stage times, built for a target class.

The builder sets the target stage so that its removal would speed the job up by a drawn strength,
from barely there (1.05-1.2x) to overwhelming; the label is then decided by the step model alone
(``stages.label_of``), and a plan whose label is not the target is drawn again.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator_dev.familym.hardware import (
    BOARDS,
    NVLINK_BOARDS,
    Board,
    Fabric,
    Node,
    Storage,
    draw_fabric,
    draw_node,
    draw_storage,
)

# name: (memory-bound kernel share, decode core-seconds per kernel-second, comm per kernel-second,
#        usual storage kinds, AMP probability)
WORKLOADS: dict[str, tuple[tuple[float, float], tuple[float, float], tuple[float, float], tuple[str, ...], float]] = {
    "llm-pretrain-fsdp": ((0.15, 0.35), (0.01, 0.05), (0.3, 1.2), ("page-cache", "nvme", "object-store"), 0.97),
    "llm-finetune-lora": ((0.2, 0.45), (0.02, 0.1), (0.05, 0.3), ("page-cache", "nfs", "nvme"), 0.95),
    "recsys-embeddings": ((0.45, 0.7), (0.2, 1.0), (0.2, 0.8), ("object-store", "nvme", "nfs"), 0.6),
    "vision-jpeg": ((0.15, 0.35), (2.0, 12.0), (0.1, 0.4), ("nvme", "nfs", "object-store", "sata"), 0.8),
    "video-decode": ((0.15, 0.3), (4.0, 16.0), (0.1, 0.4), ("nvme", "block-volume", "object-store"), 0.85),
    "speech-asr": ((0.25, 0.45), (1.0, 6.0), (0.1, 0.5), ("nfs", "nvme", "object-store"), 0.8),
    "diffusion": ((0.1, 0.3), (0.5, 4.0), (0.1, 0.5), ("nvme", "object-store", "page-cache"), 0.95),
}

# What a job of each class and mechanism plausibly runs (the mechanism spelling is the contract's).
MECHANISM_WORKLOADS: dict[tuple[Bottleneck, str], tuple[str, ...]] = {
    (Bottleneck.IO, "local-disk"): ("vision-jpeg", "video-decode", "speech-asr", "recsys-embeddings"),
    (Bottleneck.IO, "network-storage"): ("vision-jpeg", "speech-asr", "recsys-embeddings", "llm-finetune-lora"),
    (Bottleneck.CPU, "too-few-workers"): ("vision-jpeg", "speech-asr", "diffusion", "video-decode"),
    (Bottleneck.CPU, "saturated"): ("vision-jpeg", "video-decode", "speech-asr"),
    (Bottleneck.CPU, "throttled"): ("vision-jpeg", "speech-asr", "diffusion", "recsys-embeddings"),
    (Bottleneck.INTERCONNECT, "network"): ("llm-pretrain-fsdp", "recsys-embeddings", "llm-finetune-lora"),
    (Bottleneck.INTERCONNECT, "nvlink"): ("llm-pretrain-fsdp", "llm-finetune-lora"),
    (Bottleneck.INTERCONNECT, "pcie"): ("recsys-embeddings", "video-decode", "llm-finetune-lora"),
    (Bottleneck.GPU, "compute"): ("llm-pretrain-fsdp", "diffusion", "vision-jpeg", "llm-finetune-lora", "speech-asr"),
    (Bottleneck.MEMORY, "hbm-bandwidth"): ("recsys-embeddings", "llm-finetune-lora", "llm-pretrain-fsdp"),
    (Bottleneck.MEMORY, "host-memory-pressure"): (
        "recsys-embeddings",
        "vision-jpeg",
        "speech-asr",
        "llm-finetune-lora",
    ),
}

MECHANISMS: dict[Bottleneck, tuple[str, ...]] = {}
for _cls, _mech in MECHANISM_WORKLOADS:
    MECHANISMS[_cls] = (*MECHANISMS.get(_cls, ()), _mech)


# The stage one slow pod among fast peers has more of: a node with slower storage, fewer free cores,
# a degraded link or more memory pressure; every pod then waits for it at the all-reduce.
SLOW_POD_STAGES: dict[Bottleneck, tuple[str, ...]] = {
    Bottleneck.IO: ("storage", "read"),
    Bottleneck.CPU: ("decode",),
    Bottleneck.INTERCONNECT: ("comm",),
}


@dataclass(frozen=True)
class Plan:
    """Everything the exporters need to show one job: its hardware and its base stage times (seconds).

    Base stage times are per pod (length ``pods``); the window module adds variation over time.
    """

    target: Bottleneck
    mechanism: str
    workload: str
    strength: float
    board: Board
    gpus: int
    nodes: tuple[Node, ...]
    storage: Storage
    fabric: Fabric | None
    workers: int
    cpu_limit: float | None
    amp: bool
    net_share: float
    base: dict[str, np.ndarray]
    overlap: float
    tags: tuple[str, ...]


def draw_strength(rng: np.random.Generator) -> float:
    """How strongly the target stage binds: barely, moderately or overwhelmingly."""
    u = rng.random()
    if u < 0.35:
        return float(rng.uniform(1.05, 1.2))
    if u < 0.75:
        return float(rng.uniform(1.2, 2.0))
    return float(np.exp(rng.uniform(np.log(2.0), np.log(6.0))))


def _board(rng: np.random.Generator, mechanism: str) -> Board:
    if mechanism == "nvlink":
        return NVLINK_BOARDS[int(rng.integers(len(NVLINK_BOARDS)))]
    if mechanism == "pcie" and rng.random() < 0.8:
        pcie_only = tuple(b for b in BOARDS if b.nvlink_bps == 0)
        return pcie_only[int(rng.integers(len(pcie_only)))]
    return BOARDS[int(rng.integers(len(BOARDS)))]


def _shape(rng: np.random.Generator, cls: Bottleneck, mechanism: str) -> tuple[int, int]:
    """Pods and GPUs per pod: network-bound jobs span nodes; NVLink-bound ones fill a node."""
    if mechanism == "network":
        return int(rng.integers(2, 17)), int(rng.choice([4, 8]))
    if mechanism == "nvlink":
        return int(rng.choice([1, 1, 2, 4])), 8
    if mechanism == "saturated":  # decode fills every core of a smaller node
        return int(rng.choice([1, 1, 2, 4])), int(rng.choice([1, 2, 4]))
    pods = int(rng.choice([1, 1, 1, 2, 2, 4, 8, 16]))
    return pods, int(rng.choice([1, 2, 4, 8]))


def _storage_kind(rng: np.random.Generator, cls: Bottleneck, mechanism: str, workload: str) -> str:
    if mechanism == "local-disk":
        return str(rng.choice(["nvme", "sata", "block-volume"], p=[0.3, 0.3, 0.4]))
    if mechanism == "network-storage":
        return str(rng.choice(["nfs", "object-store"]))
    kinds = WORKLOADS[workload][3]
    return str(kinds[int(rng.integers(len(kinds)))])


def draw_plan(rng: np.random.Generator, cls: Bottleneck, mechanism: str) -> Plan:
    """One job's plan for a target class and mechanism (its label still to be checked by the model)."""
    options = MECHANISM_WORKLOADS[(cls, mechanism)]
    workload = options[int(rng.integers(len(options)))]
    board = _board(rng, mechanism)
    pods, gpus = _shape(rng, cls, mechanism)
    shared = gpus < 8 and rng.random() < 0.6
    nodes = tuple(draw_node(rng, f"gpu-{int(rng.integers(10, 999)):03d}-{i}", gpus, shared) for i in range(pods))
    storage = draw_storage(rng, _storage_kind(rng, cls, mechanism, workload))
    fabric = draw_fabric(rng) if pods > 1 else None
    if mechanism == "network" and fabric is not None and rng.random() < 0.5:
        fabric = Fabric("tcp", float(rng.choice([25.0, 50.0, 100.0])) / 8 * 1e9 * float(rng.uniform(0.7, 0.9)), False)
    workers = int(rng.integers(2, 7)) if mechanism == "too-few-workers" else int(rng.choice([4, 8, 12, 16, 32]))
    if mechanism == "saturated":
        workers = int(min(n.cpus - n.neighbour_cores for n in nodes)) + int(rng.integers(1, 9))
    free = min(n.cpus - n.neighbour_cores - 2.0 for n in nodes)
    # A throttled job's quota binds before the node runs out of cores.
    cpu_limit = max(1.5, min(float(rng.uniform(0.3, 0.8)) * workers, 0.8 * free)) if mechanism == "throttled" else None
    if cpu_limit is None and rng.random() < 0.35:
        cpu_limit = float(workers + rng.integers(4, 16))
    amp = bool(rng.random() < WORKLOADS[workload][4])
    strength = draw_strength(rng)
    base, overlap, net_share = base_stages(
        rng, cls, mechanism, workload, strength, pods, gpus, nodes, workers, cpu_limit
    )
    tags = _tags(workload, storage, fabric, shared)
    if pods > 1 and rng.random() < 0.25 and cls in SLOW_POD_STAGES:
        for key in SLOW_POD_STAGES[cls]:
            base[key][int(rng.integers(pods))] *= float(rng.uniform(1.2, 1.8))
        tags = (*tags, "slow-pod")
    return Plan(
        cls,
        mechanism,
        workload,
        strength,
        board,
        gpus,
        nodes,
        storage,
        fabric,
        workers,
        cpu_limit,
        amp,
        net_share,
        base,
        overlap,
        tags,
    )


def _tags(workload: str, storage: Storage, fabric: Fabric | None, shared: bool) -> tuple[str, ...]:
    tags = [workload, f"storage:{storage.kind}"]
    if fabric is not None:
        tags.append(f"fabric:{fabric.kind}")
    if shared:
        tags.append("shared-node")
    return tuple(tags)


def _cores(nodes: tuple[Node, ...], workers: int, cpu_limit: float | None) -> npt.NDArray[np.float64]:
    free = np.array([max(1.0, n.cpus - n.neighbour_cores - 2.0) for n in nodes])
    out: npt.NDArray[np.float64] = np.minimum(free, cpu_limit - 1.0 if cpu_limit is not None else free).clip(0.5, None)
    return out


def base_stages(
    rng: np.random.Generator,
    cls: Bottleneck,
    mechanism: str,
    workload: str,
    s: float,
    pods: int,
    gpus: int,
    nodes: tuple[Node, ...],
    workers: int,
    cpu_limit: float | None,
) -> tuple[dict[str, np.ndarray], float, float]:
    """Per-pod base stage times: every stage but the target's modest, the target's set by strength."""
    phi_r, dec_r, comm_r, _, _ = WORKLOADS[workload]
    k = float(np.exp(rng.uniform(np.log(0.15), np.log(2.5))))
    phi = float(rng.uniform(*phi_r))
    rho_a, rho_b = float(rng.uniform(0.15, 0.6)), float(rng.uniform(0.1, 0.45))
    if mechanism == "hbm-bandwidth":
        phi = float(np.clip((1 - 1 / s) / (1 - rho_b) + rng.uniform(0.0, 0.1), 0.55, 0.95))
    comp_a = k * (1 - phi)
    st = {
        "comp_a": comp_a,
        "mem_a": comp_a * rho_a,
        "mem_b": k * phi,
        "comp_b": k * phi * rho_b,
        "h2d": k * float(rng.uniform(0.0, 0.03)),
        "swap": 0.0,
    }
    multi = pods * gpus > 1
    overlap = float(rng.uniform(0.5, 0.95))
    st["comm"] = k * float(rng.uniform(*comm_r)) * overlap * float(rng.uniform(0.3, 0.9)) if multi else 0.0
    net_share = float(rng.uniform(0.5, 0.9)) if pods > 1 else 0.0
    if mechanism == "nvlink":
        net_share = float(rng.uniform(0.05, 0.25)) if pods > 1 else 0.0
    gpu_side = st["h2d"] + k + max(0.0, st["comm"] - overlap * k)
    cores = _cores(nodes, workers, cpu_limit)
    # A GPU-bound job's runner-up is usually its input pipeline, trailing by the drawn strength.
    loader_frac = float(rng.uniform(0.9, 1.0)) / s if cls is Bottleneck.GPU else float(rng.uniform(0.2, 0.85))
    dec = min(float(rng.uniform(*dec_r)) * k, loader_frac * gpu_side * float(min(workers, cores.min())))
    st["decode"] = dec
    st["read"] = dec * float(rng.uniform(0.05, 0.5))
    st["storage"] = loader_frac * gpu_side * float(rng.uniform(0.05, 0.6))
    _set_target(rng, st, cls, mechanism, s, gpu_side, workers, float(cores.min()), overlap, k)
    return {key: np.full(pods, v) * rng.uniform(0.96, 1.04, pods) for key, v in st.items()}, overlap, net_share


def _set_target(
    rng: np.random.Generator,
    st: dict[str, float],
    cls: Bottleneck,
    mechanism: str,
    s: float,
    gpu_side: float,
    workers: int,
    cores: float,
    overlap: float,
    k: float,
) -> None:
    """Make the target stage bind by ``s``, measured against the slower of the other pipeline."""
    if cls is Bottleneck.IO:
        want = s * max(gpu_side, st["decode"] / min(workers, cores))
        if mechanism == "network-storage" and rng.random() < 0.6:
            st["read"] = want * workers - st["decode"]  # latency-bound requests, each worker waits
        else:
            st["storage"] = want
            st["read"] = max(st["read"], want * workers * float(rng.uniform(0.3, 0.9)) - st["decode"])
    elif cls is Bottleneck.CPU:
        want = s * max(gpu_side, st["storage"])
        st["decode"] = want * min(workers, cores)
        st["read"] = min(st["read"], st["decode"] * 0.2)
    elif cls is Bottleneck.INTERCONNECT and mechanism == "pcie":
        st["h2d"] = (s - 1) * gpu_side + st["h2d"]
    elif cls is Bottleneck.INTERCONNECT:
        exposed = (s - 1) * gpu_side
        st["comm"] = exposed + overlap * float(rng.uniform(0.3, 1.0)) * k
    elif cls is Bottleneck.MEMORY and mechanism == "host-memory-pressure":
        st["swap"] = (s - 1) * gpu_side
