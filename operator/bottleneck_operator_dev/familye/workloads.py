"""Drawing one job for a class: its cluster, its step, and the things that happen during the window.

Each class's mechanism sets its own stage's capacity relative to what the GPUs need (a severity:
how much faster the step would be without it), every other stage gets slack drawn from what real
jobs show (often little: moderate and mixed jobs are the norm), and the label is then *computed*
by :func:`.stepmodel.label_of`. A draw whose computed label is not the intended class is thrown
away and drawn again, so the classes stay balanced while every label still follows the step model.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.signals import Family
from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator_dev.familye.archetypes import ARCHETYPES, KINDS_FOR, Archetype
from bottleneck_operator_dev.familye.cluster import Env, draw_env, pick_board
from bottleneck_operator_dev.familye.hardware import GIB, STORAGES, Board
from bottleneck_operator_dev.familye.links import comm, set_interconnect
from bottleneck_operator_dev.familye.stepmodel import Step, interconnect_parts, label_of, memory_parts, pod_times

REF_TFLOPS, REF_HBM = 312.0, 2039e9  # the reference board, A100 SXM4 80 GB
MIN_LEAD = 1.04
SHARDED = (
    "llm",
    "recsys",
    "gnn",
)  # samples packed into large shards, not one file each  # a label must beat the runner-up by 4 %: closer calls are not labels


@dataclass(frozen=True)
class Plan:
    """One job, fully drawn.

    Attributes:
        env: the cluster around it.
        step: its step account.
        kind: the archetype's name.
        mechanism: how its class limits it.
        tags: what was drawn, for the reader.
        tensor: tensor-pipe activity during compute-bound kernels.
        gpu_clock: each GPU's clock share of boost during compute-bound kernels (pods x GPUs).
        gpu_base: each GPU's clock share outside them (spread, thermal slowdown).
        math_draw_w: power above idle that compute-bound kernels would draw without a cap, W.
        amp: mixed precision (tensor cores); without it the FP32 pipes carry the math.
        main_cores: CPU cores each trainer process uses while its GPU works.
        worker_rss: bytes each loader worker holds.
        ckpt_every, ckpt_s: checkpoint period and pause, s (0: none in the window).
        restart_at: window offset of a restart of every trainer, s (NaN: none).
        init_s: seconds of start-up at the window's beginning (0: the job was already running).
        noise: relative step-to-step spread of the stages.
    """

    env: Env
    step: Step
    kind: str
    mechanism: str
    tags: tuple[str, ...]
    tensor: float
    gpu_clock: npt.NDArray[np.float64]
    gpu_base: npt.NDArray[np.float64]
    math_draw_w: float
    amp: bool
    main_cores: float
    worker_rss: float
    ckpt_every: float
    ckpt_s: float
    restart_at: float
    init_s: float
    noise: float


def _u(rng: np.random.Generator, lo_hi: tuple[float, float], log: bool = False) -> float:
    lo, hi = lo_hi
    if log:
        return float(np.exp(rng.uniform(np.log(lo), np.log(hi))))
    return float(rng.uniform(lo, hi))


def _storage_key(rng: np.random.Generator, mech: str) -> str:
    if mech == "local-disk":
        return str(rng.choice(["sata-ssd", "nvme-throttled", "nvme-mmap", "nvme-gen3"], p=[0.3, 0.3, 0.25, 0.15]))
    if mech == "network-storage":
        return str(rng.choice(["nfs", "efs", "object-http", "lustre-ib"], p=[0.3, 0.2, 0.3, 0.2]))
    return str(rng.choice([s.key for s in STORAGES]))


def _shape(rng: np.random.Generator, mech: str) -> tuple[Board, int, int, str | None]:
    """Board, pods, GPUs per pod and fabric, as the mechanism allows."""
    if mech == "nvlink":
        board, pods, gpus = pick_board(rng, nvlink=True), int(rng.integers(1, 5)), int(rng.choice([4, 8]))
    elif mech == "pcie":
        board, pods, gpus = pick_board(rng, nvlink=False), int(rng.integers(1, 3)), int(rng.choice([1, 2, 4]))
    elif mech == "network":
        board, pods = pick_board(rng), int(rng.integers(2, 17))
        gpus = int(rng.choice([4, 8])) if board.gpus_per_node >= 8 else int(rng.choice([2, 4]))
    else:
        board = pick_board(rng)
        pods = 1 if rng.random() < 0.45 else int(rng.integers(2, 17))
        gpus = int(rng.choice([1, 2, 4, 8])) if pods == 1 else int(rng.choice([2, 4, 8]))
    gpus = min(gpus, board.gpus_per_node)
    fabric = None
    if pods > 1:
        fabric = str(
            rng.choice(
                ["ib-hdr", "ib-ndr", "roce-100", "roce-200", "roce-hidden", "eth-25", "eth-100"],
                p=[0.2, 0.2, 0.15, 0.15, 0.08, 0.1, 0.12],
            )
        )
    return board, pods, gpus, fabric


def _clocks(rng: np.random.Generator, env: Env, tensor: float) -> dict[str, Any]:
    """Each GPU's clock share: outside compute (spread, a hot GPU's thermal slowdown) and during it (power cap too).

    Compute-bound kernels draw most power; where that draw would pass the enforced limit the clock
    falls until it fits (dynamic power ~ f^2.5 over the DVFS range), never below the base clock.
    """
    b = env.board
    draw = (b.tdp_w - b.idle_w) * (0.8 + 0.25 * tensor) * rng.uniform(0.85, 1.05)
    head = env.power_limit - b.idle_w
    cap = np.where(draw > head, (head / draw) ** (1 / 2.5), 1.0)
    base = np.where(env.hot, env.clock_spread * rng.uniform(0.72, 0.9), env.clock_spread)
    return {"draw": float(draw), "base": base, "math": np.maximum(cap, b.floor_mhz / b.boost_mhz) * base}


def _gpu_side(rng: np.random.Generator, env: Env, a: Archetype, mech: str, k: int) -> dict[str, float]:
    """Kernel times per step on this board, with the compute/bandwidth mix the mechanism needs."""
    tk = _u(rng, a.kernel_s, log=True)
    m = _u(rng, a.math_share)
    if mech == "compute":
        m = max(m, rng.uniform(0.58, 0.85))
    elif mech == "hbm-bandwidth":
        m = min(m, rng.uniform(0.1, 0.38))
    b = env.board
    return {
        "t_math": tk * k * m * REF_TFLOPS / b.tflops,
        "t_hbm": tk * k * (1 - m) * REF_HBM / b.hbm_bps,
        "math_bytes": rng.uniform(0.12, 0.35),
        "hbm_math": rng.uniform(0.05, 0.25),
    }


def _input_side(
    rng: np.random.Generator, env: Env, a: Archetype, cls: Bottleneck, mech: str, need: float, sev: float, hard: bool
) -> dict[str, float]:
    """Loader workers, cores, storage and reclaim, from what the GPUs need (``need`` samples/s per pod)."""
    c = _u(rng, a.cpu_s, log=True)
    read = _u(rng, a.read_bytes, log=True) * (rng.uniform(0.3, 1.0) if rng.random() < 0.3 else 1.0)
    lat = env.storage.latency * rng.uniform(0.5, 2.0)
    if a.name in SHARDED:  # rows read from large shards: one request serves many samples
        lat *= min(1.0, read / rng.uniform(1e6, 8e6))
    slack_range = (1.06, 1.35) if hard else (1.3, 4.0)
    workers = int(rng.choice([2, 4, 6, 8, 10, 12, 16])) * env.gpus
    cores = need * c * rng.uniform(*slack_range)
    stall = 0.0
    io_bps = min(env.storage.bps * rng.uniform(0.6, 1.0), need * read * rng.uniform(*slack_range))
    if mech == "throttled" or mech == "saturated":
        cores = need * c / sev
    elif mech == "too-few-workers":
        workers = max(1, round(need * (c + lat) / sev))
        cores = max(cores, workers * rng.uniform(1.5, 3.0))
        sev = need * (c + lat) / workers
    elif cls is Bottleneck.IO and env.storage.key == "object-http":
        lat = max(lat, workers * sev / need - c)
        io_bps = max(io_bps, need * read * rng.uniform(1.2, 2.0))
    elif cls is Bottleneck.IO:
        io_bps = need * read / sev
    elif mech == "host-memory-pressure":
        stall = workers * sev / need - c - lat
    workers = max(workers, int(np.ceil(cores * rng.uniform(1.0, 1.6)))) if mech != "too-few-workers" else workers
    # too few workers also when nobody sized them: keep the latency-bound rate above the need
    floor = need * (lat + c / min(1.0, cores / workers) + stall) * (1.02 if hard else 1.2)
    if mech not in ("too-few-workers",) and not (cls is Bottleneck.IO and env.storage.key == "object-http"):
        workers = max(workers, int(np.ceil(floor)))
    return {
        "cpu_cost": c,
        "read": read,
        "latency": lat,
        "workers": float(workers),
        "cores": cores,
        "io_bps": io_bps,
        "stall": max(stall, 0.0),
    }


def _h2d(
    rng: np.random.Generator, env: Env, a: Archetype, c: dict[str, Any], samples: float
) -> tuple[float, float, float]:
    """Host-to-device bytes per sample, copy time per step and the share hidden behind compute.

    Pinned, non-blocking copies hide behind compute; a PCIe-bound job's copies (pageable buffers,
    offloaded state) mostly do not, and reach 30-85 % of the link.
    """
    h2d = _u(rng, a.h2d_bytes, log=True)
    if "h2d_exposed" not in c:
        return h2d, samples / env.gpus * h2d / (env.board.pcie_bps * 0.8), rng.uniform(0.6, 0.98)
    hidden = rng.uniform(0.0, 0.3)
    t_h2d = c["h2d_exposed"] / (1 - hidden)
    return t_h2d * env.board.pcie_bps * rng.uniform(0.3, 0.85) * env.gpus / samples, t_h2d, hidden


def _assemble(
    rng: np.random.Generator, env: Env, a: Archetype, cls: Bottleneck, mech: str, hard: bool
) -> tuple[Step, float, dict[str, Any]]:
    """The step for one draw, the tensor activity of its compute kernels, and its GPUs' clocks."""
    k = int(rng.choice([1, 1, 1, 2, 4, 8, 16])) if mech != "network" else int(rng.choice([1, 1, 2]))
    tensor = _u(rng, a.tensor)
    gs = _gpu_side(rng, env, a, mech, k)
    clocks = _clocks(rng, env, tensor)
    clock = np.asarray(clocks["math"].min(axis=1), dtype=np.float64)
    kernels = gs["t_math"] / float(clock.min()) + gs["t_hbm"]
    bubble = rng.uniform(0.05, 0.35) if env.pods > 1 and rng.random() < 0.15 else 0.0
    c = comm(rng, env, a, mech, kernels)
    c["hidden"] = c["overlap"] * (2 / 3) * kernels / k
    sev = rng.uniform(1.04, 1.3) if hard else float(np.exp(rng.uniform(np.log(1.15), np.log(3.5))))
    base = kernels * (1 + bubble) + max(0.0, c["t_comm"] - c["hidden"]) + c["t_tp"]
    if cls is Bottleneck.INTERCONNECT:
        sev = max(sev, rng.uniform(1.6, 3.5)) if not hard else rng.uniform(1.5, 2.2)
        set_interconnect(rng, env, mech, c, base, sev)
    samples = _u(rng, (float(a.batch[0]), float(a.batch[1])), log=True) * k * env.gpus
    h2d, t_h2d, h2d_ov = _h2d(rng, env, a, c, samples)
    step = Step(
        k=k,
        t_math=gs["t_math"],
        math_bytes=gs["math_bytes"],
        t_hbm=gs["t_hbm"],
        hbm_math=gs["hbm_math"],
        bubble=bubble,
        clock=clock,
        t_comm=c["t_comm"],
        overlap=c["overlap"],
        t_tp=c["t_tp"],
        t_h2d=t_h2d,
        h2d_overlap=h2d_ov,
        samples=samples,
        cpu_cost=0.0,
        cores=np.full(env.pods, 1e9),
        workers=1,
        read_bytes=0.0,
        io_bps=np.full(env.pods, np.inf),
        latency=0.0,
        stall=np.zeros(env.pods),
        main_stall=np.zeros(env.pods),
        grad_bytes=c["grad"],
        nic_bytes=c["nic"],
        nvlink_bytes=c["nvlink"],
        p2p_bytes=c["p2p"],
        comm_link=str(c["link"]),
        h2d_bytes=h2d * samples / env.gpus,
    )
    need = samples / float(np.max(pod_times(step).gpu_side))
    inp = _input_side(rng, env, a, cls, mech, need, sev, hard)
    return _finish(rng, env, step, inp, mech, sev), tensor, clocks


