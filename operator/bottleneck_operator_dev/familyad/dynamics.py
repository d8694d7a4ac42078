"""How a Job's step demands move within its window: slow drift, evaluation and checkpoint phases,
and neighbours switching their load on and off.

Everything lives on a base grid finer than any scrape interval, that starts early enough for the
first window timestamp's rate() range to be full.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.sampling import rate_range

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

BASE_DT = 2.5  # seconds between base-grid points: finer than the shortest scrape interval (5 s)
# Station groups that drift together: storage path, host CPU, GPU, fabric, host memory.
DRIFT_GROUPS = ("io", "cpu", "gpu", "net", "mem")


@dataclass(frozen=True)
class Timeline:
    """The base grid and what moves on it.

    Attributes:
        t: base-grid times, seconds, shape (T,).
        in_window: True from the window's first timestamp to its last.
        ckpt: a checkpoint is being written (no training steps).
        eval: an evaluation pass runs (forward only, no gradients to reduce).
        drift: multiplicative drift of each group's demands, shape (len(DRIFT_GROUPS), T).
        nb: neighbours' activity on each pod's node, 0..1, shape (pods, T).
    """

    t: FloatArray
    in_window: BoolArray
    ckpt: BoolArray
    eval: BoolArray
    drift: FloatArray
    nb: FloatArray

    def group(self, name: str) -> FloatArray:
        """The drift of one station group."""
        row: FloatArray = self.drift[DRIFT_GROUPS.index(name)]
        return row


def _smooth(x: FloatArray, width: int) -> FloatArray:
    kernel = np.ones(max(width, 1)) / max(width, 1)
    out: FloatArray = np.apply_along_axis(lambda r: np.convolve(r, kernel, mode="same"), -1, x)
    return out


def _spans(rng: np.random.Generator, t: FloatArray, lo: float, hi: float, count: int) -> BoolArray:
    """``count`` spans of ``lo``..``hi`` seconds at random places inside ``t``."""
    mask = np.zeros(t.size, dtype=bool)
    for _ in range(count):
        length = rng.uniform(lo, hi)
        begin = rng.uniform(t[0], max(t[0], t[-1] - length))
        mask |= (t >= begin) & (t < begin + length)
    return mask


def _neighbours(rng: np.random.Generator, size: int, counts: npt.NDArray[np.int64]) -> FloatArray:
    """On/off neighbour load per node: a two-state chain (mean on and off spells of minutes)."""
    rows = []
    for count in counts:
        if count == 0:
            rows.append(np.zeros(size))
            continue
        p_switch = BASE_DT / rng.uniform(120.0, 900.0)
        flips = rng.random(size) < p_switch
        state = (np.cumsum(flips) + int(rng.integers(0, 2))) % 2
        level = np.where(state == 1, 1.0, rng.uniform(0.1, 0.4))
        rows.append(np.clip(_smooth(level[None, :], 8)[0], 0.0, 1.0))
    return np.array(rows, dtype=np.float64)


def draw_timeline(
    rng: np.random.Generator,
    start: float,
    step: float,
    samples: int,
    scrape_s: float,
    neighbours: npt.NDArray[np.int64],
) -> Timeline:
    """The base grid for one Job and its drift, phases and neighbour load."""
    lead = rate_range(step, scrape_s) + 3.0 * scrape_s
    end = start + step * (samples - 1)
    t = np.arange(start - lead, end + BASE_DT, BASE_DT)
    in_window = (t >= start) & (t <= end)
    duration = end - start
    ckpt = _spans(rng, t, 20.0, min(180.0, 0.06 * duration + 20.0), int(rng.integers(1, 3))) & (rng.random() < 0.35)
    evals = _spans(rng, t, 0.05 * duration, 0.15 * duration, 1) & (rng.random() < 0.3) & ~ckpt
    sigma = rng.uniform(0.01, 0.05, size=(len(DRIFT_GROUPS), 1))
    walk = np.cumsum(rng.normal(0.0, 1.0, size=(len(DRIFT_GROUPS), t.size)), axis=1)
    walk = _smooth(walk - walk.mean(axis=1, keepdims=True), 24)
    walk /= np.maximum(walk.std(axis=1, keepdims=True), 1e-9)
    drift = np.exp(sigma * walk)
    return Timeline(t, in_window, ckpt, evals, drift, _neighbours(rng, t.size, neighbours))
