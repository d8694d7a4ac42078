"""Family X: Jobs whose steps are task graphs, labelled by critical-path attribution.

For each Job: a target class (five per block of five Jobs, shuffled), a workload and cluster drawn
leaning towards it, its phases (a neighbour arriving, a cache warming) and pauses (checkpoints, an
evaluation). Each phase's step is list-scheduled; the label is the class holding the largest share
of the critical path summed over the window's training steps. A draw whose label is not the target
is drawn again with the lean pushed harder, so the label is always what the schedule says, never
what was aimed at. The exporters then read the schedule (:mod:`.rates`, :mod:`.exporters`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from bottleneck_operator.contract.signals import Family
from bottleneck_operator.contract.verdict import CLASSES, MECHANISMS, Bottleneck, Mechanism
from bottleneck_operator.contract.window import DataQuality, JobWindow, PodWindow, families_and_coverage
from bottleneck_operator_dev.familyx.costs import rank_costs
from bottleneck_operator_dev.familyx.exporters import Scrape, family_signals, read_exporter, timeline
from bottleneck_operator_dev.familyx.graph import KEY_CLASS, Schedule, schedule
from bottleneck_operator_dev.familyx.rates import Node, pause_rates, train_rates
from bottleneck_operator_dev.familyx.workload import LEANS, Config, draw_config

LEAD = 360.0  # seconds of history before the window: the longest rate() range looks this far back
ATTEMPTS = 24


@dataclass(frozen=True)
class FamilyXJob:
    """One labelled Job window of family X."""

    namespace: str
    name: str
    label: Bottleneck
    mechanism: str
    tags: tuple[str, ...]
    window: JobWindow


@dataclass(frozen=True)
class Phase:
    """A stretch of the window with one configuration: [start, end) seconds from the window's start."""

    start: float
    end: float
    cfg: Config


@dataclass(frozen=True)
class Account:
    """The critical path's seconds per key over the window's training steps, and what it makes."""

    seconds: dict[str, float]
    label: Bottleneck
    mechanism: Mechanism
    runner_up: float  # the second class's share of the top class's


def account(phases: list[Phase], pauses: list[tuple[float, float]], schedules: list[Schedule]) -> Account:
    """Sum each phase's per-step critical path over its training time (pauses are not steps)."""
    seconds: dict[str, float] = {}
    for ph, sched in zip(phases, schedules, strict=True):
        paused = sum(max(0.0, min(b, ph.end) - max(a, max(ph.start, 0.0))) for a, b in pauses)
        train = max(0.0, ph.end - max(ph.start, 0.0) - paused)
        steps = train / sched.step_time
        for key, s in sched.critical.items():
            seconds[key] = seconds.get(key, 0.0) + s * steps
    by_class: dict[Bottleneck, float] = dict.fromkeys(CLASSES, 0.0)
    for key, s in seconds.items():
        by_class[KEY_CLASS[key][0]] += s
    ordered = sorted(by_class.items(), key=lambda kv: -kv[1])
    label = ordered[0][0]
    keys = [k for k in seconds if KEY_CLASS[k][0] is label]
    top = max(keys, key=lambda k: seconds[k])
    mechanism = KEY_CLASS[top][1]
    if label is Bottleneck.CPU:
        mechanism = phases[-1].cfg.cpu_mechanism
    return Account(seconds, label, mechanism, ordered[1][1] / max(ordered[0][1], 1e-12))


def _phases(base: Config, duration: float, rng: np.random.Generator) -> tuple[list[Phase], list[str]]:
    """The window's phases: one, or a change part-way (a neighbour arrives, a cache warms)."""
    u = rng.random()
    cut = float(rng.uniform(0.3, 0.7)) * duration
    if u < 0.15:
        busier = replace(base, neighbour_cores=(min(base.cores - 2.0, base.cores * 0.8), *base.neighbour_cores[1:]))
        return [Phase(-LEAD, cut, base), Phase(cut, duration, busier)], ["neighbour-arrives"]
    if u < 0.25:
        cold = replace(base, cache_hit=0.0)
        warm = replace(base, cache_hit=max(base.cache_hit, 0.9))
        return [Phase(-LEAD, cut, cold), Phase(cut, duration, warm)], ["cache-warming"]
    if u < 0.32 and not base.storage.local:
        slower = replace(base, storage_share=base.storage_share * 0.5)
        return [Phase(-LEAD, cut, base), Phase(cut, duration, slower)], ["storage-tenant-arrives"]
    return [Phase(-LEAD, duration, base)], []


