"""The exogenous processes of a window, in 1-second cells: what other tenants and the Job's own phases do.

Each function takes the Job's generator and returns arrays the plan keeps; nothing here knows the
Job's class. Heavy tails (storage latency bursts) and slow drifts (tenant shares, a neighbour
arriving, a cache warming) are what make a window's samples disagree with its mean.
"""

from __future__ import annotations

import numpy as np

from bottleneck_operator_dev.familyw.model import CELL, FloatArray


def ar1(rng: np.random.Generator, shape: tuple[int, int], sigma: float, tau: float) -> FloatArray:
    """A stationary AR(1) walk per row with marginal standard deviation ``sigma`` and correlation time ``tau`` seconds."""
    rows, n = shape
    phi = float(np.exp(-CELL / max(tau, CELL)))
    eps = rng.standard_normal(shape) * sigma * np.sqrt(1.0 - phi * phi)
    out = np.empty(shape)
    carry = rng.standard_normal(rows) * sigma
    # x[t] = phi^t (x[-1] + sum_s phi^-s eps[s]): a cumulative sum per block of 128 cells keeps phi^-s finite
    block = 128
    powers = phi ** np.arange(1, block + 1, dtype=np.float64)
    for lo in range(0, n, block):
        e = eps[:, lo : lo + block]
        m = e.shape[1]
        pw = powers[:m]
        out[:, lo : lo + m] = pw * (carry[:, None] + np.cumsum(e / pw * phi, axis=1))
        carry = out[:, lo + m - 1]
    return out


def latency_bursts(rng: np.random.Generator, shape: tuple[int, int], sigma: float, p_burst: float) -> FloatArray:
    """Per-cell request-latency multipliers: log-normal jitter with Pareto bursts that last a few seconds."""
    mult = np.exp(rng.standard_normal(shape) * sigma)
    starts = rng.random(shape) < p_burst
    size = np.minimum(1.0 + rng.pareto(1.5, shape), 25.0)
    burst = np.zeros(shape)
    for lag in range(3):  # a burst covers the cell it starts in and up to two after it, decaying
        burst[:, lag:] = np.maximum(burst[:, lag:], np.where(starts, size / (1.0 + lag), 0.0)[:, : shape[1] - lag])
    return mult * np.maximum(burst, 1.0)


def tenant_share(rng: np.random.Generator, shape: tuple[int, int], mean: float, sigma: float) -> FloatArray:
    """The share of a shared resource the Job gets, drifting as other tenants come and go."""
    return np.clip(mean * np.exp(ar1(rng, shape, sigma, 90.0)), 0.05, 1.0)


def step_change(rng: np.random.Generator, n_cells: int, before: float, after: float, lo: float) -> FloatArray:
    """A level that changes once (a neighbour arriving or leaving) at a time drawn after ``lo`` of the span."""
    at = int(rng.uniform(lo, 0.9) * n_cells)
    out = np.full(n_cells, before)
    out[at:] = after
    return out


def warming(rng: np.random.Generator, n_cells: int, h0: float, h1: float) -> FloatArray:
    """A page cache filling as the first epoch reads a dataset that fits: the hit share climbs from h0 to h1."""
    tau = rng.uniform(120.0, 600.0)
    t = np.arange(n_cells, dtype=np.float64) * CELL
    return h1 - (h1 - h0) * np.exp(-t / tau)


def pauses(rng: np.random.Generator, n_cells: int, pre: int) -> tuple[FloatArray, tuple[str, ...]]:
    """Checkpoints (periodic, seconds long) and at most one evaluation pass, as 0/1 per cell (``pre`` in cells)."""
    out = np.zeros(n_cells)
    tags: list[str] = []
    if rng.random() < 0.45:
        period = max(int(rng.uniform(240.0, 900.0) / CELL), 1)
        length = max(int(rng.uniform(4.0, 40.0) / CELL), 1)
        first = pre + int(rng.uniform(0.0, period))
        for s in range(first, n_cells, period):
            out[s : s + length] = 1.0
        tags.append("checkpoints")
    if rng.random() < 0.2:
        s = pre + int(rng.uniform(0.1, 0.8) * (n_cells - pre))
        out[s : s + int(rng.uniform(20.0, 90.0) / CELL)] = 1.0
        tags.append("evaluation")
    return out, tuple(tags)
