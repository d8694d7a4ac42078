"""One family F job's design: its platform, its step's stages, and the label they imply.

A design starts from a workload on a platform, gives every stage a background size that real
jobs of that kind show, then makes the target class's stages bind with a drawn severity:
moderate, strong, or borderline (a runner-up stage close behind). The label is then read back from
the step model (:func:`.stages.label_of`); a draw whose label is not the target is discarded and
drawn again, so labels always come from the model and classes stay balanced.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from bottleneck_operator.contract.verdict import Bottleneck, Mechanism
from bottleneck_operator_dev.familyf.boards import (
    BOARDS,
    FABRICS,
    LOCAL_STORAGES,
    NODE_SHAPES,
    STORAGES,
    Board,
    Fabric,
    NodeShape,
    Storage,
)
from bottleneck_operator_dev.familyf.stages import Stages, label_of

# Workloads that plausibly meet each bottleneck (a recsys job is rarely decode-bound, a vision job
# rarely HBM-bound); HOST_MEMORY draws its own list.
_WORKLOADS: dict[Bottleneck, tuple[str, ...]] = {
    Bottleneck.IO: ("vision-jpeg", "video-decode", "speech-asr", "diffusion", "recsys-embeddings", "llm-pretrain-fsdp"),
    Bottleneck.CPU: ("vision-jpeg", "video-decode", "speech-asr", "diffusion", "recsys-embeddings"),
    Bottleneck.INTERCONNECT: (
        "llm-pretrain-fsdp",
        "llm-pipeline-tp",
        "llm-finetune-zero",
        "recsys-embeddings",
        "vision-jpeg",
        "diffusion",
    ),
    Bottleneck.GPU: (
        "llm-pretrain-fsdp",
        "llm-pipeline-tp",
        "llm-finetune-zero",
        "vision-jpeg",
        "diffusion",
        "speech-asr",
        "video-decode",
    ),
    Bottleneck.MEMORY: ("recsys-embeddings", "llm-finetune-zero", "diffusion", "speech-asr", "llm-pretrain-fsdp"),
}
_HOST_MEMORY_WORKLOADS = ("recsys-embeddings", "vision-jpeg", "speech-asr", "llm-pretrain-fsdp", "diffusion")


@dataclass(frozen=True)
class Design:
    """Everything the exporters need to know about one job.

    Attributes:
        target: the class asked for (equal to the label once accepted).
        label, mechanism: the step model's class and how it binds.
        gain, runner_up: speed-up from removing the label's stages, and from the next class's.
        workload, board, fabric, storage, node: the platform.
        pods, gpus: pods of the job and GPUs per pod.
        stages: seconds per step by stage.
        loader_cores: cores the loader's workers can use; workers: the loader's process count.
        cpu_limit: the pod's CPU limit in cores, None without one.
        mem_limit: the pod's memory limit in bytes, None without one.
        swap: "none", "zram" or "disk": how the node swaps (Kubernetes nodes mostly run without).
        power_cap: enforced power limit as a share of the board's TDP.
        neighbours: other pods on each pod's node.
        comm_link: "nvlink", "pcie" or "network": the link the collectives wait on.
        hard: the runner-up was placed close on purpose.
        accumulation: micro-batches per gradient exchange (communication is per exchange).
    """

    target: Bottleneck
    label: Bottleneck
    mechanism: Mechanism
    gain: float
    runner_up: float
    workload: str
    board: Board
    fabric: Fabric
    storage: Storage
    node: NodeShape
    pods: int
    gpus: int
    stages: Stages
    loader_cores: float
    workers: int
    cpu_limit: float | None
    mem_limit: float | None
    swap: str
    power_cap: float
    neighbours: tuple[int, ...]
    comm_link: str
    hard: bool
    accumulation: int


class _Platform(NamedTuple):
    board: Board
    node: NodeShape
    gpus: int
    pods: int
    fabric: Fabric
    neighbours: tuple[int, ...]


class _Host(NamedTuple):
    loader_cores: float
    workers: int
    cpu_limit: float | None
    mem_limit: float | None
    swap: str


def _severity(rng: np.random.Generator) -> tuple[float, bool]:
    """The target's intended speed-up when removed, and whether a runner-up sits close."""
    u = rng.random()
    if u < 0.2:
        return float(rng.uniform(1.06, 1.25)), True
    if u < 0.65:
        return float(rng.uniform(1.2, 1.8)), False
    return float(rng.uniform(1.8, 4.5)), False


