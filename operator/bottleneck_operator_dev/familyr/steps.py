"""The step model of family R: where a training step's time goes, and which stage bounds it.

A step is two pipelined halves. The input half (DataLoader workers) reads samples and decodes or
tokenises them; with prefetching the two overlap across workers, so it takes ``max(read, preprocess)``.
The GPU half is serial from the trainer process's point of view: copy the batch to the device,
run compute-bound kernels, run bandwidth-bound kernels, wait for the part of the gradient exchange
that did not overlap with backward, and lose whatever the trainer spends stalled on host memory
(swap-in, direct reclaim). The step takes the longer half.

The label of a window is the stage whose removal (its time set to zero) shortens the window's steps
most, summed over the whole window: with phases (a cache that warms, a neighbour that starts) the
answer is a property of the window, not of one instant.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.verdict import Bottleneck

FloatArray = npt.NDArray[np.float64]

STAGES: tuple[str, ...] = ("read", "preprocess", "hostmem", "h2d", "compute", "hbm", "comm")
READ, PRE, HOSTMEM, H2D, COMPUTE, HBM, COMM = range(len(STAGES))

STAGE_CLASS: dict[str, Bottleneck] = {
    "read": Bottleneck.IO,
    "preprocess": Bottleneck.CPU,
    "hostmem": Bottleneck.MEMORY,
    "h2d": Bottleneck.INTERCONNECT,
    "compute": Bottleneck.GPU,
    "hbm": Bottleneck.MEMORY,
    "comm": Bottleneck.INTERCONNECT,
}


def step_parts(stages: FloatArray, overlap: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
    """The input half, the GPU half and the exposed communication of each step.

    Args:
        stages: seconds per step of each stage, shape (len(STAGES), n).
        overlap: share of the kernel time the gradient exchange can hide behind, shape (n,).
    """
    inp = np.maximum(stages[READ], stages[PRE])
    kernels = stages[COMPUTE] + stages[HBM]
    exposed = np.maximum(0.0, stages[COMM] - overlap * kernels)
    gpu = stages[H2D] + kernels + exposed + stages[HOSTMEM]
    return inp, gpu, exposed


def step_time(stages: FloatArray, overlap: FloatArray) -> FloatArray:
    """Seconds per step at each instant."""
    inp, gpu, _ = step_parts(stages, overlap)
    return np.maximum(inp, gpu)


def removal_gains(
    stages: FloatArray, overlap: FloatArray, weight: FloatArray, only: tuple[int, ...] | None = None
) -> FloatArray:
    """Share of the window's training time each stage's removal would save, per stage.

    A time slice of weight ``w`` runs ``w / T`` steps; without stage ``s`` they take ``w * T_s / T``.
    ``only`` limits the work to some stages (the others read 0).
    """
    base = step_time(stages, overlap)
    gains = np.zeros(len(STAGES))
    total = float(weight.sum())
    for s in range(len(STAGES)) if only is None else set(only):
        without = stages.copy()
        without[s] = 0.0
        gains[s] = float((weight * (1.0 - step_time(without, overlap) / base)).sum()) / total
    return gains


def speedup(gain: float) -> float:
    """The window's speed-up factor when a stage saving ``gain`` of its time is removed."""
    return 1.0 / max(1e-9, 1.0 - gain)


def label_of(gains: FloatArray) -> tuple[Bottleneck, str]:
    """The class and stage of the largest removal gain."""
    stage = STAGES[int(np.argmax(gains))]
    return STAGE_CLASS[stage], stage


def runner_up_ratio(gains: FloatArray) -> float:
    """The best gain of another class as a share of the winner's (0 when the winner saves nothing)."""
    cls, _ = label_of(gains)
    best = float(gains.max())
    others = [float(g) for s, g in zip(STAGES, gains, strict=True) if STAGE_CLASS[s] is not cls]
    return max(others) / best if best > 0 else 0.0


def solve_scale(fn: Callable[[float], float], target: float, hi: float = 64.0) -> float:
    """The multiplier in [0, hi] at which the nondecreasing ``fn`` reaches ``target`` (bisection)."""
    lo = 0.0
    if fn(hi) < target:
        return hi
    for _ in range(20):
        mid = 0.5 * (lo + hi)
        if fn(mid) < target:
            lo = mid
        else:
            hi = mid
    return hi
