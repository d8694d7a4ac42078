"""The label: the stage whose removal shortens the timeline most, and that stage's class.

Each stage is removed in turn (its durations set to zero) and the same steps are re-run with the
same draws, so the prefetch queue and the collective's overlap decide how much of a stage's time
the job really waits on: a slow reader hidden behind a slower GPU saves nothing when removed.
"""

from __future__ import annotations

from dataclasses import dataclass

from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator_dev.familys.timeline import STAGE_CLASS, STAGES, Costs, simulate


@dataclass(frozen=True)
class Label:
    """What the removal experiments found.

    Attributes:
        stage: the stage whose removal saves most.
        bottleneck: its class.
        savings: stage -> share of the wall time its removal saves.
        runner_up: the best stage of another class, or None when no other stage saves anything.
        margin: (best saving - runner-up's) / best saving; 1 when nothing else saves time.
    """

    stage: str
    bottleneck: Bottleneck
    savings: dict[str, float]
    runner_up: str | None
    margin: float


def _bound(costs: Costs, stage: str) -> float:
    """The most a stage's removal can save: all its time, on every pod (a critical path holds each interval once)."""
    if stage == "collective":
        return float(costs.collective.sum())
    fields = {"host_stall": ("worker_stall", "trainer_stall"), "hbm": ("hbm", "optimizer")}.get(stage, (stage,))
    return sum(float(getattr(p, f).sum()) for p in costs.pods for f in fields)


def label_of(costs: Costs) -> Label:
    """Run the removal experiments on ``costs`` and name the binding stage.

    Ties (two stages whose removal saves the same time) go to the stage listed first in
    :data:`STAGES`, so the label never depends on dict order or float noise below a microsecond.
    """
    base = simulate(costs).wall
    savings = dict.fromkeys(STAGES, 0.0)
    # largest possible saving first; a stage that cannot beat the best so far is not re-run
    # (the best two are always run: the label and its runner-up)
    found: list[float] = []
    for stage in sorted(STAGES, key=lambda s: -_bound(costs, s)):
        bound = _bound(costs, stage)
        second = sorted(found)[-2] if len(found) > 1 else 0.0
        if bound <= second or bound <= 1e-12:
            continue
        saved = max(0.0, base - simulate(costs, stage).wall) / base if base > 0 else 0.0
        savings[stage] = saved
        found.append(saved * base)
    best = max(STAGES, key=lambda s: (round(savings[s], 6), -STAGES.index(s)))
    cls = STAGE_CLASS[best]
    others = [s for s in STAGES if STAGE_CLASS[s] is not cls and savings[s] > 0]
    runner = max(others, key=lambda s: savings[s]) if others else None
    top = savings[best]
    margin = 1.0 if runner is None or top <= 0 else (top - savings[runner]) / top
    return Label(best, cls, savings, runner, margin)