def _finish(rng: np.random.Generator, env: Env, step: Step, inp: dict[str, float], mech: str, sev: float) -> Step:
    """Per-pod variety (neighbours stealing cores, one slower storage client) and host-memory stalls."""
    p = env.pods
    cores = np.full(p, inp["cores"])
    io_bps = np.full(p, inp["io_bps"])
    stall = np.full(p, inp["stall"])
    if p > 1 and rng.random() < 0.3:  # one straggling pod: a busier node or a slower storage client
        i = int(rng.integers(p))
        cores[i] *= rng.uniform(0.6, 0.95)
        io_bps[i] *= rng.uniform(0.6, 0.95)
    # the loader cannot use cores the node does not have (the trainers and neighbours come first)
    per_node = np.bincount(env.node_of, minlength=env.nodes)[env.node_of]
    room = env.node_cpus / per_node - 1.2 * env.gpus - env.nb_cores[env.node_of] / per_node
    cores = np.minimum(cores, np.maximum(room, 1.0))
    main = np.zeros(p)
    if mech == "host-memory-pressure":
        main = np.full(p, float(np.max(pod_times(step).gpu_side)) * rng.uniform(0.02, 0.15) * sev)
    return replace(
        step,
        cpu_cost=inp["cpu_cost"],
        cores=cores,
        workers=int(inp["workers"]),
        read_bytes=inp["read"],
        io_bps=io_bps,
        latency=inp["latency"],
        stall=stall,
        main_stall=main,
    )


