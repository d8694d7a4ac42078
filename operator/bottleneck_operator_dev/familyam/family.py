"""Family AM: Jobs drawn by placement and topology, labelled by a counterfactual over their stages.

``generate_family_am(seed, n)`` returns ``n`` Jobs; Job ``i`` draws from ``default_rng((seed, i))``
alone, and its intent from a permutation of the five classes per block of five Jobs, so a Job never
depends on ``n``. The label is not the intent: it is the class whose stages, made ample, speed the
step up most (stages.py).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from bottleneck_operator.contract.signals import SIGNALS, Family
from bottleneck_operator.contract.verdict import CLASSES, Bottleneck, Mechanism
from bottleneck_operator.contract.window import DataQuality, JobWindow, PodWindow, families_and_coverage
from bottleneck_operator_dev.familyam.exporters import PodCtx, levels
from bottleneck_operator_dev.familyam.hardware import (
    Board,
    Placement,
    draw_board,
    draw_fabric,
    draw_placement,
    draw_storage,
)
from bottleneck_operator_dev.familyam.series import pod_signals, scrape_times
from bottleneck_operator_dev.familyam.stages import Stages, job_step, label_of
from bottleneck_operator_dev.familyam.workload import Workload, draw_sub, draw_workload, stages_for

NAMESPACES = ("vision", "nlp-train", "research", "speech", "recsys", "ml-platform")
SCRAPE_INTERVALS = (5.0, 10.0, 15.0, 30.0, 60.0)
FIELD_SETS = ("dev-only", "default", "full")


@dataclass(frozen=True)
class FamilyAMJob:
    """One labelled Job: what the counterfactual says limits it, what was drawn, and its window."""

    namespace: str
    name: str
    label: Bottleneck
    mechanism: Mechanism
    tags: tuple[str, ...]
    window: JobWindow


def intent_of(seed: int, i: int) -> Bottleneck:
    """Job ``i``'s intended class: a permutation of the five classes per block of five Jobs."""
    order = np.random.default_rng((seed, i // 5, 5)).permutation(len(CLASSES))
    return CLASSES[int(order[i % 5])]


def _size(rng: np.random.Generator, intent: Bottleneck) -> tuple[int, int]:
    """Nodes and GPUs per pod: multi-node runs more often where collectives are the intended bound."""
    multi_node = 0.65 if intent is Bottleneck.INTERCONNECT else 0.2
    nodes = int(rng.integers(2, 5)) if rng.random() < multi_node else 1
    gpus = int(rng.choice((1, 2, 4, 8), p=(0.25, 0.2, 0.25, 0.3)))
    if intent is Bottleneck.INTERCONNECT and nodes == 1:
        gpus = max(gpus, 2)
    return nodes, gpus


def _clock_and_cap(rng: np.random.Generator, board: Board) -> tuple[float, float]:
    """A pod's SM clock share and enforced power limit: boards spread, and some clusters cap power."""
    cap = 1.0 if rng.random() < 0.65 else float(rng.uniform(0.6, 0.95))
    clock = float(rng.uniform(0.88, 1.0)) * min(1.0, (cap / 0.85) ** 0.5)
    return clock, cap * board.tdp_w


def _families(rng: np.random.Generator, board: Board, placements: list[Placement]) -> tuple[set[Family], str]:
    """Which exporters (and counters files) the cluster runs: field sets, missing families."""
    fields = "dev-only" if not board.prof else str(rng.choice(FIELD_SETS, p=(0.25, 0.45, 0.3)))
    fams = {Family.DCGM_DEV}
    if fields != "dev-only":
        fams.add(Family.DCGM_PROF)
    if fields == "full":
        fams |= {Family.DCGM_PROF_SM, Family.DCGM_PROF_PIPES, Family.DCGM_POWER_CLOCKS}
        if board.nvlink_gbps > 0 and rng.random() < 0.5:
            fams.add(Family.DCGM_PROF_NVLINK)
    elif rng.random() < 0.3:
        fams.add(Family.DCGM_POWER_CLOCKS)
    optional = {Family.CADVISOR: 0.95, Family.KSM: 0.9, Family.NODE: 0.95, Family.SIDECAR: 0.75}
    fams |= {f for f, p in optional.items() if rng.random() < p}
    if Family.CADVISOR in fams and any(p.cpu_limit is not None for p in placements):
        fams.add(Family.CADVISOR_CFS)
    if Family.NODE in fams and rng.random() < 0.85:
        fams.add(Family.NODE_PSI)
    if Family.NODE in fams and placements[0].rdma and rng.random() < 0.9:
        fams.add(Family.NODE_IB)
    if Family.SIDECAR in fams and rng.random() < 0.5:
        fams.add(Family.SIDECAR_NET)
    return fams, fields


def _names(fams: set[Family], p: Placement) -> list[str]:
    """The signals this pod's exporters publish: CFS counters and the CPU limit only with a limit."""
    skip = {"cpu_throttled_frac", "cpu_limit_cores", "sc_throttled_frac"} if p.cpu_limit is None else set()
    return [n for n, spec in SIGNALS.items() if spec.family in fams and n not in skip]


def _pause(rng: np.random.Generator, times: np.ndarray, tags: list[str]) -> np.ndarray:
    """Checkpoint pauses: every 10-30 minutes the GPUs wait 0.5-2 minutes on the writer."""
    if rng.random() >= 0.4:
        return np.zeros(times.size, dtype=bool)
    tags.append("checkpoints")
    every, length = float(rng.uniform(600.0, 1800.0)), float(rng.uniform(30.0, 120.0))
    return np.asarray(((times - times[0]) % every) < length, dtype=bool)


@dataclass(frozen=True)
class _Physics:
    """A Job's drawn hardware, placements, workload and per-pod stage times."""

    board: Board
    placements: list[Placement]
    workload: Workload
    stages: list[Stages]
    clocks: list[tuple[float, float]]
    nodes: int
    sub: str


def _physics(rng: np.random.Generator, intent: Bottleneck) -> _Physics:
    nodes, gpus = _size(rng, intent)
    board = draw_board(rng, nodes * gpus > 1)
    fabric = draw_fabric(rng, intent, nodes)
    storage = draw_storage(rng, intent)
    placements = [draw_placement(rng, intent, gpus, fabric, storage) for _ in range(nodes)]
    sub = draw_sub(rng, intent, nodes * gpus > 1)
    w = draw_workload(rng, intent, sub, board, placements[0], nodes)
    # the placement drew the memory limit as a multiple of the working set, which is known only now
    placements = [replace(p, mem_limit_gb=round(p.mem_limit_gb * w.host_gb, 1)) for p in placements]
    clocks = [_clock_and_cap(rng, board) for _ in placements]
    stages = [stages_for(w, board, p, c[0], nodes) for p, c in zip(placements, clocks, strict=True)]
    return _Physics(board, placements, w, stages, clocks, nodes, sub)


def _pods(
    rng: np.random.Generator, ph: _Physics, name: str, at: np.ndarray, step: float, si: float, tags: list[str]
) -> tuple[tuple[PodWindow, ...], set[Family]]:
    fams, fields = _families(rng, ph.board, ph.placements)
    tags.append(f"fields:{fields}")
    collect = float(rng.choice((10.0, 15.0, 30.0), p=(0.2, 0.2, 0.6)))
    step_t = job_step(ph.stages)
    total = sum(p.gpus for p in ph.placements)
    times = scrape_times(rng, float(at[0]), float(at[-1]), si)
    pause = _pause(rng, times, tags)
    pods = []
    for k, (p, st, (clock, cap)) in enumerate(zip(ph.placements, ph.stages, ph.clocks, strict=True)):
        ctx = PodCtx(
            st,
            step_t,
            ph.workload,
            ph.board,
            p,
            ph.nodes,
            total,
            clock,
            cap,
            float(rng.uniform(0.7, 0.95)) if ph.sub != "launch" else 0.3,
            float(rng.uniform(0.85, 0.98)),
        )
        reset_at = int(rng.integers(times.size // 4, 3 * times.size // 4)) if rng.random() < 0.1 else None
        if reset_at is not None:
            tags.append("counter-reset")
        lv = levels(ctx)
        signals = pod_signals(
            rng, lv, _names(fams, p), times, at, step=step, si=si, collect=collect, pause=pause, reset_at=reset_at
        )
        pod = f"{name}-worker-{k}" if ph.nodes > 1 else f"{name}-{rng.integers(36**5):07x}"[: len(name) + 6]
        pods.append(PodWindow(pod, p.node, ph.board.model_name, p.gpus, signals, co_located_pods=p.neighbours))
    return tuple(pods), fams


def _tags(intent: Bottleneck, ph: _Physics, si: float) -> list[str]:
    p = ph.placements[0]
    return [
        f"intent:{intent.value}",
        f"sub:{ph.sub}" if ph.sub else "sub:-",
        f"board:{ph.board.model_name}",
        f"nodes:{ph.nodes}",
        f"gpus-per-pod:{p.gpus}",
        f"fabric:{p.fabric}",
        f"gpudirect:{'yes' if p.gpudirect else 'no'}",
        f"cpu-policy:{p.cpu_policy}",
        f"far-socket:{'yes' if any(q.far_socket for q in ph.placements) else 'no'}",
        f"cpu-limit:{'none' if p.cpu_limit is None else p.cpu_limit}",
        f"storage:{p.storage}",
        f"pinned:{'yes' if ph.workload.pinned else 'no'}",
        f"scrape:{si:g}s",
    ]


def make_job(seed: int, i: int, start: float, step: float) -> FamilyAMJob:
    """Job ``i`` of the family for ``seed``: everything from ``default_rng((seed, i))``."""
    rng = np.random.default_rng((seed, i))
    intent = intent_of(seed, i)
    ph = _physics(rng, intent)
    verdict = label_of(ph.stages)
    si = float(rng.choice(SCRAPE_INTERVALS, p=(0.1, 0.15, 0.3, 0.35, 0.1)))
    tags = _tags(intent, ph, si)
    if rng.random() < 0.05:
        duration = float(rng.uniform(3.0, 15.0)) * si  # fewer than 20 scrapes: too short to judge
        tags.append("too-short")
    else:
        duration = float(rng.uniform(20.0, 75.0)) * 60.0
    at = start + step * np.arange(int(duration // step) + 1, dtype=np.float64)
    name = f"train-{i:04d}-{int(rng.integers(16**4)):04x}"
    pods, fams = _pods(rng, ph, name, at, step, si, tags)
    if verdict.hard:
        tags.append("hard")
    families, coverage = families_and_coverage(pods)
    notes = () if Family.DCGM_PROF in fams else ("no PROF fields",)
    layout = {
        "dcgm": str(rng.choice(("exported-labels", "pod-labels"))),
        "node": str(rng.choice(("instance-join", "node-label"))),
    }
    quality = DataQuality(families, coverage, si, notes, layout)
    namespace = str(rng.choice(NAMESPACES))
    window = JobWindow(namespace, name, float(at[0]), float(at[-1]), step, at, pods, quality)
    return FamilyAMJob(namespace, name, verdict.label, verdict.mechanism, tuple(tags), window)


def generate_family_am(seed: int, n: int, start: float = 1_700_000_000.0, step: float = 30.0) -> list[FamilyAMJob]:
    """``n`` labelled Jobs of family AM; Job ``i`` does not depend on ``n``.

    Raises:
        ValueError: ``n`` negative or ``step`` not positive.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, not {n}")
    if step <= 0:
        raise ValueError(f"step must be > 0, not {step}")
    return [make_job(seed, i, start, step) for i in range(n)]
