"""What teams run, as family L models it: workloads, their stage mix, and one job's scenario.

Each workload says how large each stage is relative to its math (log-uniform ranges), how well its
kernels use the tensor pipes, and which bounding mechanisms it can plausibly show. A scenario picks a
workload and a cluster, then sizes the bounding stage so that removing it speeds the step up by a
drawn factor (1.1-1.5x as often as 2-5x); the label is then read back from the step model, never
assumed.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from bottleneck_operator.contract.verdict import Bottleneck, Mechanism
from bottleneck_operator_dev.familyl.hardware import BOARDS, FABRICS, STORAGES, Board, Fabric, Storage
from bottleneck_operator_dev.familyl.stages import STAGE_CLASS, Step, bounding

M = Mechanism


@dataclass(frozen=True)
class Workload:
    """One kind of training job.

    Attributes:
        name: a short name.
        ratios: stage -> (low, high) of its time relative to ``math`` (log-uniform).
        tensor_eff: (low, high) tensor-pipe activity while math kernels run.
        mechanisms: the mechanisms this workload can be bound by.
        overlap: (low, high) share of kernel time collectives hide behind (gradient bucketing,
            FSDP prefetch; accumulation divides the collective instead).
    """

    name: str
    ratios: dict[str, tuple[float, float]]
    tensor_eff: tuple[float, float]
    mechanisms: tuple[Mechanism, ...]
    overlap: tuple[float, float] = (0.3, 0.8)


def _w(name: str, eff: tuple[float, float], mechs: tuple[Mechanism, ...], **r: tuple[float, float]) -> Workload:
    base = {s: (0.005, 0.05) for s in STAGE_CLASS if s != "math"}
    base.update(r)
    return Workload(name, base, eff, mechs)


WORKLOADS: tuple[Workload, ...] = (
    _w(
        "llm-pretrain-fsdp",
        (0.45, 0.75),
        (M.COMPUTE, M.NETWORK, M.NVLINK, M.HBM_BANDWIDTH),
        comm=(0.2, 0.9),
        hbm=(0.2, 0.6),
    ),
    _w(
        "llm-finetune-zero-offload",
        (0.35, 0.65),
        (M.PCIE, M.HOST_MEMORY_PRESSURE, M.COMPUTE),
        h2d=(0.3, 1.2),
        swap=(0.0, 0.1),
    ),
    _w(
        "lora-small-model",
        (0.1, 0.3),
        (M.LAUNCH_BOUND, M.COMPUTE, M.TOO_FEW_WORKERS),
        launch=(0.3, 1.2),
        decode=(0.1, 0.5),
    ),
    _w("long-context-attention", (0.2, 0.45), (M.HBM_BANDWIDTH, M.COMPUTE, M.NVLINK), hbm=(0.5, 1.3), comm=(0.1, 0.5)),
    _w("moe-all-to-all", (0.3, 0.6), (M.NETWORK, M.NVLINK, M.COMPUTE), comm=(0.4, 1.3), hbm=(0.2, 0.5)),
    _w(
        "recsys-embeddings",
        (0.05, 0.25),
        (M.HBM_BANDWIDTH, M.NETWORK, M.HOST_MEMORY_PRESSURE, M.LOCAL_DISK),
        hbm=(0.6, 1.5),
        comm=(0.2, 0.8),
        read=(0.1, 0.5),
    ),
    _w(
        "vision-jpeg",
        (0.2, 0.5),
        (M.SATURATED, M.THROTTLED, M.TOO_FEW_WORKERS, M.LOCAL_DISK, M.NETWORK_STORAGE, M.COMPUTE),
        decode=(0.3, 1.0),
        read=(0.1, 0.6),
    ),
    _w(
        "video-decode",
        (0.2, 0.45),
        (M.SATURATED, M.THROTTLED, M.NETWORK_STORAGE, M.PCIE),
        decode=(0.5, 1.2),
        read=(0.2, 0.7),
        h2d=(0.1, 0.4),
    ),
    _w(
        "speech-asr",
        (0.25, 0.5),
        (M.NETWORK_STORAGE, M.LOCAL_DISK, M.TOO_FEW_WORKERS, M.COMPUTE),
        read=(0.2, 0.8),
        decode=(0.2, 0.6),
    ),
    _w("diffusion", (0.4, 0.7), (M.COMPUTE, M.HBM_BANDWIDTH, M.NETWORK_STORAGE), hbm=(0.2, 0.6), read=(0.05, 0.4)),
    _w(
        "rl-env-stepping", (0.05, 0.2), (M.SATURATED, M.THROTTLED, M.LAUNCH_BOUND), decode=(0.5, 1.5), launch=(0.2, 0.6)
    ),
    _w(
        "gnn-neighbour-sampling",
        (0.1, 0.3),
        (M.TOO_FEW_WORKERS, M.SATURATED, M.HBM_BANDWIDTH, M.HOST_MEMORY_PRESSURE),
        decode=(0.4, 1.2),
        hbm=(0.3, 0.8),
    ),
)

# The class each mechanism belongs to, and the stage that carries it in the step model.
MECH_STAGE: dict[Mechanism, str] = {
    M.LOCAL_DISK: "read", M.NETWORK_STORAGE: "read",
    M.THROTTLED: "decode", M.SATURATED: "decode", M.TOO_FEW_WORKERS: "decode",
    M.PCIE: "h2d", M.NVLINK: "comm", M.NETWORK: "comm",
    M.COMPUTE: "math", M.LAUNCH_BOUND: "launch",
    M.HBM_BANDWIDTH: "hbm", M.HOST_MEMORY_PRESSURE: "swap",
}  # fmt: skip
CLASS_MECHS: dict[Bottleneck, tuple[Mechanism, ...]] = {
    Bottleneck.IO: (M.LOCAL_DISK, M.NETWORK_STORAGE),
    Bottleneck.CPU: (M.THROTTLED, M.SATURATED, M.TOO_FEW_WORKERS),
    Bottleneck.INTERCONNECT: (M.PCIE, M.NVLINK, M.NETWORK),
    Bottleneck.GPU: (M.COMPUTE, M.LAUNCH_BOUND),
    Bottleneck.MEMORY: (M.HOST_MEMORY_PRESSURE, M.HBM_BANDWIDTH),
}


@dataclass(frozen=True)
class Scenario:
    """Everything about one job that its telemetry follows from."""

    workload: str
    mechanism: Mechanism
    step: Step
    gain: float
    runner_up: float
    board: Board
    storage: Storage
    fabric: Fabric
    pods: int
    gpus: int
    workers: int
    node_cpus: int
    cpu_limit: float | None
    tensor_eff: float
    step_seconds: float


def _loguni(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(np.exp(rng.uniform(np.log(max(lo, 1e-4)), np.log(max(hi, 1e-4)))))


def _solve(step: Step, stage: str, gain: float) -> Step:
    """Size ``stage`` so that removing it speeds the step up by ``gain`` (bisection: time is monotone)."""
    base = replace(step, **{stage: 0.0}).time
    lo, hi = 0.0, 60.0 * base
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        if replace(step, **{stage: mid}).time < gain * base:
            lo = mid
        else:
            hi = mid
    return replace(step, **{stage: hi})


def _shrink_others(step: Step, gain: float) -> Step:
    """Compute-bound: scale every other stage so that removing the math speeds the step up by ``gain``."""
    others = ("read", "decode", "h2d", "comm", "hbm", "launch", "swap")

    def scaled(k: float) -> Step:
        return replace(step, **{s: getattr(step, s) * k for s in others})

    lo, hi = 1e-3, 1.0
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        st = scaled(mid)
        if st.time / replace(st, math=0.0).time > gain:
            lo = mid
        else:
            hi = mid
    return scaled(lo)


def _draw_step(rng: np.random.Generator, wl: Workload, mech: Mechanism, gain: float, damp: float) -> Step:
    # ``damp`` shrinks the stages that do not bound the job, for draws where they would outgrow it.
    r = {s: _loguni(rng, *wl.ratios[s]) * (1.0 if s == MECH_STAGE[mech] else damp) for s in STAGE_CLASS if s != "math"}
    # Most healthy hosts never swap; a few reclaim a little now and then.
    r["swap"] = r["swap"] if mech is M.HOST_MEMORY_PRESSURE else r["swap"] * 0.2 * (rng.random() < 0.3)
    if MECH_STAGE[mech] != "comm" and rng.random() < 0.3:
        # Gradient accumulation: one reduction per k micro-batches hides most of the collective.
        r["comm"] /= float(rng.choice([2, 4, 8]))
    step = Step(math=1.0, comm_overlap=rng.uniform(*wl.overlap), h2d_overlap=rng.uniform(0.2, 0.7), **r)
    target = MECH_STAGE[mech]
    if target == "math":
        return _shrink_others(step, gain)
    if rng.random() < 0.45:
        # A hard case: a second stage of another class close behind the bounding one.
        other = str(rng.choice([s for s in STAGE_CLASS if STAGE_CLASS[s][0] is not STAGE_CLASS[target][0]]))
        if other != "math":
            step = _solve(step, other, max(1.02, gain / rng.uniform(1.03, 1.3)))
    return _solve(step, target, gain)


def _gain(rng: np.random.Generator) -> float:
    return float(rng.uniform(1.1, 1.5) if rng.random() < 0.5 else _loguni(rng, 2.0, 5.0))


def _cluster(rng: np.random.Generator, mech: Mechanism) -> tuple[Board, Storage, Fabric, int, int]:
    boards = [b for b in BOARDS if b.nvlink_bps > 0] if mech is M.NVLINK else list(BOARDS)
    board = boards[int(rng.integers(len(boards)))]
    local = [s for s in STORAGES if s.local]
    remote = [s for s in STORAGES if not s.local]
    pool = local if mech is M.LOCAL_DISK else remote if mech is M.NETWORK_STORAGE else list(STORAGES)
    storage = pool[int(rng.integers(len(pool)))]
    fabric = FABRICS[int(rng.integers(len(FABRICS)))]
    if mech is M.NVLINK:
        pods, gpus = 1, int(rng.choice([2, 4, 8]))
    elif mech is M.NETWORK:
        pods, gpus = int(rng.integers(2, 17)), int(rng.choice([1, 2, 4, 8]))
    elif mech is M.PCIE:
        pods, gpus = int(rng.integers(1, 5)), int(rng.choice([1, 2, 4, 8]))
    else:
        pods, gpus = int(rng.choice([1, 1, 2, 4, 8, 16])), int(rng.integers(1, 9))
    return board, storage, fabric, pods, gpus


def _cpu(rng: np.random.Generator, mech: Mechanism, gpus: int) -> tuple[int, int, float | None]:
    """Loader workers, node CPUs and the CPU limit, so that the CPU mechanism is what the host shows."""
    node_cpus = int(rng.choice([32, 64, 96, 128, 192, 224]))
    workers = int(rng.integers(2, 9)) * gpus
    limit: float | None = float(rng.choice([0, 1])) or None
    if mech is M.TOO_FEW_WORKERS:
        workers, limit = int(rng.integers(1, 3)) * max(1, gpus // 2), None
    elif mech is M.THROTTLED:
        limit = max(2.0, round(0.5 * (workers + gpus), 0))
    elif mech is M.SATURATED:
        node_cpus = int(rng.choice([16, 24, 32]))
        workers, limit = max(workers, node_cpus), None
    if limit is not None and mech is not M.THROTTLED:
        limit = float(workers + 2 * gpus + 4)
    workers = min(workers, node_cpus)
    return workers, node_cpus, limit


def scenario(rng: np.random.Generator, label: Bottleneck, mech: Mechanism) -> Scenario:
    """One job bound by ``mech`` (of class ``label``), checked against the step model."""
    wls = [w for w in WORKLOADS if mech in w.mechanisms]
    # Drawn once: retrying with a fresh one would favour the easy, strong cases. A stage in series
    # with the kernels cannot bound a step by 1.1x while the kernels take the rest, so where a draw
    # fails the target creeps up (to about 1.35x for a 1.1x draw after 64 tries), never down.
    drawn = _gain(rng)
    for attempt in range(64):
        wl = wls[int(rng.integers(len(wls)))]
        gain = drawn * 1.02 ** max(0, attempt - 8)
        step = _draw_step(rng, wl, mech, gain, 0.85 ** min(attempt, 12))
        stage, got, runner_up = bounding(step)
        if stage != MECH_STAGE[mech] or STAGE_CLASS[stage][0] is not label or got < 1.05:
            continue
        board, storage, fabric, pods, gpus = _cluster(rng, mech)
        workers, node_cpus, limit = _cpu(rng, mech, gpus)
        return Scenario(
            wl.name, mech, step, got, runner_up, board, storage, fabric, pods, gpus, workers, node_cpus, limit,
            float(rng.uniform(*wl.tensor_eff)), _loguni(rng, 0.15, 4.0),
        )  # fmt: skip
    raise RuntimeError(f"no scenario for {mech} in 64 draws")