def _limits(rng: np.random.Generator, env: Env, step: Step, rss: float, mech: str, main: float) -> Env:
    """CPU and memory limits consistent with the step: a throttled job's limit is what its loader gets."""
    cpu = np.full(env.pods, np.nan)
    if mech == "throttled":
        cpu = np.round((step.cores + main * env.gpus) * 2) / 2
    elif mech != "saturated" and rng.random() < 0.45:  # a limit sized with headroom
        cpu = np.ceil((step.cores + main * env.gpus) * rng.uniform(1.15, 2.5))
    need = step.workers * rss + env.gpus * rng.uniform(8, 40) * GIB
    mem = np.full(env.pods, np.nan)
    if mech == "host-memory-pressure" or rng.random() < 0.6:
        mem = np.full(
            env.pods, need * (rng.uniform(0.97, 1.02) if mech == "host-memory-pressure" else rng.uniform(1.3, 3))
        )
    # the node holds what its pods may use, with room for the system and the page cache
    per_node = int(np.bincount(env.node_of).max()) * float(np.nanmax(np.append(mem, need)))
    sizes = [s * GIB for s in (256, 512, 1024, 2048, 4096)]
    node_mem = max(env.node_mem, next((s for s in sizes if s >= per_node * 1.25), sizes[-1]))
    fams = set(env.families)
    if np.isfinite(cpu).all() and Family.CADVISOR in fams:
        fams.add(Family.CADVISOR_CFS)
    swap = env.swap or (mech == "host-memory-pressure" and rng.random() < 0.3)
    tags = (*env.tags, *(("swap",) if swap else ()), *(("cpu-limit",) if np.isfinite(cpu).all() else ()))
    return replace(env, cpu_limit=cpu, mem_limit=mem, node_mem=node_mem, families=frozenset(fams), swap=swap, tags=tags)


