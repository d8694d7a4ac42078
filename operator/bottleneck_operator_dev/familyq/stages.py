"""The step model: a training step's stages, what the step costs, and which stage bounds it.

A step has two paths that overlap through the data loader's prefetch queue. The input path is a
data-loader worker's own work per step, read then decode, done one after the other (a PyTorch
``DataLoader`` worker runs ``__getitem__`` end to end). The device path is the trainer's: copy the
batch in, run the math-bound and the bandwidth-bound kernels, wait for the exposed part of the
collectives, and stall on host memory when the trainer's pages are being reclaimed or swapped in.

Prefetch hides the shorter path only on average: step-to-step jitter makes the step the mean of a
maximum, which a smooth maximum with a job-specific sharpness stands for (a deeper queue, a
sharper maximum). The label is decided here, by removal: the stage whose time set to zero shortens
the window's steps most names the class.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.verdict import Bottleneck

FloatArray = npt.NDArray[np.float64]

READ, DECODE, H2D, MATH, HBM, COMM, HOSTMEM = range(7)
STAGES = ("read", "decode", "h2d", "math", "hbm", "comm", "hostmem")
N_STAGES = len(STAGES)
CLASS_OF: tuple[Bottleneck, ...] = (
    Bottleneck.IO,
    Bottleneck.CPU,
    Bottleneck.INTERCONNECT,
    Bottleneck.GPU,
    Bottleneck.MEMORY,
    Bottleneck.INTERCONNECT,
    Bottleneck.MEMORY,
)
_INPUT = (READ, DECODE)
_DEVICE = (H2D, MATH, HBM, COMM, HOSTMEM)


def paths(t: FloatArray) -> tuple[FloatArray, FloatArray]:
    """The input and device path times of stage times ``t`` (..., 7)."""
    return t[..., list(_INPUT)].sum(axis=-1), t[..., list(_DEVICE)].sum(axis=-1)


def step_time(t: FloatArray, sharp: float) -> FloatArray:
    """Seconds per step: the smooth maximum of the two paths."""
    inp, dev = paths(t)
    top = np.maximum(np.maximum(inp, dev), 1e-12)
    return top * ((inp / top) ** sharp + (dev / top) ** sharp) ** (1.0 / sharp)


def savings(t: FloatArray, sharp: float, weight: FloatArray | None = None) -> FloatArray:
    """Share of stepping time each stage's removal saves, summed over samples.

    Args:
        t: stage times, shape (n, 7) (one row per sample) or (7,).
        sharp: the smooth maximum's sharpness.
        weight: seconds of stepping in each sample (default 1 each).

    Returns:
        shape (7,): sum over samples of weight * (1 - T_without_stage / T).
    """
    rows = np.atleast_2d(t)
    w = np.ones(rows.shape[0]) if weight is None else weight
    full = step_time(rows, sharp)
    out = np.zeros(N_STAGES)
    for s in range(N_STAGES):
        if not rows[:, s].any():
            continue
        cut = rows.copy()
        cut[:, s] = 0.0
        out[s] = float(np.sum(w * (1.0 - step_time(cut, sharp) / np.maximum(full, 1e-12))))
    return out


def class_savings(saved: FloatArray) -> dict[Bottleneck, float]:
    """The best stage saving of each class (two stages feed Interconnect and two feed Memory)."""
    best: dict[Bottleneck, float] = {}
    for s, value in enumerate(saved):
        cls = CLASS_OF[s]
        best[cls] = max(best.get(cls, 0.0), float(value))
    return best


def label_of(saved: FloatArray) -> tuple[Bottleneck, int, float]:
    """The class of the stage whose removal saves most, that stage, and runner-up / best (0..1)."""
    order = np.argsort(saved)[::-1]
    top = int(order[0])
    best = class_savings(saved)
    others = [v for c, v in best.items() if c is not CLASS_OF[top]]
    runner = max(others, default=0.0)
    return CLASS_OF[top], top, runner / max(float(saved[top]), 1e-12)


def _step1(t: list[float], sharp: float) -> float:
    """:func:`step_time` of one row, in plain floats (the design solver calls it thousands of times)."""
    inp = t[READ] + t[DECODE]
    dev = t[H2D] + t[MATH] + t[HBM] + t[COMM] + t[HOSTMEM]
    top = max(inp, dev, 1e-12)
    return float(top * ((inp / top) ** sharp + (dev / top) ** sharp) ** (1.0 / sharp))


def _saving1(t: list[float], sharp: float, stage: int) -> float:
    cut = list(t)
    cut[stage] = 0.0
    return 1.0 - _step1(cut, sharp) / _step1(t, sharp)


def speedup(t: FloatArray, sharp: float, stage: int) -> float:
    """How much faster one step gets without ``stage``."""
    return 1.0 / max(1.0 - _saving1([float(v) for v in t], sharp, stage), 1e-9)


def _scale_for(t: list[float], stage: int, goal: float, value: Callable[[list[float]], float]) -> list[float]:
    """Scale ``t[stage]`` by bisection (log scale) until ``value(t)`` reaches ``goal``; it grows with the stage."""
    lo, hi = -9.0, 6.0
    base = max(t[stage], 1e-3)
    trial = list(t)
    for _ in range(36):
        mid = 0.5 * (lo + hi)
        trial[stage] = base * math.exp(mid)
        if value(trial) < goal:
            lo = mid
        else:
            hi = mid
    trial[stage] = base * math.exp(0.5 * (lo + hi))
    return trial


def shape_stages(
    t: FloatArray, sharp: float, top: int, strength: float, second: int | None, ratio: float
) -> FloatArray:
    """Stage times with ``top`` bounding the step ``strength`` times, and ``second`` at ``ratio`` of its saving.

    The draws pick what the job is; this only sizes the two stages the draw named, alternating a few
    times because each one's size moves the other's saving.
    """
    out = [float(v) for v in t]
    goal = 1.0 - 1.0 / strength
    for _ in range(4 if second is not None else 1):
        out = _scale_for(out, top, goal, lambda x: _saving1(x, sharp, top))
        if second is None:
            break
        lead = _saving1(out, sharp, top)
        out = _scale_for(out, second, ratio * lead, lambda x: _saving1(x, sharp, second))
    return np.asarray(out)