def _pauses(duration: float, rng: np.random.Generator) -> tuple[list[tuple[float, float, str]], list[str]]:
    pauses: list[tuple[float, float, str]] = []
    tags = []
    if rng.random() < 0.4:
        every = float(rng.uniform(600, 1800))
        length = float(rng.uniform(20, 120))
        t = float(rng.uniform(0, every))
        while t < duration:
            pauses.append((t, t + length, "checkpoint"))
            t += every
        tags.append("checkpoints")
    if rng.random() < 0.15:
        t = float(rng.uniform(0.2, 0.8)) * duration
        pauses.append((t, t + float(rng.uniform(60, 300)), "evaluation"))
        tags.append("evaluation")
    return pauses, tags


def draw_job(
    rng: np.random.Generator, target: Bottleneck, memory_lean: str, duration: float
) -> tuple[list[Phase], list[Schedule], list[tuple[float, float, str]], Account, list[str]]:
    """Draw until the schedule's label is ``target`` (pushing the lean harder each time)."""
    leans = LEANS[target]
    lean = memory_lean if target is Bottleneck.MEMORY else leans[int(rng.integers(len(leans)))]
    push = math.exp(float(rng.uniform(0.0, math.log(4.0))))
    pauses, pause_tags = _pauses(duration, rng)
    spans = [(a, b) for a, b, _ in pauses]
    found = None
    for attempt in range(ATTEMPTS):
        if attempt and attempt % 8 == 0 and target is not Bottleneck.MEMORY:
            lean = leans[int(rng.integers(len(leans)))]
        base = draw_config(rng, lean, push)
        phases, tags = _phases(base, duration, rng)
        schedules = [schedule(rank_costs(ph.cfg), account=False) for ph in phases]
        acc = account(phases, spans, schedules)
        want = {"hostmem": Mechanism.HOST_MEMORY_PRESSURE, "hbm": Mechanism.HBM_BANDWIDTH}.get(lean)
        found = (phases, acc, tags, lean)
        if acc.label is target and (want is None or acc.mechanism is want):
            break
        push *= 1.6
    assert found is not None
    phases, acc, tags, lean = found
    schedules = [schedule(rank_costs(ph.cfg)) for ph in phases]
    return phases, schedules, pauses, acc, [lean, *tags, *pause_tags]


def _families(cfg: Config, rng: np.random.Generator) -> tuple[frozenset[Family], str]:
    """Which exporters and field sets this cluster has."""
    fields = str(rng.choice(("dev", "default", "default", "full", "full")))
    fams = {Family.DCGM_DEV}
    if fields != "dev":
        fams.add(Family.DCGM_PROF)
        if rng.random() < 0.4:
            fams.add(Family.DCGM_POWER_CLOCKS)
    if fields == "full":
        fams |= {Family.DCGM_PROF_SM, Family.DCGM_PROF_NVLINK, Family.DCGM_PROF_PIPES, Family.DCGM_POWER_CLOCKS}
    if rng.random() < 0.95:
        fams.add(Family.CADVISOR)
        if cfg.cpu_limit is not None:
            fams.add(Family.CADVISOR_CFS)
    if rng.random() < 0.9 and cfg.cpu_limit is not None:
        fams.add(Family.KSM)
    if rng.random() < 0.95:
        fams.add(Family.NODE)
        if rng.random() < 0.9:
            fams.add(Family.NODE_PSI)
        if cfg.fabric.rdma and cfg.nodes > 1:
            fams.add(Family.NODE_IB)
    if rng.random() < 0.75:
        fams.add(Family.SIDECAR)
    return frozenset(fams), fields


