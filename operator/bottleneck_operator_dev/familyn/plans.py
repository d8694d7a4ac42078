"""A job's plan: the workload, the machines, and its steady stage times before the timeline is laid on.

The class is chosen first (the family keeps the classes balanced); the plan then draws a workload
that can plausibly be bound that way, the cluster it runs on, and every stage of its step at levels
of its own. One stage group (the class's) is scaled afterwards, over the whole window, so that the
class's removal gains most by a drawn margin (see :mod:`.steps`); the label is then read back from
the model, never assumed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator_dev.familyn.hardware import (
    BOARD_WEIGHTS,
    BOARDS,
    OLDER,
    Board,
    Fabric,
    Node,
    Storage,
    draw_fabric,
    draw_node,
    draw_storage,
)

# (mechanism, the stages it grows, the workloads that meet it in practice)
MECHANISMS: dict[Bottleneck, tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...]] = {
    Bottleneck.IO: (
        ("local-disk", ("io",), ("vision-jpeg", "speech", "recsys", "llm-mmap")),
        ("network-storage", ("io",), ("vision-jpeg", "video", "speech", "llm-stream", "diffusion")),
    ),
    Bottleneck.CPU: (
        ("saturated", ("cpu",), ("vision-jpeg", "video", "speech", "diffusion")),
        ("throttled", ("cpu",), ("vision-jpeg", "speech", "recsys")),
        ("too-few-workers", ("cpu",), ("vision-jpeg", "video", "speech")),
        ("saturated", ("cpu_serial",), ("llm-offload",)),
    ),
    Bottleneck.INTERCONNECT: (
        ("network", ("comm",), ("llm-fsdp", "vision-ddp", "recsys", "diffusion")),
        ("network", ("comm",), ("llm-fsdp", "llm-pp", "speech")),
        ("nvlink", ("comm",), ("llm-tp",)),
        ("pcie", ("comm",), ("llm-fsdp", "vision-ddp")),
        ("pcie", ("h2d",), ("recsys", "llm-offload")),
    ),
    Bottleneck.GPU: (
        ("compute", ("tc",), ("llm-fsdp", "llm-tp", "vision-ddp", "vision-dali", "diffusion", "llm-pp")),
        ("launch-bound", ("launch",), ("speech", "llm-lora", "recsys")),
    ),
    Bottleneck.MEMORY: (
        ("host-memory-pressure", ("hostmem",), ("recsys", "llm-offload", "vision-jpeg", "llm-mmap")),
        ("hbm-bandwidth", ("hbm",), ("llm-lora", "recsys", "diffusion", "llm-fsdp")),
    ),
}


@dataclass
class Plan:
    """Everything about one job that does not change along its window.

    Per-pod arrays have one entry per pod; ``stages`` are steady seconds per step (see :mod:`.steps`).
    """

    label: Bottleneck
    mechanism: str
    grow: tuple[str, ...]
    workload: str
    pods: int
    gpus: int
    boards: tuple[Board, ...]
    nodes: tuple[Node, ...]
    storage: Storage
    fabric: Fabric
    stages: dict[str, np.ndarray]
    comm: float
    comm_link: str
    bubble: float
    overlap: float
    strength: float
    workers: int
    cpu_limit: float | None
    mem_limit: float | None
    cacheable: bool
    mig_slice: float = 1.0
    time_shared: float = 0.0
    power_cap: tuple[float, ...] = ()
    net_bps: float = 0.0
    neighbour_cores: np.ndarray = field(default_factory=lambda: np.zeros(1))
    tensor_eff: float = 0.5
    fp32_share: float = 0.05
    fb_frac: float = 0.9
    tags: list[str] = field(default_factory=list)


def _board(rng: np.random.Generator, mechanism: str, workload: str) -> str:
    names = list(BOARD_WEIGHTS)
    weights = np.array([BOARD_WEIGHTS[n] for n in names])
    if mechanism == "nvlink" or workload in ("llm-tp", "llm-pp"):
        weights *= np.array([BOARDS[n].nvlink_bps > 0 for n in names], dtype=float)
    elif mechanism == "pcie" and workload != "recsys" and workload != "llm-offload":
        weights *= np.array([BOARDS[n].nvlink_bps == 0 for n in names], dtype=float)
    return str(rng.choice(names, p=weights / weights.sum()))


def _shape(rng: np.random.Generator, mechanism: str, workload: str, board: Board) -> tuple[int, int]:
    """Pods and GPUs per pod: most jobs small, a long tail of multi-node ones."""
    if mechanism == "network":
        pods = int(rng.choice((2, 3, 4, 6, 8, 12, 16)))
    elif mechanism == "nvlink":
        pods = int(rng.choice((1, 1, 1, 2)))
    elif mechanism == "pcie" and workload not in ("recsys", "llm-offload"):
        pods = 1
    else:
        pods = int(rng.choice((1, 1, 1, 2, 2, 4, 4, 8, 16), p=(0.2, 0.1, 0.1, 0.14, 0.1, 0.12, 0.08, 0.1, 0.06)))
    gpus = int(rng.choice((1, 2, 4, 8), p=(0.2, 0.15, 0.25, 0.4)))
    if mechanism in ("nvlink", "pcie") or workload in ("llm-tp", "llm-pp"):
        gpus = max(gpus, 2)
    if board.tdp_w < 100 and gpus > 4:
        gpus = 4
    return pods, gpus


def _base_stages(rng: np.random.Generator, workload: str, pods: int, gpus: int) -> tuple[dict[str, float], float]:
    """Steady stage seconds per step for one pod, before heterogeneity and scaling; and the collective's."""
    u = float(rng.uniform(0.15, 1.8))
    heavy_input = workload in ("vision-jpeg", "video", "speech", "diffusion")
    st = {
        "tc": u,
        "hbm": u * float(rng.uniform(0.05, 0.45 if workload in ("llm-lora", "recsys") else 0.3)),
        "io": u * float(rng.uniform(0.02, 0.7)),
        "cpu": u * float(rng.uniform(0.1, 0.85) if heavy_input else rng.uniform(0.02, 0.3)),
        "cpu_serial": u * float(rng.uniform(0.1, 0.5)) if workload == "llm-offload" else 0.0,
        "h2d": u * float(rng.uniform(0.08, 0.5) if workload in ("recsys", "llm-offload") else rng.uniform(0.005, 0.06)),
        "launch": u * float(rng.uniform(0.05, 0.35) if workload in ("speech", "llm-lora") else rng.uniform(0.0, 0.05)),
        "hostmem": u * float(rng.uniform(0.0, 0.08)) if rng.random() < 0.25 else 0.0,
    }
    comm = 0.0
    if pods * gpus > 1:
        comm = u * float(rng.uniform(0.05, 1.1 if pods > 1 else 0.5))
    return st, comm


