"""The family's interface: ``generate_family_z`` and the labelled Job it returns."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.verdict import CLASSES, Bottleneck, Mechanism
from bottleneck_operator.contract.window import DataQuality, JobWindow, families_and_coverage
from bottleneck_operator_dev.familyz.exporters import pod_signals
from bottleneck_operator_dev.familyz.label import Profile, profile
from bottleneck_operator_dev.familyz.loop import simulate, telemetry
from bottleneck_operator_dev.familyz.workload import LEAD_S, Plan, draw

# Draws per round for a Job whose loop has not yet shown its intended class; after the last round
# the last draw's own label is taken whatever it is.
ROUNDS = (1, 3, 8)
BATCH = 1024  # plans simulated together (lanes are independent: the batch does not change a Job)


@dataclass(frozen=True)
class FamilyZJob:
    """One labelled Job window.

    Attributes:
        namespace, name: the Job's.
        label: the class the main thread spent most of the window on.
        mechanism: how that class held it (a ``Mechanism`` value).
        tags: what was drawn (GPU, layout, model, field set, hard case, neighbours ...).
        window: the telemetry, as the data layer hands it to the analysis.
    """

    namespace: str
    name: str
    label: Bottleneck
    mechanism: str
    tags: tuple[str, ...]
    window: JobWindow


def intents(seed: int, n: int) -> list[Bottleneck]:
    """Each Job's intended class: every block of five holds each class once, in a shuffled order.

    Block ``b`` is shuffled by its own generator, so Job ``i``'s class does not depend on ``n``,
    and the classes come in equal numbers as near as ``n`` allows.
    """
    out: list[Bottleneck] = []
    for block in range((n + len(CLASSES) - 1) // len(CLASSES)):
        order = np.random.default_rng((seed, 1_000_003, block)).permutation(len(CLASSES))
        out.extend(CLASSES[int(i)] for i in order)
    return out[:n]


def _simulate(plans: list[Plan]) -> list[tuple[dict[str, np.ndarray], dict[str, np.ndarray], Profile]]:
    """Run a batch of plans in one pass of the loop; each plan's slice of the result."""
    ticks = max(p.ticks for p in plans)
    sizes = [p.pods for p in plans]
    groups = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    lanes = {k: np.concatenate([p.lanes[k] for p in plans]) for k in plans[0].lanes}

    def pad(a: np.ndarray) -> np.ndarray:
        return np.concatenate([a, np.repeat(a[-1:], ticks - a.shape[0], axis=0)]) if a.shape[0] < ticks else a

    noise = {k: np.concatenate([pad(p.noise[k]) for p in plans], axis=1) for k in plans[0].noise}
    window = np.array(
        [[LEAD_S, LEAD_S + int(np.ceil((p.samples - 1) * p.step))] for p in plans for _ in range(p.pods)],
        dtype=np.int64,
    ).T
    truth, blocked = simulate(lanes, noise, groups, ticks, window)
    out = []
    for p, lo in zip(plans, groups, strict=True):
        hi = int(lo) + p.pods
        mine = {k: v[: p.ticks, lo:hi] for k, v in truth.items()}
        out.append((mine, {k: v[lo:hi] for k, v in lanes.items()}, profile(blocked[lo:hi])))
    return out


def generate_family_z(seed: int, n: int, *, start: float, step: float = 30.0) -> list[FamilyZJob]:
    """Family Z: ``n`` labelled Job windows from the closed loop of a node's controllers.

    Args:
        seed: the family's seed; Job ``i`` draws from ``numpy.random.default_rng((seed, i))``.
        n: how many Jobs (>= 0).
        start: every window's first timestamp, unix seconds.
        step: seconds between the window's timestamps (> 0).

    Raises:
        ValueError: ``n`` negative or ``step`` not positive.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if not step > 0:
        raise ValueError(f"step must be > 0 seconds, got {step}")
    wanted = intents(seed, n)
    rngs = [np.random.default_rng((seed, i)) for i in range(n)]
    done: dict[int, tuple[Plan, dict[str, np.ndarray], Profile]] = {}
    pending = list(range(n))
    for r, draws in enumerate(ROUNDS):
        # each pending Job's next draws, in the order its generator makes them
        cands = [(i, draw(rngs[i], wanted[i], i, start, step)) for i in pending for _ in range(draws)]
        results: list[tuple[dict[str, np.ndarray], dict[str, np.ndarray], Profile]] = []
        for b in range(0, len(cands), BATCH):
            results += _simulate([plan for _, plan in cands[b : b + BATCH]])
        for (i, plan), (state, consts, prof) in zip(cands, results, strict=True):
            if i in done:
                continue
            if prof.label is wanted[i] or (r == len(ROUNDS) - 1 and plan is [c for j, c in cands if j == i][-1]):
                done[i] = (plan, telemetry(state, consts), prof)
        pending = [i for i in pending if i not in done]
        if not pending:
            break
    return [_job(rngs[i], *done[i], start=start) for i in range(n)]


def _job(
    rng: np.random.Generator, plan: Plan, truth: dict[str, np.ndarray], prof: Profile, *, start: float
) -> FamilyZJob:
    at = start + plan.step * np.arange(plan.samples, dtype=np.float64)
    t0 = start - LEAD_S
    pods = tuple(pod_signals(rng, plan, truth, k, t0, at) for k in range(plan.pods))
    families, coverage = families_and_coverage(pods)
    notes = () if plan.view.fields != "dev" else ("no PROF fields",)
    quality = DataQuality(
        families=families, coverage=coverage, scrape_interval=plan.view.intervals["dcgm"], notes=notes
    )
    window = JobWindow(
        namespace=plan.namespace,
        job=plan.name,
        start=float(at[0]),
        end=float(at[-1]),
        step=plan.step,
        timestamps=at,
        pods=pods,
        quality=quality,
    )
    tags = (*plan.tags, f"second-to-first:{prof.runner_up_ratio:.2f}")
    return FamilyZJob(plan.namespace, plan.name, prof.label, Mechanism(prof.mechanism).value, tags, window)