@dataclass(frozen=True)
class _Reading:
    """How this cluster reads a Job: exporters present, their scrapes, the fine grid and the window's."""

    by_exporter: dict[str, tuple[str, ...]]
    scrapes: dict[str, Scrape]
    collect: float  # dcgm-exporter's collection interval
    grid: np.ndarray
    t_fine: np.ndarray
    step: float


def _pod(
    name: str,
    node_i: int,
    phases: list[Phase],
    schedules: list[Schedule],
    pauses: list[tuple[float, float, str]],
    r: _Reading,
    rng: np.random.Generator,
) -> PodWindow:
    """One pod (one node's share of the Job): its timeline through the phases and pauses, read by the exporters."""
    cfg0 = phases[0].cfg
    rank = min(node_i, len(cfg0.clocks) - 1) if node_i < 4 else node_i % len(cfg0.clocks)
    hog = cfg0.neighbour_mem and node_i == 0
    shared = cfg0.neighbour_cores[rank] > 0 or hog or rng.random() < 0.3
    node = Node(
        other_pods=int(rng.integers(1, 7)) if shared else 0,
        disk_read_bps=float(rng.uniform(0, 1.5e9)) if shared and rng.random() < 0.4 else 0.0,
        net_bps=float(rng.uniform(0, 2e9)) if shared else 0.0,
        mem_hog=hog,
        swap=cfg0.swap,
    )
    rel = r.t_fine - float(r.grid[0])
    dt = float(r.t_fine[1] - r.t_fine[0])
    segments: list[tuple[int, int, dict[str, float]]] = []
    step_times: list[float] = []
    for ph, sched in zip(phases, schedules, strict=True):
        values = train_rates(ph.cfg, sched, rank, node, rng)
        a = int(np.searchsorted(rel, ph.start))
        b = int(np.searchsorted(rel, ph.end)) if ph.end < rel[-1] + dt else len(rel)
        pieces = [(a, b, values)]
        for pa, pb, kind in pauses:
            lo, hi = max(int(np.searchsorted(rel, pa)), a), min(int(np.searchsorted(rel, pb)), b)
            if hi > lo:
                pieces = _split(pieces, lo, hi, pause_rates(values, kind, ph.cfg, rng))
        segments += pieces
        step_times += [sched.step_time] * len(pieces)
    names = [n for sigs in r.by_exporter.values() for n in sigs]
    caps = {"sm_clock_mhz": cfg0.gpu.max_clock, "power_w": cfg0.gpu.tdp_w * cfg0.power_ratio}
    fine = timeline(segments, names, len(r.t_fine), step_times, dt, rng, caps)
    row = {n: i for i, n in enumerate(names)}
    signals: dict[str, np.ndarray] = {}
    for exp, sigs in r.by_exporter.items():
        collect = r.collect if exp == "dcgm" else None
        rows = fine[[row[n] for n in sigs]]
        signals.update(read_exporter(rows, sigs, r.t_fine, r.scrapes[exp], r.grid, r.step, rng, dcgm_collect=collect))
    return PodWindow(
        pod=f"{name}-worker-{node_i}",
        node=f"gpu-node-{int(rng.integers(100, 999))}",
        gpu_model=cfg0.gpu.model,
        gpu_count=cfg0.gpus_per_node,
        signals=signals,
        co_located_pods=node.other_pods,
    )


