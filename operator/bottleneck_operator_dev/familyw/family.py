"""The family's entry point: ``generate_family_w(seed, n, start=..., step=...)``."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.sampling import gauge_window, rate_range
from bottleneck_operator.contract.signals import Family
from bottleneck_operator.contract.verdict import CLASSES, Bottleneck
from bottleneck_operator.contract.window import DataQuality, JobWindow, PodWindow, SignalBlock, families_and_coverage
from bottleneck_operator_dev.familyw.exporters import draw_cluster, sample
from bottleneck_operator_dev.familyw.label import Outcome, counterfactuals
from bottleneck_operator_dev.familyw.model import JobPlan
from bottleneck_operator_dev.familyw.plan import draw_base, finish
from bottleneck_operator_dev.familyw.truths import truths

ROUNDS = (1, 2, 3)  # attempts drawn per round; each attempt squeezes the intended resource by another 30 %
FRESH_FROM = 3  # attempts from this one on start from a fresh draw of the Job (hardware, workload, ...)
NAMESPACES = ("ml-vision", "ml-speech", "nlp", "recsys", "research", "platform-ml", "team-a", "llm-pretrain")


@dataclass(frozen=True)
class FamilyWJob:
    """One labelled Job window of family W.

    Attributes:
        namespace: the Job's namespace.
        name: the Job's name (says nothing about its class).
        label: the class whose doubled capacity raised the Job's steps per second most.
        mechanism: the contract's mechanism within that class.
        tags: how the Job was drawn (hardware, workload, conditions, gains), for breakdowns.
        window: the telemetry as the data layer would hand it to the analysis.
    """

    namespace: str
    name: str
    label: Bottleneck
    mechanism: str
    tags: tuple[str, ...]
    window: JobWindow


def _targets(seed: int, n: int) -> list[tuple[Bottleneck, str]]:
    """Each Job's intended class: the five classes once per block of five, in a block-shuffled order.

    A block's order depends only on (seed, block), so Job ``i``'s class does not depend on ``n``;
    Memory Jobs alternate between its two mechanisms from block to block.
    """
    out = []
    for i in range(n):
        block = i // len(CLASSES)
        order = np.random.default_rng((seed, block, 0x5757)).permutation(len(CLASSES))
        memory = "hbm" if block % 2 == 0 else "memory"
        out.append((CLASSES[int(order[i % len(CLASSES)])], memory))
    return out


def _attempt(
    rng: np.random.Generator, bases: list[JobPlan], i: int, target: tuple[Bottleneck, str], attempt: int, pre: float
) -> JobPlan:
    """Attempt ``attempt`` at Job ``i``: the first three reshape its first draw, later ones draw it anew."""
    if attempt >= FRESH_FROM:
        bases[i] = draw_base(rng, i, *target, pre)
    return finish(rng, bases[i], attempt)


def _accepts(p: JobPlan, o: Outcome) -> bool:
    if o.label is not p.target:
        return False
    return p.target is not Bottleneck.MEMORY or o.winner == p.intent


def generate_family_w(seed: int, n: int, *, start: float, step: float = 30.0) -> list[FamilyWJob]:
    """Family W's ``n`` labelled Job windows.

    Args:
        seed: the family's seed; Job ``i`` draws from ``numpy.random.default_rng((seed, i))`` alone.
        n: how many Jobs (the five classes in equal numbers as near as ``n`` allows).
        start: unix seconds where every window starts (the clock is never read).
        step: seconds between a window's timestamps.

    Raises:
        ValueError: ``n`` negative or ``step`` not positive.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, not {n}")
    if not (step > 0 and math.isfinite(step)):
        raise ValueError(f"step must be a positive number of seconds, not {step}")
    if not math.isfinite(start):
        raise ValueError(f"start must be finite unix seconds, not {start}")
    # the slowest scrape interval (60 s) must have a full rate range and gauge window before the first timestamp
    pre = float(math.ceil(max(rate_range(step, 60.0), gauge_window(step, 60.0)) + 30.0))
    rngs = [np.random.default_rng((seed, i)) for i in range(n)]
    targets = _targets(seed, n)
    bases = [draw_base(rngs[i], i, *targets[i], pre) for i in range(n)]
    done: dict[int, tuple[JobPlan, Outcome]] = {}
    pending = list(range(n))
    attempt = 0
    for width in ROUNDS:
        # each pending Job shapes its next ``width`` attempts at once, from its own generator in
        # order, and keeps the first whose label meets its class: one integration per round
        cands = [(i, _attempt(rngs[i], bases, i, targets[i], attempt + a, pre)) for i in pending for a in range(width)]
        outcomes = counterfactuals([p for _, p in cands])
        last: dict[int, tuple[JobPlan, Outcome]] = {}
        for (i, p), o in zip(cands, outcomes, strict=True):
            if i not in done and _accepts(p, o):
                done[i] = (p, o)
            last[i] = (p, o)
        pending = [i for i in pending if i not in done]
        attempt += width
        if not pending:
            break
    for i in pending:  # still off target after every round: kept, with its own label (and a tag)
        done[i] = last[i]
    return [_job(rngs[i], *done[i], start, step) for i in range(n)]


def _job(rng: np.random.Generator, p: JobPlan, o: Outcome, start: float, step: float) -> FamilyWJob:
    """Sample one labelled Job's window."""
    cl = draw_cluster(rng, p)
    assert o.base.trace is not None
    tr = truths(p, o.base.rates, o.base.trace, rng)
    m = math.floor(p.duration / step + 1e-9) + 1
    grid = start + np.arange(m, dtype=np.float64) * step
    per_pod = sample(p, cl, tr, rng, start, grid, step)
    namespace = NAMESPACES[int(rng.integers(len(NAMESPACES)))]
    name = f"train-{int(rng.integers(16**6)):06x}"
    pool = int(rng.integers(1, 9))
    pods = tuple(
        PodWindow(
            pod=f"{name}-worker-{r}-{int(rng.integers(36**5)):05d}",
            node=f"gpu-pool{pool}-{int(rng.integers(1, 400)):03d}",
            gpu_model=p.gpu.model_name,
            gpu_count=p.gpus,
            signals=SignalBlock.of(per_pod[r], length=m),
            co_located_pods=p.neighbours,
        )
        for r in range(p.nodes)
    )
    families, coverage = families_and_coverage(pods)
    notes = []
    if Family.DCGM_PROF not in families:
        notes.append("no PROF fields")
    if Family.SIDECAR not in families:
        notes.append("no collector sidecar")
    si = cl.scrape["cadvisor"]
    quality = DataQuality(families=families, coverage=coverage, scrape_interval=si, notes=tuple(notes))
    window = JobWindow(namespace, name, start, float(grid[-1]), step, grid, pods, quality)
    tags = (
        *p.tags,
        f"scrape:{si:g}s",
        f"dcgm-collect:{cl.collect:g}s",
        *(f"counter-reset:{r}" for r in sorted(cl.resets)),
        f"mechanism:{o.mechanism.value}",
        f"gain:{o.gains[o.winner]:.3f}",
        *(("label-off-target",) if not _accepts(p, o) else ()),
    )
    return FamilyWJob(namespace, name, o.label, o.mechanism.value, tags, window)
