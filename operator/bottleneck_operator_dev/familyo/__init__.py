"""Family O: a blind evaluation family, written from the telemetry a platform team really gets.

Each job draws a cluster's telemetry set-up first (which dcgm-exporter fields, which node-exporter
collectors, cgroup v1 or v2, sidecars on some pods, scrape intervals per exporter, restarts), then a
workload teams really run (LLM pre-training and fine-tuning, recommendation, vision, video, speech,
diffusion), then a step model whose slowest-to-remove stage gives the label, then what each
exporter would show. Written from the data contract and public documentation alone; see
docs/familyo.md.
"""

from __future__ import annotations

from bottleneck_operator_dev.familyo.generate import FamilyOJob, classes, generate_job

__all__ = ["FamilyOJob", "generate_family_o"]


def generate_family_o(seed: int, n: int, *, start: float, step: float = 30.0) -> list[FamilyOJob]:
    """``n`` labelled jobs, the five classes in equal numbers in a seeded shuffle.

    Args:
        seed: the family's seed; job ``i`` comes from its own generator seeded (seed, i).
        n: number of jobs.
        start: every window's start, unix seconds (never the clock).
        step: seconds between samples of the windows' grid.

    Raises:
        ValueError: ``n`` is negative or ``step`` not positive.
    """
    if n < 0 or step <= 0:
        raise ValueError(f"need n >= 0 and step > 0, got n={n}, step={step}")
    return [generate_job(seed, i, cls, hint, start, step) for i, (cls, hint) in enumerate(classes(seed, n))]
