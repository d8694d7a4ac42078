"""Family D: labelled training Jobs for one honest, blind evaluation (docs/familyd.md)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.verdict import CLASSES, Bottleneck
from bottleneck_operator.contract.window import JobWindow
from bottleneck_operator_dev.familyd.job import NAMESPACES, Simulated, draw, mechanism_of, simulate_job, tags_of

MIN_SAMPLES, MAX_SAMPLES = 20, 120
OWN_NET = 0x4E7  # added to a job's seed tuple for the generator of its pods' own network bytes


@dataclass(frozen=True)
class FamilyDJob:
    """One labelled job of family D.

    Attributes:
        namespace: the Job's namespace.
        name: the Job's name (says nothing of its label).
        label: the class of the stage whose removal speeds the step up most.
        mechanism: how that stage bounds the step (a ``Mechanism`` value of the label's class).
        tags: the variant, the board, the DCGM field set, the job's shape and any hard-case,
            cluster or data facts ("mixed", "power-capped", "checkpoints", "counter-reset", ...).
        window: the job's telemetry as the data layer would hand it to the analysis.
    """

    namespace: str
    name: str
    label: Bottleneck
    mechanism: str
    tags: tuple[str, ...]
    window: JobWindow


def labels(seed: int, n: int) -> list[tuple[Bottleneck, str]]:
    """The family's labels in shuffled order: the classes in equal numbers (within one), Memory's
    two mechanisms likewise; the second item is "hbm" or "host" for Memory, else ""."""
    classes = [CLASSES[i % len(CLASSES)] for i in range(n)]
    memory = iter(["hbm", "host"] * n)
    tagged = [(c, next(memory) if c is Bottleneck.MEMORY else "") for c in classes]
    order = np.random.default_rng([seed, n, 0xD]).permutation(n)
    return [tagged[int(k)] for k in order]


def simulate_family_job(
    seed: int, index: int, label: Bottleneck, memory: str, *, start: float, step: float
) -> Simulated:
    """Job ``index`` of the family drawn with ``seed``: from its own generator, seeded (seed, index)."""
    rng = np.random.default_rng([seed, index])
    samples = int(rng.integers(MIN_SAMPLES, MAX_SAMPLES + 1))
    drawn = draw(rng, label, memory or "hbm")
    namespace = NAMESPACES[int(rng.integers(len(NAMESPACES)))]
    own_rng = np.random.default_rng([seed, index, OWN_NET])  # the pods' own network bytes, apart
    return simulate_job(rng, drawn, namespace, f"train-{index:04d}", start, step, samples, own_rng)


def generate_family_d(seed: int, n: int, *, start: float, step: float = 30.0) -> list[FamilyDJob]:
    """``n`` labelled jobs of family D, the same for the same arguments.

    Args:
        seed: the family's seed; job i comes from its own generator seeded (seed, i).
        n: number of jobs; the five classes come in equal numbers (within one), shuffled.
        start: unix seconds of every window's first timestamp (never the clock).
        step: seconds between a window's timestamps.

    Raises:
        ValueError: ``n`` negative or ``step`` not positive.
    """
    if n < 0 or step <= 0:
        raise ValueError(f"need n >= 0 and step > 0, not n={n}, step={step}")
    jobs = []
    for i, (label, memory) in enumerate(labels(seed, n)):
        sim = simulate_family_job(seed, i, label, memory, start=start, step=step)
        d = sim.drawn
        w = sim.window
        jobs.append(FamilyDJob(w.namespace, w.job, label, str(mechanism_of(d).value), tags_of(d, sim.scrapes), w))
    return jobs