def _platform(rng: np.random.Generator, mech: str) -> _Platform:
    board = BOARDS[int(rng.integers(len(BOARDS)))]
    node = NODE_SHAPES[int(rng.integers(len(NODE_SHAPES)))]
    gpus = int(rng.choice([g for g in (1, 2, 4, 8) if g <= node.gpus]))
    pods = int(rng.choice([1, 1, 2, 2, 4, 8, 16])) if rng.random() < 0.7 else 1
    if mech in ("network",):
        pods = max(pods, int(rng.choice([2, 4, 8, 16])))
    if mech == "nvlink":
        board = BOARDS[int(rng.choice([0, 1, 2, 4]))]
        gpus, pods = 8 if node.gpus == 8 else node.gpus, 1 if rng.random() < 0.6 else 2
    if mech == "pcie-p2p":
        board = BOARDS[int(rng.choice([3, 5, 6]))]
        gpus = max(gpus, min(4, node.gpus))
        gpus = max(gpus, 2)
    pods = min(pods, 16)
    gpus = min(max(gpus, 1), 8)
    neighbours_possible = gpus < node.gpus
    neighbours = tuple(
        int(rng.integers(1, 7)) if neighbours_possible and rng.random() < 0.6 else 0 for _ in range(pods)
    )
    return _Platform(board, node, gpus, pods, FABRICS[int(rng.integers(len(FABRICS)))], neighbours)


def _background(rng: np.random.Generator, multi_gpu: bool) -> dict[str, float]:
    """Stage sizes of a job where nothing in particular binds, relative to its compute."""
    compute = float(np.exp(rng.uniform(np.log(0.12), np.log(1.5))))
    # gradient accumulation runs k micro-batches per exchange: the same gradients, k times the compute
    accumulation = int(rng.choice([1, 1, 2, 4, 8])) if multi_gpu else 1
    return {
        "accumulation": accumulation,
        "compute": compute,
        "hbm": compute * rng.uniform(0.03, 0.35),
        "h2d": compute * rng.uniform(0.004, 0.05),
        "comm": compute * rng.uniform(0.08, 1.2) / accumulation if multi_gpu else 0.0,
        "overlap": float(rng.uniform(0.35, 0.85)),
        "swap": 0.0,
        "fixed": compute * rng.uniform(0.01, 0.05),
    }


def _device(s: dict[str, float]) -> float:
    exposed = max(0.0, s["comm"] - s["overlap"] * s["compute"])
    return s["h2d"] + s["compute"] + s["hbm"] + exposed + s["swap"]


def _bind(rng: np.random.Generator, s: dict[str, float], target: Bottleneck, mech: str, g: float, hard: bool) -> None:
    """Make the target class's stages bind the step with speed-up about ``g``."""
    close = float(rng.uniform(0.85, 0.97)) if hard else float(rng.uniform(0.1, 0.8))
    if target is Bottleneck.MEMORY and mech == "hbm":
        s["hbm"] = s["compute"] * (rng.uniform(1.0, 1.25) if hard else rng.uniform(1.3, 3.5))
    elif target is Bottleneck.MEMORY:
        s["swap"] = _device(s) * (g - 1.0)
    elif target is Bottleneck.INTERCONNECT and mech == "h2d":
        s["h2d"] = (s["compute"] + s["hbm"]) * (g - 1.0)
    elif target is Bottleneck.INTERCONNECT:
        rest = s["compute"] + s["hbm"] + s["h2d"]
        s["comm"] = s["overlap"] * s["compute"] + rest * (g - 1.0)
    elif target is Bottleneck.GPU and hard:
        s["hbm"] = s["compute"] * rng.uniform(0.5, 0.85)
    device = _device(s)
    if target is Bottleneck.IO:
        s["read"] = device * g
        s["decode"] = s["read"] * close if hard or rng.random() < 0.5 else device * rng.uniform(0.3, 0.9)
    elif target is Bottleneck.CPU:
        s["decode"] = device * g
        s["read"] = s["decode"] * close
    else:
        top = rng.uniform(0.88, 0.98) if hard and target is Bottleneck.GPU else rng.uniform(0.15, 0.85)
        # a dataset that fits in the page cache is read from memory after its first epoch
        cached = rng.random() < 0.3
        s["read"] = device * (rng.uniform(0.005, 0.05) if cached else top * rng.uniform(0.2, 1.0))
        s["decode"] = device * top * rng.uniform(0.2, 1.0)
        if hard and target is not Bottleneck.GPU and mech != "hbm" and rng.random() < 0.5:
            s[str(rng.choice(["read", "decode"]))] = device * float(rng.uniform(0.9, 0.99))


def _mechanism(target: Bottleneck, mech: str, storage: Storage, comm_link: str) -> Mechanism:
    if target is Bottleneck.IO:
        return Mechanism.LOCAL_DISK if storage.name in LOCAL_STORAGES else Mechanism.NETWORK_STORAGE
    if target is Bottleneck.CPU:
        return {"throttled": Mechanism.THROTTLED, "few-workers": Mechanism.TOO_FEW_WORKERS}.get(
            mech, Mechanism.SATURATED
        )
    if target is Bottleneck.INTERCONNECT:
        return {"nvlink": Mechanism.NVLINK, "network": Mechanism.NETWORK}.get(comm_link, Mechanism.PCIE)
    if target is Bottleneck.MEMORY:
        return Mechanism.HBM_BANDWIDTH if mech == "hbm" else Mechanism.HOST_MEMORY_PRESSURE
    return Mechanism.COMPUTE


def _sub_mechanism(rng: np.random.Generator, target: Bottleneck) -> str:
    options = {
        Bottleneck.IO: ("io",),
        Bottleneck.CPU: ("throttled", "few-workers", "saturated"),
        Bottleneck.INTERCONNECT: ("network", "network", "nvlink", "h2d", "pcie-p2p"),
        Bottleneck.GPU: ("compute",),
        Bottleneck.MEMORY: ("hbm", "host"),
    }[target]
    return str(options[int(rng.integers(len(options)))])