def _pod_stages(
    rng: np.random.Generator, workload: str, gpus: int, boards: list[Board], grow: tuple[str, ...]
) -> tuple[dict[str, np.ndarray], float]:
    """Each pod's steady stages: a pod on an older board computes slower; the class's stages never start at zero."""
    base, comm = _base_stages(rng, workload, len(boards), gpus)
    stages = {k: np.full(len(boards), v) for k, v in base.items()}
    for p, b in enumerate(boards):
        stages["tc"][p] *= boards[0].relative_speed / b.relative_speed
        stages["hbm"][p] *= boards[0].hbm_bps / b.hbm_bps
    unit = float(stages["tc"].mean())
    for name in grow:
        if name == "comm":
            comm = max(comm, unit * 0.3)
        elif float(stages[name].max()) < 0.05 * unit:
            stages[name] = stages[name] + unit * 0.3
    return stages, comm


def _limits(rng: np.random.Generator, mechanism: str, node: Node, gpus: int) -> tuple[float | None, float | None, int]:
    """CPU limit, memory limit and loader workers, as teams write them in their pod specs."""
    workers = int(rng.choice((4, 6, 8, 12, 16))) * max(1, gpus // 2)
    cpu_limit: float | None = None
    if mechanism == "throttled" or rng.random() < 0.45:
        cpu_limit = float(rng.choice((4, 8, 16, 32, 48, 64)))
        cpu_limit = min(cpu_limit, node.cpus * 0.9)
        if mechanism == "throttled":
            cpu_limit = float(max(2, round(workers * rng.uniform(0.3, 0.7))))
    if mechanism == "too-few-workers":
        workers = int(rng.choice((1, 2, 3, 4)))
    mem_limit = float(node.mem_bytes * rng.uniform(0.3, 0.9)) if rng.random() < 0.7 else None
    if mechanism == "host-memory-pressure" and mem_limit is None and node.swap_bytes == 0:
        mem_limit = float(node.mem_bytes * rng.uniform(0.2, 0.6))
    return cpu_limit, mem_limit, workers


def _boards(rng: np.random.Generator, key: str, pods: int, tags: list[str]) -> list[Board]:
    """Each pod's board: now and then one pod of a multi-node job lands on an older generation."""
    boards = [BOARDS[key]] * pods
    if pods > 1 and rng.random() < 0.25:
        boards[int(rng.integers(1, pods))] = BOARDS[OLDER[key]]  # pod 0 stays on the job's own board
        tags.append("mixed-boards")
    return boards


def _storage(rng: np.random.Generator, mechanism: str) -> Storage:
    """The dataset's home: a local or block device for local-disk jobs, a shared service for network-storage ones."""
    if mechanism == "local-disk":
        kinds = ("nvme", "nvme-limited", "sata", "block-net")
        return draw_storage(rng, str(rng.choice(kinds, p=(0.25, 0.2, 0.2, 0.35))))
    if mechanism == "network-storage":
        return draw_storage(rng, str(rng.choice(("nfs", "lustre", "object"))))
    return draw_storage(rng)


def draw_plan(rng: np.random.Generator, label: Bottleneck, variant: int) -> Plan:
    """A plan for a job of class ``label``; ``variant`` picks the mechanism where the family needs both.

    Args:
        rng: the job's own generator.
        label: the class the job is built to have (checked against the model afterwards).
        variant: for Memory, 0 is host memory pressure and 1 HBM bandwidth; elsewhere ignored.
    """
    options = MECHANISMS[label]
    pick = variant % 2 if label is Bottleneck.MEMORY else int(rng.integers(len(options)))
    mechanism, grow, workloads = options[pick]
    workload = str(rng.choice(workloads))
    key = _board(rng, mechanism, workload)
    board = BOARDS[key]
    pods, gpus = _shape(rng, mechanism, workload, board)
    if mechanism == "network" and pods < 2:
        pods = 2
    # a MIG instance: one slice of a board per pod, its neighbours on the other slices
    mig = board.mig and mechanism not in ("network", "nvlink", "pcie") and rng.random() < 0.12
    if mig:
        pods, gpus = min(pods, 2), 1
    tags: list[str] = [workload]
    boards = _boards(rng, key, pods, tags)
    swap = (mechanism == "host-memory-pressure" and rng.random() < 0.7) or rng.random() < 0.1
    nodes = tuple(draw_node(rng, gpus, swap) for _ in range(pods))
    storage = _storage(rng, mechanism)
    fabric = draw_fabric(rng)
    stages, comm = _pod_stages(rng, workload, gpus, boards, grow)
    cpu_limit, mem_limit, workers = _limits(rng, mechanism, nodes[0], gpus)
    comm_link = _comm_link(mechanism, pods, board)
    plan = Plan(
        label=label,
        mechanism=mechanism,
        grow=grow,
        workload=workload,
        pods=pods,
        gpus=gpus,
        boards=tuple(boards),
        nodes=nodes,
        storage=storage,
        fabric=fabric,
        stages=stages,
        comm=comm,
        comm_link=comm_link,
        bubble=0.0,
        overlap=float(rng.uniform(0.2, 0.95)),
        strength=_strength(rng),
        workers=workers,
        cpu_limit=cpu_limit,
        mem_limit=mem_limit,
        cacheable=storage.kind != "object" and rng.random() < 0.5,
        tags=tags,
    )
    _reach(rng, plan)
    plan.mig_slice = 0.5 if mig else 1.0
    _workload_traits(rng, plan)
    return plan


def _reach(rng: np.random.Generator, plan: Plan) -> None:
    """What the job's collective moves over the fabric per second at most."""
    # a job reaches the fabric through its GPUs' own PCIe links (one NIC per GPU at best)
    plan.net_bps = min(plan.fabric.node_bps, plan.gpus * plan.boards[0].pcie_bps * 0.9)
    if plan.pods > 1 and rng.random() < 0.15:
        # one node on a slower NIC: a ring moves every node's bytes at the slowest link's pace
        slower = float(rng.uniform(0.25, 0.7))
        plan.net_bps, plan.comm = plan.net_bps * slower, plan.comm / slower
        plan.tags.append("slow-nic")


def _comm_link(mechanism: str, pods: int, board: Board) -> str:
    if pods > 1 and mechanism != "nvlink":
        return "network"
    return "nvlink" if board.nvlink_bps > 0 else "pcie"


def _strength(rng: np.random.Generator) -> float:
    """How far the bottleneck leads: a third barely (1.05-1.2x), a third moderate, a third overwhelming."""
    band = int(rng.integers(3))
    lows, highs = (1.05, 1.2, 2.0), (1.2, 2.0, 5.0)
    return float(np.exp(rng.uniform(np.log(lows[band]), np.log(highs[band]))))


def _workload_traits(rng: np.random.Generator, plan: Plan) -> None:
    """What the workload does to the stages and to the kernels' mix (tensor use, FP32 share, memory)."""
    w, st = plan.workload, plan.stages
    plan.tensor_eff = float(rng.uniform(0.45, 0.8) if w.startswith("llm") else rng.uniform(0.2, 0.55))
    if rng.random() < 0.12 and not w.startswith("llm"):
        plan.tensor_eff, plan.fp32_share = float(rng.uniform(0.0, 0.06)), float(rng.uniform(0.25, 0.6))
        plan.tags.append("fp32")
    else:
        plan.fp32_share = float(rng.uniform(0.02, 0.12))
    plan.fb_frac = float(rng.uniform(0.55, 0.98))
    if w == "llm-pp" or (w.startswith("llm") and rng.random() < 0.2):
        pp, micro = int(rng.choice((2, 4, 8))), int(rng.choice((4, 8, 16, 32)))
        plan.bubble = (pp - 1) / micro
        plan.tags.append(f"pipeline-pp{pp}")
    if w.startswith("llm") and rng.random() < 0.35:
        st["tc"] = st["tc"] * (4.0 / 3.0)  # activation checkpointing recomputes the forward pass
        plan.fb_frac = float(rng.uniform(0.45, 0.75))
        plan.tags.append("activation-checkpointing")
    if w == "vision-dali":
        st["cpu"] = st["cpu"] * 0.15  # decode moved to nvJPEG: the input stage is GPU work now
        st["tc"] = st["tc"] * float(rng.uniform(1.05, 1.3))
        plan.tensor_eff *= 0.8
        plan.tags.append("gpu-decode")
    accumulate = int(rng.choice((1, 1, 2, 4, 8)))
    if accumulate > 1:
        plan.comm /= accumulate  # one collective per optimizer step of several micro-batches
        plan.tags.append(f"grad-accum-{accumulate}")
    if plan.mig_slice < 1.0:
        plan.mig_slice = float(rng.choice((1 / 7, 2 / 7, 3 / 7)))
        plan.tags.append("mig")
    elif plan.gpus <= 2 and rng.random() < 0.12:
        plan.time_shared = float(rng.uniform(0.2, 0.8))
        st["tc"] = st["tc"] * (1.0 + plan.time_shared)
        plan.tags.append("time-sliced")
    capped = rng.random() < 0.4
    plan.power_cap = tuple(b.tdp_w * (float(rng.uniform(0.6, 0.95)) if capped else 1.0) for b in plan.boards)
    if capped:
        plan.tags.append("power-capped")
    plan.neighbour_cores = rng.uniform(0.0, 0.5, plan.pods) * np.array([n.cpus for n in plan.nodes])
    plan.neighbour_cores *= rng.random(plan.pods) < 0.5
    if plan.neighbour_cores.any():
        plan.tags.append("shared-nodes")
