"""Family G's public entry: a balanced, shuffled, reproducible set of labelled job windows.

Job ``i`` of a family is drawn from its own generator, seeded ``(seed, i)``; only the order of the
classes comes from the family's generator (seeded ``seed``), so a job does not change when another
job's draw does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.signals import SIGNALS
from bottleneck_operator.contract.verdict import CLASSES, Bottleneck
from bottleneck_operator.contract.window import DataQuality, JobWindow, PodWindow, SignalBlock, families_and_coverage
from bottleneck_operator_dev.familyg.design import Design, draw_design
from bottleneck_operator_dev.familyg.node_view import job_levels
from bottleneck_operator_dev.familyg.scrape import Scrapes
from bottleneck_operator_dev.familyg.window import raw_scrapes, sample

MIN_SAMPLES, MAX_SAMPLES = 20, 120
_ORDER = {name: i for i, name in enumerate(SIGNALS)}


@dataclass(frozen=True)
class FamilyGJob:
    """One labelled job of family G.

    Attributes:
        namespace: the job's namespace.
        name: the job's name.
        label: the class whose removal shortens the step most (the step model's answer).
        mechanism: how that class limits the job (contract Mechanism spellings).
        tags: the workload, storage, board, field set and what makes the job hard.
        window: its telemetry window.
    """

    namespace: str
    name: str
    label: Bottleneck
    mechanism: str
    tags: tuple[str, ...]
    window: JobWindow


def class_plan(seed: int, n: int) -> list[tuple[Bottleneck, str]]:
    """The family's targets: the five classes in equal numbers (within one), Memory's two mechanisms
    alternating, in an order shuffled by the family's generator."""
    plan: list[tuple[Bottleneck, str]] = []
    memory = 0
    for i in range(n):
        cls = CLASSES[i % len(CLASSES)]
        mech = ""
        if cls is Bottleneck.MEMORY:
            mech = ("hbm-bandwidth", "host-memory-pressure")[memory % 2]
            memory += 1
        plan.append((cls, mech))
    order = np.random.default_rng(seed).permutation(n)
    return [plan[int(k)] for k in order]


def _pods(d: Design, name: str, signals: list[dict[str, np.ndarray]], neighbours: np.ndarray) -> tuple[PodWindow, ...]:
    pods = []
    rack = sum(map(ord, name)) % 40
    short = d.cluster.board.model.split()[-1].lower().replace("-", "")[:10]
    for p, sig in enumerate(signals):
        names = sorted(sig, key=lambda k: _ORDER[k])
        block = SignalBlock(names, np.stack([sig[k] for k in names]))
        pods.append(
            PodWindow(
                f"{name}-worker-{p}",
                f"gpu-{short}-r{rack}-{p:03d}",
                d.cluster.board.model,
                d.gpus,
                block,
                int(neighbours[p]),
            )
        )
    return tuple(pods)


def build_job(
    seed: int, i: int, target: Bottleneck, mech: str, *, start: float, step: float
) -> tuple[FamilyGJob, Design, dict[str, Scrapes]]:
    """Job ``i`` of the family: its design, its raw scrapes and its window.

    Returns:
        The job, its design, and the raw scrapes (exporter -> Scrapes) the window was read from.
    """
    rng = np.random.default_rng([seed, i])
    design = draw_design(rng, target, mech or "hbm-bandwidth")
    levels = job_levels(design, rng)
    samples = int(rng.integers(MIN_SAMPLES, MAX_SAMPLES + 1))
    at = np.asarray(start + step * np.arange(samples), dtype=np.float64)
    end = float(at[-1])
    raw = raw_scrapes(design, levels, rng, start, end, step)
    name = f"{design.workload.name}-{i:04d}-{int(rng.integers(16**5)):05x}"
    pods = _pods(design, name, sample(raw, at, step, design.cluster.scrape), levels.neighbours)
    fams, coverage = families_and_coverage(pods)
    notes = () if design.cluster.dcgm_fields != "dev" else ("no PROF fields",)
    quality = DataQuality(fams, coverage, design.cluster.scrape, notes)
    window = JobWindow(design.workload.namespace, name, start, end, step, at, pods, quality)
    job = FamilyGJob(design.workload.namespace, name, design.label, design.mechanism, design.tags, window)
    return job, design, raw


def generate_family_g(seed: int, n: int, *, start: float, step: float = 30.0) -> list[FamilyGJob]:
    """Family G: ``n`` labelled job windows, all starting at ``start``.

    Args:
        seed: the family's seed; the same seed gives the same jobs.
        n: number of jobs; the five classes come in equal numbers (within one when ``n`` is not a
            multiple of five).
        start: the windows' first timestamp, unix seconds (never the clock's).
        step: seconds between window timestamps.

    Returns:
        The jobs, in the family's shuffled order.

    Raises:
        ValueError: ``n`` negative or ``step`` not positive.
    """
    if n < 0 or step <= 0:
        raise ValueError(f"need n >= 0 and step > 0, not n={n}, step={step}")
    return [
        build_job(seed, i, cls, mech, start=start, step=step)[0] for i, (cls, mech) in enumerate(class_plan(seed, n))
    ]