def _comm_link(sub: str, board: Board, pods: int, gpus: int) -> str:
    if sub == "nvlink":
        return "nvlink"
    if sub == "pcie-p2p":
        return "pcie"
    if pods > 1:
        return "network"
    if gpus > 1:
        return "nvlink" if board.nvlink_bps > 0 else "pcie"
    return "none"


def _host(rng: np.random.Generator, target: Bottleneck, sub: str, node: NodeShape, gpus: int) -> _Host:
    """The pod's CPU and memory set-up: loader cores, workers, limits, swap."""
    main = gpus * float(rng.uniform(1.0, 1.5))
    share = node.cpus * gpus / node.gpus  # the pod's fair share of a node it shares
    workers = int(rng.integers(4, 13)) * gpus
    cpu_limit: float | None = float(np.ceil(main + rng.uniform(0.6, 1.0) * share)) if rng.random() < 0.4 else None
    if sub == "throttled":
        workers = int(rng.integers(6, 17)) * gpus
        cpu_limit = float(np.ceil(main + rng.uniform(0.15, 0.5) * share))
    elif sub == "few-workers":
        workers, cpu_limit = int(rng.integers(1, 4)) * gpus, None
    elif sub == "saturated":
        cpu_limit, workers = None, int(share * rng.uniform(1.0, 1.6))
    free = max(1.0, (cpu_limit if cpu_limit is not None else share) - main)
    loader_cores = float(min(workers, free))
    mem_limit = float(node.mem_bytes * gpus / node.gpus * rng.uniform(0.3, 0.9)) if rng.random() < 0.55 else None
    swap = "none"
    if target is Bottleneck.MEMORY and sub == "host":
        swap = str(rng.choice(["none", "zram", "disk"], p=[0.4, 0.3, 0.3]))
        mem_limit = mem_limit or float(node.mem_bytes * gpus / node.gpus * rng.uniform(0.2, 0.6))
    elif rng.random() < 0.1:
        swap = str(rng.choice(["zram", "disk"]))
    return _Host(loader_cores, workers, cpu_limit, mem_limit, swap)


def _stages(rng: np.random.Generator, target: Bottleneck, sub: str, multi_gpu: bool) -> tuple[Stages, bool, int]:
    g, hard = _severity(rng)
    s = _background(rng, multi_gpu or sub in ("network", "nvlink", "pcie-p2p"))
    accumulation = int(s.pop("accumulation"))
    if target is Bottleneck.GPU:
        s["comm"] = min(s["comm"], s["overlap"] * s["compute"] * rng.uniform(0.6, 1.1))
    _bind(rng, s, target, sub, g, hard)
    return Stages(**{k: float(v) for k, v in s.items()}), hard, accumulation


def _link_mechanism(stages: Stages, comm_link: str) -> Mechanism:
    if stages.h2d >= stages.comm_exposed or comm_link == "pcie":
        return Mechanism.PCIE
    return Mechanism.NVLINK if comm_link == "nvlink" else Mechanism.NETWORK


def draw_design(rng: np.random.Generator, target: Bottleneck, tries: int = 40) -> Design:
    """A job whose step model makes ``target`` the label (drawn again until it does).

    Raises:
        RuntimeError: no draw in ``tries`` gave the target (a bug in the ranges, never expected).
    """
    for _ in range(tries):
        sub = _sub_mechanism(rng, target)
        plat = _platform(rng, sub)
        board, node, pods, gpus = plat.board, plat.node, plat.pods, plat.gpus
        stages, hard, accumulation = _stages(rng, target, sub, pods * gpus > 1)
        label, gain, runner = label_of(stages)
        if label is not target or gain < 1.03:
            continue
        workloads = _HOST_MEMORY_WORKLOADS if sub == "host" else _WORKLOADS[target]
        storage = STORAGES[int(rng.integers(len(STORAGES)))]
        link = _comm_link(sub, board, pods, gpus)
        host = _host(rng, target, sub, node, gpus)
        mech = (
            _link_mechanism(stages, link)
            if target is Bottleneck.INTERCONNECT
            else _mechanism(target, sub, storage, link)
        )
        return Design(
            target=target,
            label=label,
            mechanism=mech,
            gain=gain,
            runner_up=runner,
            workload=str(workloads[int(rng.integers(len(workloads)))]),
            board=board,
            fabric=plat.fabric,
            storage=storage,
            node=node,
            pods=pods,
            gpus=gpus,
            stages=stages,
            loader_cores=host.loader_cores,
            workers=host.workers,
            cpu_limit=host.cpu_limit,
            mem_limit=host.mem_limit,
            swap=host.swap,
            power_cap=1.0 if rng.random() < 0.65 else float(rng.uniform(0.6, 0.9)),
            neighbours=plat.neighbours,
            comm_link=link,
            hard=hard,
            accumulation=accumulation,
        )
    raise RuntimeError(f"no design for {target} in {tries} draws")
