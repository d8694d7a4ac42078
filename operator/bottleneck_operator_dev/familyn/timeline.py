"""A job's run as a platform team meets it: launch, warm-up, first epoch, steady steps, checkpoints.

A window may open at the job's launch (and catch model loading and compilation, then the first
epoch reading cold from storage) or anywhere in a long run. Checkpoints stop the steps for a while;
elastic jobs gain or lose pods; a pod's steps wander a little from sample to sample. The timeline
is laid on a fine grid (5 s) that reaches back before the window, as far as a rate() range looks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator_dev.familyn.plans import Plan

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

GRID = 5.0  # seconds between points of the fine grid (the shortest scrape interval drawn)
LOOKBACK = 420.0  # > the longest rate() range (4 x 60 s scrape) plus two scrapes

COMPILE, COLD, STEADY, CHECKPOINT = 1, 2, 3, 4


@dataclass(frozen=True)
class Timeline:
    """Where a job is at each point of the fine grid.

    Attributes:
        grid: the fine grid's times, shape (N,).
        phase: 0 before launch, then COMPILE, COLD, STEADY or CHECKPOINT, shape (N,).
        io_scale: what the input's storage reads cost relative to the plan's, shape (N,).
        alive: which pods exist, shape (P, N).
        jitter: each pod's step-to-step wander (multiplies its stage times), shape (P, N).
        launched: the job's start, unix seconds.
    """

    grid: FloatArray
    phase: npt.NDArray[np.int64]
    io_scale: FloatArray
    alive: BoolArray
    jitter: FloatArray
    launched: float

    @property
    def progress(self) -> FloatArray:
        """1 where steps advance (first epoch and steady), 0 elsewhere."""
        out: FloatArray = ((self.phase == COLD) | (self.phase == STEADY)).astype(np.float64)
        return out


def draw_timeline(rng: np.random.Generator, plan: Plan, start: float, end: float) -> Timeline:
    """Lay a job's run over the fine grid from ``start - LOOKBACK`` to ``end``."""
    grid = np.arange(start - LOOKBACK, end + GRID, GRID)
    at_launch = rng.random() < 0.35
    launched = start - (float(rng.uniform(0.0, 60.0)) if at_launch else float(rng.uniform(900.0, 2 * 86400.0)))
    since = grid - launched
    phase = np.full(grid.size, STEADY, dtype=np.int64)
    compile_s = float(rng.uniform(30.0, 420.0))
    cold_s = float(rng.uniform(300.0, 2400.0)) if plan.cacheable else 0.0
    phase[since < compile_s + cold_s] = COLD
    phase[since < compile_s] = COMPILE
    phase[since < 0] = 0
    if at_launch:
        plan.tags.append("warm-up")
    if rng.random() < 0.5:
        period, length = float(rng.uniform(600.0, 2700.0)), float(rng.uniform(10.0, 150.0))
        offset = float(rng.uniform(0.0, period))
        pausing = ((since - offset) % period < length) & (phase >= COLD)
        phase[pausing] = CHECKPOINT
        if pausing[grid >= start].any():
            plan.tags.append("checkpoints")
    io_scale = np.ones(grid.size)
    if plan.cacheable:
        # later epochs come from the page cache: the storage is read only for what was evicted
        io_scale[phase != COLD] = float(rng.uniform(0.05, 0.3))
        plan.tags.append("page-cache")
    alive = np.broadcast_to(since >= 0, (plan.pods, grid.size)).copy()
    if plan.pods >= 2 and rng.random() < 0.15:
        moved = rng.choice(plan.pods, size=int(rng.integers(1, plan.pods // 2 + 1)), replace=False)
        when = float(rng.uniform(start, end))
        joins = rng.random() < 0.5
        for p in moved:
            alive[p] &= grid >= when if joins else grid < when
        plan.tags.append("elastic")
    jitter = _wander(rng, plan.pods, grid.size)
    return Timeline(grid, phase, io_scale, alive, jitter, launched)


def _wander(rng: np.random.Generator, pods: int, n: int) -> FloatArray:
    """Slow multiplicative wander (white noise smoothed over ~1-5 minutes, 3-12 % spread) plus a job-wide swell."""
    sigma, span = float(rng.uniform(0.03, 0.12)), int(rng.integers(12, 60))
    white = rng.normal(0.0, sigma, (pods, n + span))
    summed = np.cumsum(white, axis=1)
    smooth = (summed[:, span:] - summed[:, :-span]) / np.sqrt(span)
    swell = 0.05 * np.sin(np.linspace(0.0, float(rng.uniform(1.0, 6.0)), n) + float(rng.uniform(0, 6.3)))
    out: FloatArray = np.exp(smooth + swell)
    return out


def stage_series(plan: Plan, line: Timeline) -> tuple[dict[str, FloatArray], FloatArray]:
    """Per-pod stage seconds along the grid (without wander): the plan's, with first-epoch reads."""
    n = line.grid.size
    stages = {k: np.broadcast_to(v[:, None], (plan.pods, n)).copy() for k, v in plan.stages.items()}
    stages["io"] *= line.io_scale
    return stages, np.full(n, plan.comm)
