"""Family AN: one labelled window per Job, from a workload on a cluster over a run that changes in time.

Job ``i`` of a seed draws everything from ``numpy.random.default_rng((seed, i))``; its intent (the
class its draws lean towards) is a permutation of the five classes drawn per block of five Jobs, so a
Job never depends on ``n``. The label is the counterfactual of stages.py, never the intent.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.sampling import rate_range
from bottleneck_operator.contract.verdict import CLASSES, Bottleneck, Mechanism
from bottleneck_operator.contract.window import JobWindow
from bottleneck_operator_dev.familyan.activity import QUANTITIES, regime_activity
from bottleneck_operator_dev.familyan.exporters import GRID, Scrapes
from bottleneck_operator_dev.familyan.physics import Plan
from bottleneck_operator_dev.familyan.plan import RegimeStages, draw_plan, regime_stages, run_facts
from bottleneck_operator_dev.familyan.stages import Regime as StageRegime
from bottleneck_operator_dev.familyan.stages import is_close_call, label_of, mechanism_of
from bottleneck_operator_dev.familyan.timeline import Timeline, draw_timeline
from bottleneck_operator_dev.familyan.window import assemble

ATTEMPTS = 6  # draws tried until the counterfactual agrees with the intent; the last one stands otherwise
MIN_SCRAPES = 20  # a window shorter than this many samples at its interval is too short to judge


@dataclass(frozen=True)
class FamilyANJob:
    """One labelled Job of family AN.

    Attributes:
        namespace: the Job's namespace.
        name: the Job's name.
        label: the class the counterfactual names (never Unknown).
        mechanism: how it limits the Job (one of ``MECHANISMS[label]``).
        tags: what was drawn, plus ``too-short``, ``hard``, ``warmup``, ``checkpoint-heavy``, ``eval-heavy``.
        window: the telemetry, one PodWindow per pod.
    """

    namespace: str
    name: str
    label: Bottleneck
    mechanism: Mechanism
    tags: tuple[str, ...]
    window: JobWindow


@dataclass(frozen=True)
class Built:
    """A Job with what made it, for tests: the raw exporter scrapes and every class's speed-up."""

    job: FamilyANJob
    scrapes: tuple[Scrapes, ...]
    gains: dict[Bottleneck, float]
    intent: Bottleneck


def intent_of(seed: int, i: int) -> Bottleneck:
    """The class Job ``i``'s draws lean towards: a permutation of the classes per block of five."""
    perm = np.random.default_rng((seed, i // 5, 5)).permutation(len(CLASSES))
    return CLASSES[int(perm[i % 5])]


def _window_length(rng: np.random.Generator, step: float) -> int:
    """Samples in the window: mostly 25-120 intervals of a minute or the step, a few (about 5 %) too short.

    A short window holds at most 14 steps, so it is short at any scrape interval; a long one holds at
    least 25 of the longest drawn interval (60 s), so it is long at any.
    """
    if rng.random() < 0.05:
        return int(rng.integers(5, 15)) + 1
    return math.ceil(int(rng.integers(25, 121)) * max(step, 60.0) / step) + 1


def _in_window(tl: Timeline, rs: RegimeStages, start: float, end: float) -> list[StageRegime]:
    """Each regime's seconds inside [start, end], with its pods' stage times."""
    edges = [*tl.bounds, tl.t1]
    out: list[StageRegime] = []
    for k, pods in enumerate(rs.pods):
        dur = min(edges[k + 1], end) - max(edges[k], start)
        if dur > 0:
            out.append((dur, pods))
    return out


def _phase_tags(tl: Timeline, start: float, end: float) -> tuple[str, ...]:
    """Tags for windows mostly made of something other than steady training."""
    edges = [*tl.bounds, tl.t1]
    share: dict[str, float] = {}
    for k, r in enumerate(tl.regimes):
        dur = max(0.0, min(edges[k + 1], end) - max(edges[k], start))
        share[r.phase] = share.get(r.phase, 0.0) + dur / (end - start)
    tags = []
    if share.get("warmup", 0.0) + share.get("startup", 0.0) > 0.5:
        tags.append("warmup")
    if share.get("checkpoint", 0.0) > 0.2:
        tags.append("checkpoint-heavy")
    if share.get("eval", 0.0) > 0.2:
        tags.append("eval-heavy")
    return tuple(tags)


def _draw(
    rng: np.random.Generator, intent: Bottleneck, t0: float, end: float, start: float
) -> tuple[Plan, Timeline, RegimeStages, list[StageRegime]]:
    for _ in range(ATTEMPTS):
        plan = draw_plan(rng, intent)
        facts = run_facts(plan)
        tl = draw_timeline(rng, facts, intent, t0, end)
        rs = regime_stages(plan, tl, facts)
        regimes = _in_window(tl, rs, start, end)
        if label_of(regimes)[0] is intent:
            break
    return plan, tl, rs, regimes


def build(seed: int, i: int, start: float = 1_700_000_000.0, step: float = 30.0) -> Built:
    """Job ``i`` of ``seed``, with its raw scrapes."""
    rng = np.random.default_rng((seed, i))
    intent = intent_of(seed, i)
    length = _window_length(rng, step)
    end = start + (length - 1) * step
    lookback = rate_range(step, 60.0) + 120.0
    t0 = math.floor((start - lookback) / GRID) * GRID
    plan, tl, rs, regimes = _draw(rng, intent, t0, end, start)
    label, gains = label_of(regimes)
    mechanism = mechanism_of(label, regimes)
    act = np.array(
        [
            [[regime_activity(plan, r, st, rs.steps[k], node)[q] for q in QUANTITIES] for node, st in enumerate(pods)]
            for k, (r, pods) in enumerate(zip(tl.regimes, rs.pods, strict=True))
        ]
    )
    window, scrapes, extra = assemble(seed, i, plan, tl, rs, act, rng, start, step, length)
    unit = max(step, plan.cluster.scrape["dcgm"])
    tags = [f"intent:{intent.value}", f"workload:{plan.workload.kind}", *plan.workload.tags, *plan.cluster.tags]
    tags += [*tl.tags, *extra, *_phase_tags(tl, start, end)]
    if (end - start) / unit < MIN_SCRAPES:
        tags.append("too-short")
    if is_close_call(gains):
        tags.append("hard")
    job = FamilyANJob(window.namespace, window.job, label, mechanism, tuple(tags), window)
    return Built(job, scrapes, gains, intent)


def generate_family_an(seed: int, n: int, start: float = 1_700_000_000.0, step: float = 30.0) -> list[FamilyANJob]:
    """``n`` labelled Jobs of family AN.

    Args:
        seed: the family's seed.
        n: how many Jobs (Job ``i`` is the same whatever ``n``).
        start: the windows' start, unix seconds.
        step: seconds between the windows' timestamps.

    Raises:
        ValueError: ``n`` negative or ``step`` not positive.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, not {n}")
    if not step > 0:
        raise ValueError(f"step must be > 0, not {step}")
    return [build(seed, i, start, step).job for i in range(n)]
