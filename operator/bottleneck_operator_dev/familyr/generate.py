"""Family R's public entry: labelled job windows, deterministic per seed, no network and no files."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.signals import SIGNALS
from bottleneck_operator.contract.verdict import CLASSES, Bottleneck
from bottleneck_operator.contract.window import DataQuality, JobWindow, PodWindow, SignalBlock, families_and_coverage
from bottleneck_operator_dev.familyr import draw, scrape, truth
from bottleneck_operator_dev.familyr.plan import JobPlan
from bottleneck_operator_dev.familyr.steps import FloatArray

NAMESPACES = ("ml-research", "recsys", "speech", "vision-team", "llm-pretrain", "rl-lab")


@dataclass(frozen=True)
class FamilyRJob:
    """One labelled job window of family R.

    Attributes:
        namespace: the Job's namespace.
        name: the Job's name.
        label: the class of the stage whose removal shortens the window's steps most (step model).
        mechanism: the contract's mechanism of that stage (a ``Mechanism`` value).
        tags: the workload, the faults drawn, "mixed" when another class's stage saves at least 0.8
            of what the label's saves, and the strength ("speedup-x1.34").
        window: the telemetry, as the data layer would hand it to the analysis.
    """

    namespace: str
    name: str
    label: Bottleneck
    mechanism: str
    tags: tuple[str, ...]
    window: JobWindow


def _pod_windows(p: JobPlan, rng: np.random.Generator, name: str, grid: FloatArray, step: float) -> list[PodWindow]:
    """Every pod's window: one more when a spot node was replaced mid-run."""
    names = scrape.published(p)
    by_exporter: dict[str, list[str]] = {}
    for n in names:
        by_exporter.setdefault(SIGNALS[n].family.exporter_name, []).append(n)
    replaced = int(rng.integers(p.pods)) if p.pods < 16 and rng.random() < 0.1 else -1
    at = float(rng.uniform(grid[0] + 0.2 * (grid[-1] - grid[0]), grid[-1] - 0.2 * (grid[-1] - grid[0])))
    suffix = "".join(rng.choice(list("bcdfghjklmnpqrstvwxz2456789"), 5))
    count = p.pods + (replaced >= 0)
    truths = []
    for _ in range(count):
        sh = truth.shares(p, float(rng.uniform(0.98, 1.02)))
        raw = {**truth.gpu_truth(p, rng, sh), **truth.host_truth(p, rng, sh)}
        truths.append({k: np.broadcast_to(np.asarray(v, dtype=np.float64), p.times.shape) for k, v in raw.items()})
    signals: list[dict[str, FloatArray]] = [{} for _ in range(count)]
    for exporter_names in by_exporter.values():
        got, _ = scrape.sample_exporter(p, rng, truths, exporter_names, grid, step)
        for k in range(count):
            signals[k].update(got[k])
    pods: list[PodWindow] = []
    for rank in range(count):
        if rank == replaced:
            for v in signals[rank].values():
                v[grid > at] = np.nan
        if rank == p.pods:  # the replacement: a new pod whose series begin after the node joined
            for v in signals[rank].values():
                v[grid < at + float(rng.uniform(60, 240))] = np.nan
        ordered = [n for n in names if n in signals[rank]]
        block = SignalBlock(ordered, np.stack([signals[rank][n] for n in ordered]))
        new = "r" if rank == p.pods else ""
        pods.append(
            PodWindow(
                pod=f"{name}-{replaced if new else rank}-{suffix}{new}",
                node=f"gpu-node-{int(rng.integers(1000)):03d}",
                gpu_model=p.board.model,
                gpu_count=p.gpus,
                signals=block,
                co_located_pods=int(rng.integers(1, 6)) if p.cluster.shared_nodes else 0,
            )
        )
    if replaced >= 0:
        p.tags.append("spot-node-replaced")
    return pods


def _job(seed: int, i: int, cls: Bottleneck, start: float, step: float) -> FamilyRJob:
    rng = np.random.default_rng((seed, i))
    samples = int(rng.integers(20, 121))
    p, out = draw.draw_job(rng, cls, start, step, samples)
    namespace = str(rng.choice(NAMESPACES))
    name = f"{p.workload[:28].rstrip('-')}-{i:04d}"
    grid = start + step * np.arange(samples, dtype=np.float64)
    pods = _pod_windows(p, rng, name, grid, step)
    families, coverage = families_and_coverage(pods)
    notes = () if p.cluster.field_set != "dev" else ("no PROF fields",)
    quality = DataQuality(
        families=families,
        coverage=coverage,
        scrape_interval=p.cluster.scrape_s,
        notes=notes,
        layout={"dcgm": p.cluster.dcgm_layout, "node": p.cluster.node_layout},
    )
    window = JobWindow(namespace, name, float(grid[0]), float(grid[-1]), step, grid, tuple(pods), quality)
    tags = (p.workload, f"stage-{out.stage}", f"speedup-x{out.speedup:.2f}", *p.tags)
    if out.runner_up >= 0.8:
        tags = (*tags, "mixed")
    return FamilyRJob(namespace, name, out.label, str(draw.mechanism(p, out.stage)), tags, window)


def generate_family_r(seed: int, n: int, *, start: float, step: float = 30.0) -> list[FamilyRJob]:
    """``n`` labelled job windows, the five classes in equal numbers (as near as ``n`` allows), shuffled.

    Args:
        seed: the family's seed; job ``i`` draws from its own generator seeded ``(seed, i)``.
        n: number of jobs.
        start: every window's first timestamp, unix seconds (never the clock).
        step: seconds between the window's timestamps.

    Returns:
        The jobs in order ``0 .. n-1``.
    """
    if n < 0 or step <= 0:
        raise ValueError(f"need n >= 0 and step > 0, not n={n}, step={step}")
    quota = [CLASSES[k % len(CLASSES)] for k in range(n)]
    np.random.default_rng((seed, n, 7)).shuffle(quota)  # type: ignore[arg-type]
    return [_job(seed, i, cls, start, step) for i, cls in enumerate(quota)]