def _mechanism_holds(step: Step, cls: Bottleneck, mech: str) -> bool:
    """For Memory and Interconnect, the mechanism is the part that helps most when removed alone."""
    if cls is Bottleneck.MEMORY:
        host, hbm = memory_parts(step)
        return (host > hbm) == (mech == "host-memory-pressure")
    if cls is Bottleneck.INTERCONNECT:
        parts = interconnect_parts(step)
        return max(parts, key=parts.__getitem__) == mech
    return True


def _env_for(rng: np.random.Generator, cls: Bottleneck, mech: str, duration: float) -> Env:
    """The cluster around a job of this mechanism (limits come later, from its step)."""
    board, pods, gpus, fabric = _shape(rng, mech)
    storage = _storage_key(rng, mech if cls is Bottleneck.IO else "")
    return draw_env(
        rng,
        duration,
        pods=pods,
        gpus=gpus,
        board=board,
        fabric_key=fabric,
        storage_key=storage,
    )


def draw_plan(rng: np.random.Generator, cls: Bottleneck, mech: str, duration: float, *, hard: bool) -> Plan | None:
    """One job of class ``cls`` by mechanism ``mech``, or None when the drawn step's label disagrees."""
    a = ARCHETYPES[str(rng.choice(KINDS_FOR[mech]))]
    env = _env_for(rng, cls, mech, duration)
    if mech == "network" and env.fabric is None:
        return None
    step, tensor, clocks = _assemble(rng, env, a, cls, mech, hard)
    label, lead = label_of(step)
    if label is not cls or lead < MIN_LEAD or (hard and lead > 1.35):
        return None
    if not _mechanism_holds(step, cls, mech):
        return None
    main = rng.uniform(0.7, 1.4)
    rss = _u(rng, a.worker_rss)
    env = _limits(rng, env, step, rss, mech, main)
    if mech == "saturated":
        env = _saturate(env, step, main)
    ckpt = rng.random() < 0.4
    tags = (
        *env.tags,
        f"kind:{a.name}",
        f"mechanism:{mech}",
        *(("hard",) if hard else ()),
        *((f"accum:{step.k}",) if step.k > 1 else ()),
    )
    return Plan(
        env=env,
        step=step,
        kind=a.name,
        mechanism=mech,
        tags=tags,
        tensor=tensor,
        gpu_clock=clocks["math"],
        gpu_base=clocks["base"],
        math_draw_w=clocks["draw"],
        amp=a.name != "gnn" and rng.random() < 0.85,
        main_cores=main,
        worker_rss=rss,
        ckpt_every=rng.uniform(400, 2400) if ckpt else 0.0,
        ckpt_s=rng.uniform(15, 180) if ckpt else 0.0,
        restart_at=rng.uniform(0.2, 0.8) * duration
        if mech == "host-memory-pressure" and rng.random() < 0.3
        else np.nan,
        init_s=rng.uniform(30, 200) if rng.random() < 0.1 else 0.0,
        noise=rng.uniform(0.02, 0.12),
    )


def _saturate(env: Env, step: Step, main: float) -> Env:
    """A saturated node: neighbours take every core the job's loader does not get."""
    free = step.cores + main * env.gpus
    nb = np.maximum(env.node_cpus - np.bincount(env.node_of, weights=free, minlength=env.nodes), 0.0)
    return replace(
        env, nb_cores=nb, neighbours=np.maximum(env.neighbours, 2), nb_cpu_psi=np.maximum(env.nb_cpu_psi, 0.2)
    )
