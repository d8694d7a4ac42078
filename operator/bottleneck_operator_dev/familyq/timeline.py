"""A job's window drawn in phases, and its label read from the step model over the whole window.

Phases (one per sample): data-loader warm-up at the start, steady training, periodic evaluation
passes (forward only: no backward, no gradient collectives, lighter augmentation), checkpoint
writes to remote storage (no steps at all), a container restart (no steps, then warm-up again),
and, in some jobs, a change mid-run (a longer sequence length, a larger batch or an unfrozen
backbone) that moves stage times and can move the bound. The label weighs each sample by the
seconds it spends stepping.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator_dev.familyq.stages import label_of, savings, step_time

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

WARMUP, STEADY, EVAL, CHECKPOINT, RESTART = range(5)

# Mid-run changes: name -> stage multipliers (read, decode, h2d, math, hbm, comm, hostmem).
CHANGES: dict[str, tuple[float, ...]] = {
    "sequence-length-doubled": (1.0, 1.1, 1.0, 2.1, 1.6, 1.0, 1.0),
    "batch-size-ramp": (1.5, 1.5, 1.5, 1.4, 1.3, 1.0, 1.0),
    "backbone-unfrozen": (1.0, 1.0, 1.0, 1.8, 1.5, 1.9, 1.0),
    "learning-rate-decay": (1.0,) * 7,
}
_EVAL = np.array([1.0, 0.6, 1.0, 0.33, 0.5, 0.0, 1.0])


@dataclass(frozen=True)
class Timeline:
    """Per-sample phases and stage times.

    Attributes:
        phase: phase code per sample (WARMUP, STEADY, ...).
        stages: stage times per sample, shape (n, 7), seconds per step.
        step: seconds per step per sample.
        stepping: seconds of each sample spent stepping (0 outside steady and eval phases).
        restart_at: sample indices where the training container restarted.
        change: the mid-run change's name and first sample, None when none.
    """

    phase: IntArray
    stages: FloatArray
    step: FloatArray
    stepping: FloatArray
    restart_at: tuple[int, ...]
    change: tuple[str, int] | None


def draw_timeline(rng: np.random.Generator, base: FloatArray, sharp: float, n: int, dt: float) -> Timeline:
    """Phases for ``n`` samples ``dt`` seconds apart around a steady step of stage times ``base``."""
    phase = np.full(n, STEADY, dtype=np.int64)
    if rng.random() < 0.5:
        phase[: int(rng.integers(1, max(2, min(5, n // 8))))] = WARMUP
    every = int(rng.integers(8, 40))
    if rng.random() < 0.6:
        for at in range(int(rng.integers(3, every + 3)), n, every):
            seg = phase[at : at + int(rng.integers(1, 3))]
            seg[seg == STEADY] = EVAL
    if rng.random() < 0.5:
        gap = int(rng.integers(15, 60))
        for at in range(int(rng.integers(5, gap + 5)), n, gap):
            phase[at] = CHECKPOINT
    restarts: tuple[int, ...] = ()
    if rng.random() < 0.12 and n > 20:
        at = int(rng.integers(n // 4, 3 * n // 4))
        phase[at] = RESTART
        phase[at + 1 : at + 3] = WARMUP
        restarts = (at,)
    stages = np.tile(base, (n, 1))
    change: tuple[str, int] | None = None
    if rng.random() < 0.3:
        name = str(rng.choice(sorted(CHANGES)))
        at = int(rng.integers(n // 3, 2 * n // 3))
        stages[at:] *= np.asarray(CHANGES[name])
        change = (name, at)
    stages[phase == EVAL] *= _EVAL
    stages *= rng.lognormal(0.0, 0.03, stages.shape)
    step = step_time(stages, sharp)
    stepping = np.where((phase == STEADY) | (phase == EVAL), dt, 0.0)
    return Timeline(phase, stages, step, stepping, restarts, change)


def window_label(tl: Timeline, sharp: float) -> tuple[Bottleneck, int, float, FloatArray]:
    """The window's class, its bounding stage, runner-up / best saving, and every stage's saving."""
    mask = tl.stepping > 0
    saved = savings(tl.stages[mask], sharp, tl.stepping[mask])
    cls, stage, ratio = label_of(saved)
    return cls, stage, ratio, saved
