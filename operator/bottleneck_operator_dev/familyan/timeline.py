"""How a run changes over the observed window: phases, periodic pauses, and events part-way.

A window can open on the Job's start (model load, then a first epoch read cold from storage), or
later. Evaluation passes and checkpoints recur; a schedule change (batch ramp, longer sequences),
a neighbour arriving on a shared node or a node turning straggler can happen part-way. The window is
cut into intervals, each with one combination of these: a regime.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator_dev.familyan.workloads import _u


@dataclass(frozen=True)
class Regime:
    """One combination of phase and events.

    Attributes:
        phase: "startup" (model load, GPU idle), "warmup" (first epoch, cold cache), "steady",
            "eval" (forward-only passes) or "checkpoint" (a synchronous write).
        scale: per-step work relative to the start (a batch ramp or longer sequences double it).
        neighbour: another workload shares node 0 from now on.
        straggler: one node's GPUs run slowed (thermal slowdown) from now on.
    """

    phase: str
    scale: float = 1.0
    neighbour: bool = False
    straggler: bool = False


@dataclass(frozen=True)
class Timeline:
    """Change points and the regime after each, over [t0, t1].

    Attributes:
        bounds: interval starts, increasing, the first at t0.
        regimes: the regime of each interval.
        t1: end of the last interval.
        tags: what was drawn.
        straggler_node: the slowed node's index (0 when none).
        straggler_clock: its clock factor.
    """

    bounds: tuple[float, ...]
    regimes: tuple[Regime, ...]
    t1: float
    tags: tuple[str, ...]
    straggler_node: int = 0
    straggler_clock: float = 1.0

    def durations(self) -> list[float]:
        edges = [*self.bounds, self.t1]
        return [edges[k + 1] - edges[k] for k in range(len(self.regimes))]


@dataclass(frozen=True)
class RunFacts:
    """What the timeline needs from the Job: its nominal step, and how long pauses and epochs take.

    Attributes:
        step: nominal steady step time, s.
        cold_epoch: seconds of the first epoch while the cache is cold (inf: no warm state to reach).
        ckpt: seconds one checkpoint write takes.
        nodes: nodes of the Job.
    """

    step: float
    cold_epoch: float
    ckpt: float
    nodes: int


def _periodic(rng: np.random.Generator, t0: float, t1: float, every: float, length: float) -> list[tuple[float, float]]:
    first = t0 + _u(rng, 0.0, every)
    return [(s, min(s + length, t1)) for s in np.arange(first, t1, every)]


@dataclass(frozen=True)
class _Events:
    """When each phase and event happens (None: not in this run)."""

    start: float | None
    load: float
    cold_end: float
    ckpts: list[tuple[float, float]]
    evals: list[tuple[float, float]]
    change: float | None
    neighbour: float | None
    straggler: float | None

    def points(self, t0: float, t1: float) -> list[float]:
        """Every change point inside (t0, t1), with t0."""
        found = {t0}
        loaded = None if self.start is None else self.start + self.load
        for v in (self.start, loaded, self.change, self.neighbour, self.straggler, self.cold_end):
            if v is not None and t0 < v < t1:
                found.add(v)
        for a, b in [*self.ckpts, *self.evals]:
            found.update(x for x in (a, b) if t0 < x < t1)
        return sorted(found)


def _after(t: float, at: float | None) -> bool:
    return at is not None and t >= at


def _events(rng: np.random.Generator, facts: RunFacts, intent: Bottleneck, t0: float, t1: float) -> _Events:
    """Draw the phases' times."""
    span = t1 - t0
    start = t0 + _u(rng, 0.0, 0.05) * span if rng.random() < 0.3 else None
    load = _u(rng, 60, 300)
    if not np.isfinite(facts.cold_epoch):  # nothing read from storage: no cold epoch to see
        cold_end = t0 - 1.0
    elif start is not None:
        cold_end = start + load + facts.cold_epoch
    else:  # the window opens somewhere in the run: maybe still in the first epoch
        cold_end = t0 + facts.cold_epoch - _u(rng, 0, 5) * facts.cold_epoch
    ckpt_every = _u(rng, 300, 900) if (intent is Bottleneck.IO and rng.random() < 0.3) else _u(rng, 900, 3600)
    eval_every = _u(rng, 900, 3600)
    eval_len = eval_every * (_u(rng, 0.25, 0.5) if rng.random() < 0.1 else _u(rng, 0.02, 0.1))
    return _Events(
        start=start,
        load=load,
        cold_end=cold_end,
        ckpts=_periodic(rng, t0, t1, ckpt_every, facts.ckpt) if rng.random() < 0.8 else [],
        evals=_periodic(rng, t0, t1, eval_every, eval_len) if rng.random() < 0.7 else [],
        change=t0 + _u(rng, 0.2, 0.8) * span if rng.random() < 0.25 else None,
        neighbour=t0 + _u(rng, 0.05, 0.7) * span if rng.random() < 0.25 else None,
        straggler=t0 + _u(rng, 0.1, 0.7) * span if facts.nodes > 1 and rng.random() < 0.2 else None,
    )


def _regime_at(t: float, ev: _Events) -> Regime:
    scale = 2.0 if _after(t, ev.change) else 1.0
    if ev.start is not None and t < ev.start + ev.load:
        phase = "startup"
    elif any(a <= t < b for a, b in ev.ckpts):
        phase = "checkpoint"
    elif any(a <= t < b for a, b in ev.evals):
        phase = "eval"
    else:
        phase = "warmup" if t < ev.cold_end else "steady"
    return Regime(phase, scale, _after(t, ev.neighbour), _after(t, ev.straggler))


def draw_timeline(rng: np.random.Generator, facts: RunFacts, intent: Bottleneck, t0: float, t1: float) -> Timeline:
    """The window's regimes from t0 (the earliest sample any rate needs) to t1 (the window's end)."""
    ev = _events(rng, facts, intent, t0, t1)
    bounds = ev.points(t0, t1)
    regimes = [_regime_at(b, ev) for b in bounds]
    merged_b, merged_r = [bounds[0]], [regimes[0]]
    for b, r in zip(bounds[1:], regimes[1:], strict=True):
        if r != merged_r[-1]:
            merged_b.append(b)
            merged_r.append(r)
    tags = tuple(
        name
        for name, present in (
            ("phase:job-start", ev.start is not None),
            ("phase:checkpoints", bool(ev.ckpts)),
            ("phase:eval", bool(ev.evals)),
            ("phase:schedule-change", ev.change is not None),
            ("neighbour", ev.neighbour is not None),
            ("straggler", ev.straggler is not None),
        )
        if present
    )
    node = int(rng.integers(0, max(facts.nodes, 1)))
    return Timeline(tuple(merged_b), tuple(merged_r), t1, tags, node, _u(rng, 0.55, 0.85))
