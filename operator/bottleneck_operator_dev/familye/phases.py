"""The window's time line on a fine grid: what phase the job is in, and how much it wanders.

Real jobs are not steady: loaders hit slow shards, sequence lengths vary, checkpoints pause every
GPU while state is copied out, a trainer killed by the OOM killer restarts and reloads, and a
window can open while the job is still starting. Everything after this module is a function of
these weights and of the training-phase levels in :mod:`.activity`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.sampling import rate_range
from bottleneck_operator_dev.familye.workloads import Plan

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Timeline:
    """The fine grid and the job-wide phase of each of its bins.

    Attributes:
        t0: time of the first bin's start, unix s; dt: bin width, s; times: bin starts.
        train, ckpt, down, init: share of each bin spent in that phase (they sum to 1).
        restart_bin: the bin in which every trainer restarted (-1: none).
    """

    t0: float
    dt: float
    times: FloatArray
    train: FloatArray
    ckpt: FloatArray
    down: FloatArray
    init: FloatArray
    restart_bin: int


def lookback(step: float, scrapes: dict[str, float]) -> float:
    """Seconds before the window's start that any exporter's first rate() still reads."""
    return max(rate_range(step, si) + 3 * si for si in scrapes.values())


def timeline(rng: np.random.Generator, plan: Plan, start: float, end: float, step: float) -> Timeline:
    """Phase shares per fine bin over ``[start - lookback, end]``."""
    dt = min(5.0, step)
    t0 = start - lookback(step, plan.env.scrape)
    n = int(np.ceil((end - t0) / dt)) + 2
    times = np.asarray(t0 + dt * np.arange(n), dtype=np.float64)
    rel = times - start
    ckpt = np.zeros(n)
    if plan.ckpt_every > 0:
        phase = rng.uniform(0, plan.ckpt_every)
        ckpt = (((rel - phase) % plan.ckpt_every) < plan.ckpt_s).astype(np.float64)
    init = (rel < plan.init_s).astype(np.float64) if plan.init_s > 0 else np.zeros(n)
    down = np.zeros(n)
    restart_bin = -1
    if np.isfinite(plan.restart_at):
        gone = rng.uniform(45, 150)
        reload = rng.uniform(30, 90)
        down = ((rel >= plan.restart_at) & (rel < plan.restart_at + gone)).astype(np.float64)
        init = np.maximum(
            init, ((rel >= plan.restart_at + gone) & (rel < plan.restart_at + gone + reload)).astype(np.float64)
        )
        restart_bin = int(np.searchsorted(rel, plan.restart_at))
    init = init * (1 - down)
    ckpt = ckpt * (1 - down) * (1 - init)
    train = 1.0 - ckpt - down - init
    return Timeline(t0, dt, times, train, ckpt, down, init, restart_bin)


def wander(rng: np.random.Generator, shape: tuple[int, ...], n: int, level: float, tau_bins: float) -> FloatArray:
    """Multiplicative wander around 1: a slow drift plus bin-to-bin noise, shape (*shape, n).

    The drift is white noise averaged over ``tau_bins`` bins (rescaled to ``level``): a cheap stand-in
    for an AR(1) process that keeps generation vectorised.
    """
    w = max(1, int(tau_bins))
    shocks = rng.normal(0.0, level, (*shape, n + w))
    c = np.cumsum(shocks, axis=-1)
    drift = (c[..., w:] - c[..., :-w]) / np.sqrt(w)
    white = rng.normal(0.0, level * 0.6, (*shape, n))
    out: FloatArray = np.clip(1.0 + drift + white, 0.2, 2.5)
    return out
