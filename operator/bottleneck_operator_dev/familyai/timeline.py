"""How a Job's life unfolds over the window: start, warm-up, checkpoints, evaluation, drift.

Everything is laid on one latent time grid (``DT`` seconds) that begins early enough for the
exporters' rate ranges; the exporters sample it later (:mod:`.exporters`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator_dev.familyai.plan import Plan

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

DT = 2.0  # seconds between latent points
LEAD = 300.0  # latent history before the window: covers a 4 x 60 s rate range
STAGES = ("io", "cpu", "h2d", "pcie_comm", "nvlink", "net", "compute", "launch", "hbm", "host_mem")


@dataclass(frozen=True)
class Timeline:
    """The latent grid and what happens on it.

    Attributes:
        t: latent times, seconds (N,).
        alive: pod exists at that time (P, N).
        pause: the Job is writing a checkpoint: no steps (N,).
        warm: the Job is starting (compilation, cold caches): no steps yet (N,).
        evaluating: forward-only evaluation passes (N,).
        mult: per stage, a slow multiplicative drift around 1 (P, N).
        neigh_cpu: share of the node's CPUs neighbours use (P, N).
        neigh_io: share of the storage bandwidth neighbours take (P, N).
        neigh_net: bytes/s neighbours move through the node's front-end NIC (P, N).
        gpu_spread: each GPU's clock relative to its model's boost clock (P, G).
        restarts: per pod, times the trainer container restarted (OOM kill) inside the window.
        job_start: when the Job's pods started.
    """

    t: FloatArray
    alive: BoolArray
    pause: BoolArray
    warm: BoolArray
    evaluating: BoolArray
    mult: dict[str, FloatArray]
    neigh_cpu: FloatArray
    neigh_io: FloatArray
    neigh_net: FloatArray
    gpu_spread: FloatArray
    restarts: tuple[tuple[float, ...], ...]
    job_start: float


def ar1(rng: np.random.Generator, shape: tuple[int, ...], tau: float) -> FloatArray:
    """Unit-variance AR(1) noise along the last axis with correlation time ``tau`` seconds.

    White noise filtered by the AR(1) impulse response (an FFT convolution), after a burn-in.
    """
    a = float(np.exp(-DT / max(tau, DT)))
    n = shape[-1]
    burn = min(n, int(5 * tau / DT) + 1)
    m = n + burn
    eps = rng.standard_normal((*shape[:-1], m))
    h = a ** np.arange(m)
    size = 2 * m
    x = np.fft.irfft(np.fft.rfft(eps, size) * np.fft.rfft(h, size), size)[..., burn:m]
    out: FloatArray = x * np.sqrt(1.0 - a * a)
    return out


def _periodic(rng: np.random.Generator, t: FloatArray, every: float, length: float, since: float) -> BoolArray:
    phase = rng.uniform(0.0, every)
    rel = (t - since - phase) % every
    out: BoolArray = (rel < length) & (t >= since)
    return out


def _bursts(rng: np.random.Generator, pods: int, n: int, mean: float) -> FloatArray:
    on = ar1(rng, (pods, n), float(rng.uniform(60.0, 600.0))) > rng.uniform(-0.5, 1.0)
    level = np.clip(mean * (0.6 + 0.8 * on) * np.exp(0.15 * ar1(rng, (pods, n), 60.0)), 0.0, None)
    out: FloatArray = level
    return out


def draw_timeline(rng: np.random.Generator, plan: Plan, start: float, end: float, restart_p: float) -> Timeline:
    """The latent grid from ``start - LEAD`` to ``end`` and the Job's life on it."""
    t = np.arange(start - LEAD, end + DT, DT)
    p, n, span = plan.pods, t.size, end - start
    job_start = (
        start - float(rng.uniform(600.0, 86400.0)) if rng.random() < 0.75 else start + rng.uniform(0, 0.3) * span
    )
    stagger = rng.uniform(0.0, 20.0, size=p)
    alive = t[None, :] >= job_start + stagger[:, None]
    if rng.random() < 0.08:  # the Job finished before the window's end
        alive &= t[None, :] <= start + rng.uniform(0.7, 0.95) * span
    warm = (t >= job_start) & (t < job_start + rng.uniform(60.0, 300.0))
    pause = _periodic(rng, t, float(rng.uniform(600.0, 1800.0)), float(rng.uniform(10.0, 90.0)), job_start)
    evaluating = np.zeros(n, dtype=bool)
    if rng.random() < 0.5:
        evaluating = _periodic(rng, t, float(rng.uniform(900.0, 3600.0)), float(rng.uniform(30.0, 180.0)), job_start)
    mult = {
        s: np.exp(float(rng.uniform(0.03, 0.2)) * ar1(rng, (p, n), float(rng.uniform(20.0, 300.0)))) for s in STAGES
    }
    restarts: list[tuple[float, ...]] = []
    for _ in range(p):
        k = int(rng.poisson(restart_p * span / 3600.0))
        restarts.append(tuple(sorted(float(x) for x in rng.uniform(start, end, size=k))))
    return Timeline(
        t=t,
        alive=alive,
        pause=pause & ~warm,
        warm=warm,
        evaluating=evaluating & ~warm,
        mult=mult,
        neigh_cpu=np.clip(_bursts(rng, p, n, plan.neigh_cpu), 0.0, 0.97),
        neigh_io=np.clip(_bursts(rng, p, n, plan.storage_shared), 0.0, 0.9),
        neigh_net=_bursts(rng, p, n, plan.nic_bw * float(rng.uniform(0.0, 0.15)) * (max(plan.neighbours) > 0)),
        gpu_spread=rng.uniform(0.955, 1.0, size=(p, plan.gpus_per_pod)),
        restarts=tuple(restarts),
        job_start=float(job_start),
    )