def render(
    namespace: str,
    name: str,
    phases: list[Phase],
    schedules: list[Schedule],
    pauses: list[tuple[float, float, str]],
    rng: np.random.Generator,
    *,
    start: float,
    step: float,
    points: int,
) -> tuple[JobWindow, list[str]]:
    """The Job's window: every pod's signals as the data layer hands them to the analysis."""
    cfg0 = phases[0].cfg
    fams, fields = _families(cfg0, rng)
    by_exporter = family_signals(fams)
    grid = start + step * np.arange(points, dtype=np.float64)
    dt = min(5.0, step / 2)
    si = float(rng.choice((10.0, 15.0, 30.0, 30.0, 60.0)))
    scrapes = {}
    for exp in by_exporter:
        interval = si if rng.random() < 0.7 else float(rng.choice((10.0, 15.0, 30.0, 60.0)))
        restart = float(rng.uniform(start, grid[-1])) if (exp != "dcgm" and rng.random() < 0.15) else None
        jitter, miss = interval * float(rng.uniform(0.0, 0.01)), float(rng.uniform(0.0, 0.03))
        scrapes[exp] = Scrape(interval, jitter, miss, restart)
    collect = float(rng.choice((1.0, 10.0, 30.0, 30.0)))
    reading = _Reading(by_exporter, scrapes, collect, grid, np.arange(start - LEAD, grid[-1] + dt, dt), step)
    pods = [_pod(name, i, phases, schedules, pauses, reading, rng) for i in range(min(cfg0.nodes, 8))]
    families, coverage = families_and_coverage(pods)
    quality = DataQuality(
        families=families,
        coverage=coverage,
        scrape_interval=scrapes["dcgm"].interval,
        notes=("no PROF fields",) if fields == "dev" else (),
        layout={"dcgm": str(rng.choice(("exported-labels", "pod-labels"))), "node": "pod-join"},
    )
    window = JobWindow(namespace, name, float(grid[0]), float(grid[-1]), step, grid, tuple(pods), quality)
    return window, [f"fields-{fields}", f"scrape-{int(si)}s"]


def _split(
    pieces: list[tuple[int, int, dict[str, float]]], lo: int, hi: int, values: dict[str, float]
) -> list[tuple[int, int, dict[str, float]]]:
    """Cut [lo, hi) out of the pieces and put ``values`` there."""
    out = []
    for a, b, v in pieces:
        if b <= lo or a >= hi:
            out.append((a, b, v))
            continue
        if a < lo:
            out.append((a, lo, v))
        out.append((max(a, lo), min(b, hi), values))
        if b > hi:
            out.append((hi, b, v))
    return out


def generate_family_x(seed: int, n: int, *, start: float, step: float = 30.0) -> list[FamilyXJob]:
    """``n`` labelled Job windows of family X, each starting at ``start`` on a ``step`` grid.

    Job ``i`` depends only on ``(seed, i)``: classes come five to a block of five Jobs, in an order
    shuffled by the block's own generator, so any ``n`` is balanced as near as it allows.

    Raises:
        ValueError: ``n`` is negative or ``step`` is not positive.
    """
    if n < 0:
        raise ValueError(f"n must be 0 or more, not {n}")
    if not step > 0 or not math.isfinite(step):
        raise ValueError(f"step must be a positive number of seconds, not {step}")
    jobs = []
    for i in range(n):
        block = i // len(CLASSES)
        order = np.random.default_rng((seed, block, 0x5EED)).permutation(len(CLASSES))
        target = CLASSES[int(order[i % len(CLASSES)])]
        memory_lean = "hostmem" if block % 2 == 0 else "hbm"
        rng = np.random.default_rng((seed, i))
        points = int(rng.integers(60, 121))
        duration = step * (points - 1)
        phases, schedules, pauses, acc, tags = draw_job(rng, target, memory_lean, duration)
        name = f"fx-{seed}-{i:04d}"
        window, more = render("familyx", name, phases, schedules, pauses, rng, start=start, step=step, points=points)
        cfg = phases[0].cfg
        tags += [
            cfg.model.name,
            cfg.gpu.model,
            cfg.storage.kind,
            f"{cfg.nodes}x{cfg.gpus_per_node}-gpus",
            *([cfg.fabric.kind] if cfg.nodes > 1 else []),
            *(["power-capped"] if cfg.power_ratio < 1 else []),
            *(["neighbour-memory-hog"] if cfg.neighbour_mem else []),
            *(["near-tie"] if acc.runner_up > 0.7 else []),
            *more,
        ]
        assert acc.mechanism in MECHANISMS[acc.label]
        jobs.append(FamilyXJob("familyx", name, acc.label, acc.mechanism.value, tuple(tags), window))
    return jobs
