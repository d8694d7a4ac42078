"""The window's intervals, one program each, and the label their shadow prices give.

Phases change the program: a neighbour arrives on the first node, the page cache comes to hold the
dataset, a checkpoint pauses training (no program: the GPUs wait for the write), an evaluation runs a
forward-only program without all-reduce. Data-parallel ranks step together, so in each interval the Job
runs at the rate of its slowest pod, and that pod's shadow prices are the Job's.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace

import numpy as np

from bottleneck_operator.contract.verdict import MECHANISMS, Bottleneck, Mechanism

from .program import CAPACITIES, ROWS, Demand, Solution, class_elasticities, elasticities, mechanism_of, rows, solve
from .workload import Setup


@dataclass(frozen=True)
class PodState:
    """One pod in one interval: its program, its optimum, and the rate the Job actually runs at."""

    demand: Demand
    caps: dict[str, float]
    solution: Solution
    x: float  # samples/s per GPU the Job runs at (the slowest pod's optimum)
    g: float
    neighbour: bool


@dataclass(frozen=True)
class Phase:
    """An interval of the window (seconds from the window's start)."""

    t0: float
    t1: float
    kind: str  # "train", "eval" or "checkpoint"
    pods: tuple[PodState, ...]  # empty for a checkpoint
    elasticity: dict[str, float]  # the limiting pod's, by capacity


@dataclass(frozen=True)
class Steady:
    """The window's phases and the label."""

    phases: tuple[Phase, ...]
    label: Bottleneck
    mechanism: Mechanism
    by_class: dict[Bottleneck, float]


def _pauses(rng: np.random.Generator, lead: float, duration: float) -> list[tuple[float, float, str]]:
    out: list[tuple[float, float, str]] = []
    if rng.random() < 0.5:  # periodic checkpoints
        period, length = float(rng.uniform(600, 1800)), float(rng.uniform(20, 120))
        t = float(rng.uniform(-lead, period))
        while t < duration:
            out.append((t, t + length, "checkpoint"))
            t += period
    if rng.random() < 0.3:  # an evaluation pass
        t = float(rng.uniform(0.2, 0.8)) * duration
        out.append((t, t + float(rng.uniform(60, 300)), "eval"))
    return out


def _eval_demand(d: Demand) -> Demand:
    # forward only: a third of the work, no gradients to all-reduce
    return replace(
        d, flops=d.flops / 3, hbm_bytes=d.hbm_bytes / 3, launch=d.launch / 3, ar_intra=0.0, ar_net=0.0, msgs=0.0
    )


def _pods(setup: Setup, kind: str, neighbour_on: bool, warm: bool) -> tuple[PodState, ...]:
    demand = setup.demand if kind == "train" else _eval_demand(setup.demand)
    if warm:
        demand = replace(demand, hit=0.97)
    states: list[tuple[Demand, dict[str, float], Solution, bool]] = []
    cache: dict[bool, tuple[dict[str, float], Solution]] = {}
    for p in range(setup.nodes):
        nb = neighbour_on and p == 0
        if nb not in cache:
            caps = setup.caps(neighbour=nb)
            cache[nb] = (caps, solve(*rows(demand, caps)))
        caps, sol = cache[nb]
        states.append((demand, caps, sol, nb))
    x = min(s[2].x for s in states)
    return tuple(PodState(d, c, s, x, s.g * x / s.x if s.x > 0 else 0.0, nb) for d, c, s, nb in states)


def solve_window(setup: Setup, rng: np.random.Generator, lead: float, duration: float) -> Steady:
    """Cut the window into intervals, solve each, and label the Job by its summed shadow prices."""
    pauses = _pauses(rng, lead, duration)
    cuts = {-lead, duration}
    for t in (setup.neighbour_from, setup.warm_at):
        if -lead < t < duration:
            cuts.add(t)
    for a, b, _ in pauses:
        cuts.update(t for t in (a, b) if -lead < t < duration)
    edges = sorted(cuts)
    phases: list[Phase] = []
    memo: dict[tuple[str, bool, bool], tuple[tuple[PodState, ...], dict[str, float]]] = {}
    for t0, t1 in itertools.pairwise(edges):
        mid = 0.5 * (t0 + t1)
        kind = "train"
        for a, b, k in pauses:
            if a <= mid < b:
                kind = k
        if kind == "checkpoint":
            phases.append(Phase(t0, t1, kind, (), {}))
            continue
        key = (kind, mid >= setup.neighbour_from, mid >= setup.warm_at)
        if key not in memo:
            pods = _pods(setup, *key)
            slow = min(pods, key=lambda s: s.solution.x)
            memo[key] = (pods, elasticities(slow.demand, slow.caps, slow.solution))
        pods, e = memo[key]
        phases.append(Phase(t0, t1, kind, pods, e))
    return _label(setup, phases, duration)


def _label(setup: Setup, phases: list[Phase], duration: float) -> Steady:
    by_class = dict.fromkeys(CAPACITIES.values(), 0.0)
    by_mech: dict[Mechanism, float] = {}
    for ph in phases:
        weight = max(0.0, min(ph.t1, duration) - max(ph.t0, 0.0))
        if weight <= 0 or not ph.pods:
            continue
        slow = min(ph.pods, key=lambda s: s.solution.x)
        quota_bound = setup.cpu_quota is not None and setup.cpu_quota < setup.node_cpus - (
            setup.neighbour_cores if slow.neighbour else 0.0
        )
        for cls, v in class_elasticities(slow.demand, slow.caps, ph.elasticity).items():
            by_class[cls] += weight * v
        for name, v in ph.elasticity.items():
            if name == "nic":  # shared by storage reads and socket collectives: split by what it carries
                io_share = class_elasticities(slow.demand, slow.caps, {"nic": 1.0})[Bottleneck.IO]
                parts = [(Mechanism.NETWORK_STORAGE, io_share), (Mechanism.NETWORK, 1.0 - io_share)]
            else:
                parts = [(mechanism_of(name, slow.demand, quota_bound), 1.0)]
            for mech, share in parts:
                by_mech[mech] = by_mech.get(mech, 0.0) + weight * v * share
    label = max(by_class, key=lambda c: (by_class[c], -list(by_class).index(c)))
    mechs = MECHANISMS[label]
    mechanism = max(mechs, key=lambda m: by_mech.get(m, 0.0))
    total = sum(by_class.values())
    norm = {c: (v / total if total > 0 else 0.0) for c, v in by_class.items()}
    return Steady(tuple(phases), label, mechanism, norm)


def runner_up_ratio(by_class: dict[Bottleneck, float]) -> float:
    """The second class's summed elasticity over the first's (1: a tie, 0: nothing else matters)."""
    ranked = sorted(by_class.values(), reverse=True)
    return ranked[1] / ranked[0] if ranked[0] > 0 and not math.isnan(ranked[0]) else 0.0


def second_utilisation(steady: Steady) -> float:
    """In the longest training interval, the slowest pod's highest utilisation among the rows that do not bind.

    Near 1, a second resource is almost at its limit though its shadow price is zero: the telemetry
    shows two saturated resources and only the program says which one bounds the rate.
    """
    train = [ph for ph in steady.phases if ph.kind == "train" and ph.pods]
    if not train:
        return 0.0
    ph = max(train, key=lambda p: p.t1 - p.t0)
    slow = min(ph.pods, key=lambda s: s.solution.x)
    sol = slow.solution
    _, b = rows(slow.demand, slow.caps)
    with np.errstate(divide="ignore", invalid="ignore"):
        util = np.where(b > 0, sol.usage / b, 0.0)
    util[sol.duals > 0] = 0.0
    util[ROWS.index("stream")] = 0.0  # the GPU's time is the healthy limit, not a rival
    return float(np.max(util[:-1]))
