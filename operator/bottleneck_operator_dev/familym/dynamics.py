"""A plan over time: stage times that wander, power caps that slow the clocks, and pauses.

Real steps vary: storage shared with other tenants drifts, augmentation cost depends on the sample,
collectives queue behind other traffic. Each stage gets its own slow drift (an AR(1) walk) and fast
jitter. A power limit set below the board's TDP (``nvidia-smi -pl``) lowers the SM clock when the
kernels would draw more, which lengthens the compute-limited part of every kernel. Checkpoints and
evaluation pause training: the GPU idles or writes, and those samples do not count towards the label.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from bottleneck_operator_dev.familym.plans import Plan
from bottleneck_operator_dev.familym.stages import Stages

Array = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Power:
    """Per pod: the enforced limit (W), the clock factor the limit leaves at full load, and each pod's
    clock spread (the board's boost varies by a few per cent between GPUs, NVIDIA's boost notes)."""

    limit_w: Array
    cap_factor: Array
    spread: Array
    capped: bool


def draw_power(rng: np.random.Generator, plan: Plan) -> Power:
    """Power limits: factory TDP on most clusters, 60-90 % of it where operators cap for power budgets."""
    pods = len(plan.nodes)
    b = plan.board
    capped = bool(rng.random() < 0.35)
    frac = rng.uniform(0.6, 0.9) if capped else 1.0
    limit = np.full(pods, b.tdp_w * frac)
    if plan.mechanism == "compute" and pods > 1 and rng.random() < 0.3:
        limit[int(rng.integers(pods))] *= rng.uniform(0.55, 0.75)  # one slow pod among fast peers
    # A compute-bound kernel mix wants ~full TDP; below it, clock ~ (power share)^(1/2.5) (P ~ f V^2).
    want = b.idle_w + (b.tdp_w - b.idle_w) * 0.95
    factor = np.minimum(1.0, (limit - b.idle_w) / (want - b.idle_w)) ** 0.4
    return Power(limit, factor, rng.uniform(0.93, 1.0, pods), capped)


@lru_cache(maxsize=128)
def _ar1(length: int) -> Array:
    """The AR(1) filter (coefficient 0.85) as a matrix, so a whole block of walks is one product."""
    lag = np.arange(length)[:, None] - np.arange(length)[None, :]
    out: Array = np.where(lag >= 0, 0.5 * 0.85 ** np.maximum(lag, 0), 0.0).T
    return out


def _walk(rng: np.random.Generator, pods: int, length: int, sigma: float) -> Array:
    """Multiplicative variation: a slow AR(1) drift times fast jitter, mean ~1."""
    shocks = rng.normal(0.0, sigma, size=(pods, length))
    out: Array = np.exp(shocks @ _ar1(length) + rng.normal(0.0, sigma, size=(pods, length)))
    return out


def stages_over_time(rng: np.random.Generator, plan: Plan, power: Power, length: int) -> Stages:
    """The plan's base stage times as (pods, T) arrays with drift, jitter and the power cap applied."""
    pods = len(plan.nodes)
    sigma = float(rng.uniform(0.02, 0.08))
    b = plan.base
    slow = (power.cap_factor * power.spread)[:, None]

    def series(key: str, scale: float = 1.0) -> Array:
        out: Array = b[key][:, None] * _walk(rng, pods, length, sigma * scale)
        return out

    cores = np.array([max(1.0, n.cpus - n.neighbour_cores - 2.0) for n in plan.nodes])
    if plan.cpu_limit is not None:
        cores = np.minimum(cores, plan.cpu_limit - 1.0).clip(0.5, None)
    return Stages(
        read=series("read", 2.0),
        storage=series("storage", 2.0),
        decode=series("decode"),
        workers=np.full((pods, 1), float(plan.workers)),
        cores=cores[:, None],
        h2d=series("h2d"),
        comp_a=series("comp_a", 0.5) / slow,
        mem_a=series("mem_a", 0.5),
        comp_b=series("comp_b", 0.5) / slow,
        mem_b=series("mem_b", 0.5),
        comm=series("comm", 1.5),
        overlap=np.full((pods, 1), plan.overlap),
        swap=series("swap", 2.0),
    )


def pauses(rng: np.random.Generator, length: int, step: float) -> npt.NDArray[np.bool_]:
    """Training samples (True) and checkpoint/evaluation pauses (False): every 10-40 min, 1-2 samples."""
    training = np.ones(length, dtype=bool)
    if rng.random() < 0.45:
        every = max(8, int(rng.uniform(600, 2400) / step))
        first = int(rng.integers(2, every))
        for at in range(first, length, every):
            training[at : at + int(rng.integers(1, 3))] = False
    return training
