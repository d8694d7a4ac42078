"""How each class's jobs come about: the mechanisms, drawn as stage times, then made physical.

A draw picks the target stage's time T per step and every other stage's time as a share of it;
about a quarter of the jobs are hard, with one other class's stage close behind (0.85-0.99 of T).
The times are turned into bytes, cores and kernel seconds against the setup's capacities
(:mod:`.hardware`), and the label is then read back from the step model by removal
(:func:`.stages.bounding_stage`): a draw whose bounding stage is not the target is drawn again.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator_dev.familyd.hardware import BOARD_WEIGHTS, BOARDS, GB, STORAGE
from bottleneck_operator_dev.familyd.power import activity, clock_ratio, dynamic_demand
from bottleneck_operator_dev.familyd.stages import BACKWARD_SHARE, Plan, account
from bottleneck_operator_dev.familyd.workload import (
    Workload,
    fabric_bps,
    host_copy_bps,
    inter_node_bytes,
    intra_node_bytes,
    p2p_bps,
    plan_of,
)
from bottleneck_operator_dev.familyd.world import Rng, Setup, draw_fabric

# The mechanisms of each class and how often each is drawn.
MECHANISMS: dict[Bottleneck, dict[str, float]] = {
    Bottleneck.IO: {
        "nvme": 0.15,
        "sata": 0.05,
        "cloud-volume": 0.15,
        "iomax": 0.15,
        "mmap": 0.1,
        "nfs": 0.2,
        "object-store": 0.2,
    },
    Bottleneck.CPU: {"throttled": 0.4, "saturated": 0.3, "few-workers": 0.3},
    Bottleneck.INTERCONNECT: {"network": 0.5, "h2d": 0.2, "p2p": 0.15, "nvlink": 0.15},
    Bottleneck.GPU: {"bf16": 0.6, "tf32": 0.2, "fp32": 0.2},
    Bottleneck.MEMORY: {"hbm": 0.5, "swap": 0.25, "thrash": 0.25},
}
# Which stage each mechanism makes the longest.
TARGET_STAGE = {
    **dict.fromkeys(MECHANISMS[Bottleneck.IO], "read"),
    **dict.fromkeys(MECHANISMS[Bottleneck.CPU], "decode"),
    **dict.fromkeys(MECHANISMS[Bottleneck.GPU], "math"),
    "network": "network",
    "h2d": "h2d",
    "p2p": "p2p",
    "nvlink": "nvlink",
    "hbm": "hbm",
    "swap": "swap",
    "thrash": "swap",
}
# What a hard case's runner-up may be, by target stage.
RUNNERS = {
    "read": ("decode", "math", "hbm"),
    "decode": ("read", "math", "swap"),
    "math": ("read", "decode", "hbm", "network"),
    "hbm": ("math", "read", "decode"),
    "network": ("math", "read", "decode"),
    "h2d": ("math", "decode"),
    "p2p": ("math", "decode"),
    "nvlink": ("math", "hbm"),
    "swap": ("decode", "math", "read"),
}
STORAGE_OF = {"iomax": "nvme", "mmap": "nvme"}
STRAGGLER_SHARE = 0.12


@dataclass(frozen=True)
class Times:
    """Drawn stage times, seconds per step (the target's is the largest, or nearly)."""

    read: float
    decode: float
    math: float
    hbm: float
    h2d: float
    link: float  # exposed all-reduce/tensor-parallel time for an Interconnect target, else 0
    swap: float


def draw_times(rng: Rng, stage: str, hard: str | None) -> Times:
    """The target stage at T, the others at shares of it (one close behind when ``hard``)."""
    t = float(np.exp(rng.uniform(np.log(0.2), np.log(2.5))))
    # log-uniform: most jobs barely touch the stages that do not bound them (a cached dataset,
    # light decoding), some come close
    share = {
        s: float(np.exp(rng.uniform(np.log(0.02), np.log(0.65))))
        for s in ("read", "decode", "math", "hbm", "h2d", "swap")
    }
    share["h2d"] *= 0.15
    share["swap"] = 0.0
    if stage in ("read", "decode"):
        # an input-bound job's GPUs still work a fair share of each step
        compute = float(rng.uniform(0.1, 0.85))
        split = float(rng.uniform(0.55, 0.95))
        share["math"], share["hbm"] = compute * split, compute * (1 - split)
    if stage in ("math", "hbm"):
        share["hbm" if stage == "math" else "math"] = float(rng.uniform(0.1, 0.6))
    if stage in ("network", "p2p", "nvlink", "h2d", "swap"):
        compute = float(rng.uniform(0.3, 0.95))
        split = float(rng.uniform(0.55, 0.9))
        share["math"], share["hbm"] = compute * split, compute * (1 - split)
    if stage == "swap":
        t = t * float(rng.uniform(0.5, 0.9))
        share["math"] /= 1.6
        share["hbm"] /= 1.6
    if hard is not None:
        share[hard] = float(rng.uniform(0.85, 0.99))
    values = {s: t * share[s] for s in share}
    if stage in ("read", "decode", "math", "hbm", "swap", "h2d"):
        values[stage] = t
    link = t if stage in ("network", "p2p", "nvlink") else 0.0
    return Times(values["read"], values["decode"], values["math"], values["hbm"], values["h2d"], link, values["swap"])


def _reshape(rng: Rng, setup: Setup, pods: int, gpus: int, per_node: int = 1) -> Setup:
    shaped = replace(setup, pods=pods, gpus=gpus, pods_per_node=per_node)
    nodes = shaped.nodes
    neigh = tuple(setup.neighbours[i] if i < len(setup.neighbours) else int(rng.random() < 0.3) for i in range(nodes))
    return replace(shaped, neighbours=neigh)


def shape_for(rng: Rng, setup: Setup, mech: str) -> Setup:
    """Make the setup able to have the mechanism (two nodes for the fabric, NVLink for nvlink, ...)."""
    if mech == "network" and setup.nodes < 2:
        setup = _reshape(
            rng, setup, int(rng.choice([2, 4, 8, 16])), min(setup.board.gpus_per_node, int(rng.choice([4, 8])))
        )
        setup = replace(setup, fabric=draw_fabric(rng))
    if mech in ("nvlink", "p2p"):
        want_nvlink = mech == "nvlink"
        boards = [(b, w) for b, w in zip(BOARDS, BOARD_WEIGHTS, strict=True) if (b.nvlink_bps > 0) == want_nvlink]
        weights = np.asarray([w for _, w in boards])
        board = boards[int(rng.choice(len(boards), p=weights / weights.sum()))][0]
        gpus = int(rng.choice([4, 8])) if want_nvlink else int(rng.choice([2, 4]))
        setup = _reshape(
            rng, replace(setup, board=board), setup.pods if setup.pods <= 2 else 1, min(gpus, board.gpus_per_node)
        )
        setup = replace(
            setup, power_cap_w=min(setup.power_cap_w, board.tdp_w) if setup.power_cap_w < board.tdp_w else board.tdp_w
        )
        setup = replace(setup, fabric=draw_fabric(rng) if setup.nodes > 1 else None)
    if mech in ("nvme", "sata", "cloud-volume", "nfs", "object-store", "iomax", "mmap"):
        setup = replace(setup, storage=STORAGE[STORAGE_OF.get(mech, mech)])
    if mech == "throttled":
        setup = replace(setup, cpu_limit=float(max(2, round(setup.gpus * float(rng.uniform(1.6, 6.0))))))
    if mech == "saturated":
        setup = replace(setup, cpu_limit=None, node_cpus=int(rng.choice([16, 24, 32, 48])))
    if mech in ("swap", "thrash"):
        setup = replace(setup, swap=mech == "swap")
    return setup


def _io_capacity(rng: Rng, setup: Setup, kind: str) -> float:
    """What storage delivers to one pod, bytes/s."""
    share = 1.0 / setup.pods_per_node
    if kind == "nvme":
        return float(rng.uniform(2.5, 7.0)) * GB * share
    if kind == "sata":
        return float(rng.uniform(0.4, 0.55)) * GB * share
    if kind == "cloud-volume":
        return float(rng.choice([0.125, 0.25, 0.5, 1.0])) * GB
    if kind == "iomax":
        return float(rng.uniform(0.1, 0.6)) * GB  # the pod's io.max rbps, far below the device
    if kind == "mmap":
        return float(rng.uniform(0.3, 1.5)) * GB * share  # page-fault-sized reads reach a fraction of the device
    if kind == "nfs":
        return float(rng.uniform(0.15, 1.5)) * GB
    # an object store: connections times what one connection gets
    return float(rng.integers(8, 64)) * float(rng.uniform(30e6, 90e6))


def _cpu(rng: Rng, setup: Setup, kind: str, neighbour: float) -> tuple[float, int, float]:
    """(loader cores, workers per pod, cores per training process)."""
    main = float(rng.uniform(0.6, 1.1))
    mains = setup.gpus * main
    per_gpu = int(rng.choice([1, 2])) if kind == "few-workers" else int(rng.choice([2, 4, 6, 8, 10, 12, 16]))
    workers = max(1, setup.gpus * per_gpu)
    node_free = (setup.node_cpus - neighbour - 0.8) / setup.pods_per_node - mains
    free = node_free if setup.cpu_limit is None else min(node_free, setup.cpu_limit - mains)
    if kind == "few-workers":
        return float(workers) * 0.97, workers, main
    if kind in ("throttled", "saturated"):
        # more workers than the cores they may use (num_workers sized by the node, not the share)
        return max(free, 1.0), max(workers, int(free * float(rng.uniform(1.3, 2.0))) + 2), main
    return max(min(float(workers) * 0.95, free), 1.0), workers, main


def _comm(setup: Setup, hidden: float, exposed: float, link: str) -> float:
    """The all-reduce payload whose time over the job's links is ``hidden + exposed`` seconds."""
    per_byte = 0.0
    intra = intra_node_bytes(setup, 1.0)
    if intra > 0:
        per_byte += intra / (setup.board.nvlink_bps * 0.8) if setup.board.nvlink_bps > 0 else intra / p2p_bps(setup)
    net = fabric_bps(setup)
    if setup.nodes > 1 and net > 0:
        per_byte += inter_node_bytes(setup, 1.0) / net
    if per_byte <= 0 or link == "nvlink":
        return 0.0 if per_byte <= 0 else hidden / per_byte
    return (hidden + exposed) / per_byte


def make_workload(rng: Rng, setup: Setup, mech: str, times: Times) -> Workload:
    """The physical workload that takes ``times`` on ``setup``."""
    pods = setup.pods
    spread = rng.uniform(0.92, 1.08, size=pods)  # pods of one job differ a little (shards, neighbours)
    io_kind = mech if mech in STORAGE_OF or mech in STORAGE else setup.storage.kind
    read_bps = np.asarray([_io_capacity(rng, setup, io_kind) for _ in range(pods)])
    neighbours = np.asarray([n * float(rng.uniform(0.5, setup.node_cpus * 0.06)) for n in setup.neighbours])
    cores, workers, main = _cpu(rng, setup, mech, float(neighbours.max(initial=0.0)))
    pinned = mech != "h2d" and bool(rng.random() < 0.7)
    h2d_bps = host_copy_bps(setup, pinned)
    exposure = float(rng.uniform(0.6, 1.0)) if mech == "h2d" else float(rng.uniform(0.2, 1.0))
    compute = times.math + times.hbm
    overlap = float(rng.uniform(0.3, 0.95))
    hidden = overlap * BACKWARD_SHARE * compute * float(rng.uniform(0.1, 0.9))
    grad = _comm(setup, hidden, times.link, mech) if setup.total_gpus > 1 else 0.0
    return Workload(
        read_bytes=times.read * read_bps * spread,
        read_bps=read_bps,
        io_kind=io_kind if mech not in ("iomax", "mmap") else mech,
        cpu_work=np.full(pods, times.decode * cores) * rng.uniform(0.95, 1.05, size=pods),
        loader_cores=np.full(pods, cores),
        workers=workers,
        main_cores=main,
        math_s=np.full(pods, times.math) * rng.uniform(0.98, 1.02, size=pods),
        hbm_s=np.full(pods, times.hbm) * rng.uniform(0.98, 1.02, size=pods),
        h2d_bytes=times.h2d / exposure * h2d_bps,
        h2d_bps=h2d_bps,
        h2d_exposed=exposure,
        grad_bytes=grad,
        overlap=overlap,
        tp_bytes=times.link * setup.board.nvlink_bps if mech == "nvlink" else 0.0,
        net_bps=fabric_bps(setup),
        p2p_bps=p2p_bps(setup),
        swap_main=np.full(pods, times.swap) * rng.uniform(0.9, 1.1, size=pods),
        swap_workers=np.full(pods, times.swap * float(rng.uniform(0.0, 0.5))),
        mem_kind=mech if mech in ("swap", "thrash") else "",
        node_pressure=mech in ("swap", "thrash") and (setup.mem_limit is None or bool(rng.random() < 0.3)),
        precision=mech if mech in ("bf16", "tf32", "fp32") else ("bf16" if rng.random() < 0.75 else "tf32"),
        cpu_kind=mech if mech in MECHANISMS[Bottleneck.CPU] else "",
        clock=np.full(pods, setup.clock_lock),
        intensity=float(rng.uniform(0.8, 1.25)),
        neighbour_cores=neighbours,
        slow_gpu=_straggler(rng, pods),
    )


def _straggler(rng: Rng, pods: int) -> np.ndarray:
    """Now and then one GPU of one pod runs slowed down (heat, a failing fan, a hardware slowdown)."""
    slow = np.ones(pods)
    if pods > 1 and rng.random() < STRAGGLER_SHARE:
        slow[int(rng.integers(pods))] = float(rng.uniform(0.7, 0.92))
    return slow


def settle_clocks(setup: Setup, w: Workload) -> tuple[Workload, Plan]:
    """Slow the math kernels by what the power limit allows, and the plan that results.

    Drawn times are at the clock the board runs at, so the math at boost is the drawn time times
    the clock; one pass is enough, as the clock moves the power share of the math little.
    """
    plan = plan_of(setup, w)
    acc = account(plan, setup.total_gpus > 1)
    math_share = plan.math / plan.clock / acc.step
    act = activity(w.precision, math_share, plan.hbm / acc.step, acc.comm_total / acc.step)
    ratio = clock_ratio(setup.board, setup.power_cap_w, dynamic_demand(setup.board, w.intensity, act))
    clock = setup.clock_lock * ratio
    # the drawn math time is the one the pod's GPUs reach together, its slowest GPU included
    settled = replace(w, clock=clock * w.slow_gpu, math_s=w.math_s * clock * w.slow_gpu)
    return settled, plan_of(setup, settled)
