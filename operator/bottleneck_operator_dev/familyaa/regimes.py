"""The hidden Markov chain of regimes inside the window.

A Job moves between warm-up, steady training, evaluation, checkpoint writes, a neighbour's burst
and a straggling peer. Each visit lasts an exponential time with a regime's own mean (assumed
ranges; checkpoint and evaluation cadences as training scripts commonly set them), and steady
training is the hub every other regime returns to. The scrape samples whatever regime holds at
its instant.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from bottleneck_operator_dev.familyaa.causal import BURST, CHECKPOINT, EVAL, REGIMES, STEADY, STRAGGLER, WARMUP

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

# Mean visit, seconds (low, high): assumed.
DWELL = {
    WARMUP: (120.0, 420.0),
    STEADY: (240.0, 1200.0),
    EVAL: (60.0, 300.0),
    CHECKPOINT: (20.0, 150.0),
    BURST: (120.0, 600.0),
    STRAGGLER: (120.0, 600.0),
}


def draw_path(
    rng: np.random.Generator, ticks: int, dt: float, *, shared: bool, multi: bool, lead_ticks: int
) -> IntArray:
    """The regime at each tick: a continuous-time chain snapped to the tick grid.

    Args:
        ticks: ticks in all (the lead before the window included).
        dt: seconds a tick.
        shared: the node has neighbours (bursts possible).
        multi: the Job spans nodes (stragglers possible).
        lead_ticks: ticks before the window opens; a Job caught at its start warms up there.
    """
    rate = np.zeros(len(REGIMES))  # relative chance of leaving steady for each regime
    rate[EVAL] = rng.uniform(0.0, 1.0) if rng.random() < 0.7 else 0.0
    rate[CHECKPOINT] = rng.uniform(0.0, 1.0) if rng.random() < 0.6 else 0.0
    rate[BURST] = rng.uniform(0.3, 1.5) if shared else 0.0
    rate[STRAGGLER] = rng.uniform(0.2, 1.0) if multi and rng.random() < 0.5 else 0.0
    means = {r: float(rng.uniform(*DWELL[r])) for r in DWELL}
    path = np.full(ticks, STEADY, dtype=np.int64)
    state = WARMUP if rng.random() < 0.3 else STEADY
    # a warm-up, when caught, starts with the Job a little before the window opens
    t = max(0.0, (lead_ticks - rng.uniform(0, 10)) * dt) if state == WARMUP else 0.0
    end = ticks * dt
    while t < end:
        stay = float(rng.exponential(means[state]))
        a, b = int(t / dt), min(int((t + stay) / dt) + 1, ticks)
        path[a:b] = state
        t += stay
        if state != STEADY:
            state = STEADY
        elif rate.sum() > 0:
            state = int(rng.choice(len(REGIMES), p=rate / rate.sum()))
    return path


def occupancy(path: IntArray, lead_ticks: int) -> FloatArray:
    """Share of the window's ticks spent in each regime."""
    inside = path[lead_ticks:]
    out: FloatArray = np.bincount(inside, minlength=len(REGIMES)).astype(np.float64) / max(inside.size, 1)
    return out
