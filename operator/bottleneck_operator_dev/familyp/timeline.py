"""What happens over the window, before any exporter looks: the job's time shares per pod and sample.

The true state is laid on a fine 5-second grid that begins a lookback before the window (so a
``rate()`` at the first timestamp has samples). Each pod spends each instant's wall time in the step
model's stages, in proportion to their share of the step, with per-pod and per-sample jitter; pauses
(checkpoints, evaluation, a pod's restart) stop the GPUs; RLHF jobs alternate generation (HBM-bound
decoding) with training (tensor-bound) instead of mixing them within a step.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator_dev.familyp.workloads import Plan

DT = 5.0  # seconds per fine-grid point
LOOKBACK = 300.0  # seconds of history before the window (a 4x60 s rate range fits)

FloatArray = np.ndarray


@dataclass(frozen=True)
class Timeline:
    """Per pod (rows) and fine-grid instant (columns): the share of wall time in each stage.

    Attributes:
        times: the fine grid (unix seconds).
        active: 1 while the job trains, 0 in a pause (checkpoint, evaluation, restart).
        tensor, hbm, comm, h2d, swap: shares of wall time in each device-path stage.
        comm_total: share of time a collective is in flight (hidden and exposed).
        read, decode: shares of wall time the input path spends reading and decoding.
        restart: for each pod, the fine index where its container restarted, or -1.
        dcgm_gap: fine indices [a, b) where dcgm-exporter was down (a == b: never).
    """

    times: FloatArray
    active: FloatArray
    tensor: FloatArray
    hbm: FloatArray
    comm: FloatArray
    h2d: FloatArray
    swap: FloatArray
    comm_total: FloatArray
    read: FloatArray
    decode: FloatArray
    restart: tuple[int, ...]
    dcgm_gap: tuple[int, int]


def _pauses(rng: np.random.Generator, n: int, pods: int) -> tuple[FloatArray, tuple[int, ...]]:
    """Checkpoint or evaluation pauses (all pods together) and at most one pod's restart."""
    active = np.ones(n)
    if rng.random() < 0.45:
        every = int(rng.uniform(300, 1800) / DT)
        length = max(1, int(rng.uniform(10, 120) / DT))
        first = int(rng.integers(0, every))
        for a in range(first, n, every):
            active[a : a + length] = 0.0
    active = np.broadcast_to(active, (pods, n)).copy()
    restart = [-1] * pods
    if rng.random() < 0.12:
        p, at = int(rng.integers(pods)), int(rng.integers(n // 3, n))
        down = max(2, int(rng.uniform(45, 240) / DT))
        # A gang-scheduled job's peers wait for the restarted rank to rejoin.
        active[:, at : at + down] = 0.0
        restart[p] = at
    return active, tuple(restart)


def _rlhf_mix(rng: np.random.Generator, n: int, hbm_share: float) -> FloatArray:
    """1 while generating (HBM-bound decoding), 0 while training: a square wave of the right duty."""
    period = rng.uniform(60, 300)
    phase = (np.arange(n) * DT / period + rng.random()) % 1.0
    return (phase < hbm_share).astype(float)


def build_timeline(rng: np.random.Generator, plan: Plan, start: float, end: float) -> Timeline:
    """The job's true time shares on the fine grid from ``start - LOOKBACK`` to ``end``."""
    times = np.arange(start - LOOKBACK, end + DT / 2, DT)
    n, pods, m = times.size, plan.pods, plan.model
    step = m.step
    active, restart = _pauses(rng, n, pods)
    jitter = np.exp(rng.normal(0.0, rng.uniform(0.02, 0.08), (pods, n)))
    # Peers are a little faster than the slowest rank and wait for it in the next collective.
    peer = np.ones((pods, 1))
    if pods > 1:
        peer = 1.0 - rng.uniform(0.0, 0.06, (pods, 1))
        peer[int(rng.integers(pods))] = 1.0
    kernel = (m.tensor + m.hbm) / step * jitter * peer
    if plan.workload == "rlhf-ppo":
        mix = _rlhf_mix(rng, n, m.hbm / (m.tensor + m.hbm))[None, :]
    else:
        mix = np.full((1, n), m.hbm / (m.tensor + m.hbm))
    wait = (m.tensor + m.hbm) / step * (1.0 - peer)
    comm = (m.comm / step + wait) * jitter
    hidden = min(m.comm / max(1.0 - plan.overlap, 0.15), m.comm + m.tensor + m.hbm) / step
    gap = (0, 0)
    if rng.random() < 0.1:
        a = int(rng.integers(int(LOOKBACK // DT), n))
        gap = (a, min(n, a + max(2, int(rng.uniform(30, 300) / DT))))
    return Timeline(
        times=times,
        active=active,
        tensor=np.clip(kernel * (1.0 - mix), 0, 1) * active,
        hbm=np.clip(kernel * mix, 0, 1) * active,
        comm=np.clip(comm, 0, 1) * active,
        h2d=np.clip(m.h2d / step * jitter, 0, 1) * active,
        swap=np.clip(m.swap / step * jitter, 0, 1) * active,
        comm_total=np.clip((hidden + wait) * jitter, 0, 1) * active,
        read=np.clip(m.read / step * jitter, 0, 1) * active,
        decode=np.clip(m.decode / step * jitter, 0, 1) * active,
        restart=restart,
        dcgm_gap=gap,
    )
