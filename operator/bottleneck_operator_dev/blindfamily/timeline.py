"""The job over time: stage times that drift sample to sample, pauses, warm-up, lockstep between pods.

Every sample interval gets its own stage times (the scalar stages times slow multiplicative
noise: image sizes vary, a shared filesystem has busy minutes, the network has contention), and
the step is recomputed from them, so the busy share of every stage moves together with the step
as it would on a real node. Pods of one job run in lockstep: the slowest pod sets the step and the
others wait in the all-reduce.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator_dev.blindfamily.draft import Draft
from bottleneck_operator_dev.blindfamily.stages import Stages

FloatArray = npt.NDArray[np.float64]


def ar1(rng: np.random.Generator, shape: tuple[int, ...], rho: float) -> FloatArray:
    """Unit-variance AR(1) noise along the last axis (closed form; rho in [0.5, 0.99])."""
    n = shape[-1]
    e = rng.standard_normal(shape)
    e[..., 1:] *= np.sqrt(1.0 - rho * rho)
    powers = rho ** np.arange(n, dtype=np.float64)
    out: FloatArray = np.cumsum(e / powers, axis=-1) * powers
    return out


def wobble(rng: np.random.Generator, shape: tuple[int, int], sigma: float, rho: float = 0.8) -> FloatArray:
    """A multiplicative factor around 1 that drifts: exp of AR(1) noise with std ``sigma``."""
    out: FloatArray = np.exp(sigma * ar1(rng, shape, rho) - sigma * sigma / 2.0)
    return out


@dataclass(frozen=True)
class Timeline:
    """Busy shares of each sample interval, per pod (shape (pods, samples)) unless noted.

    Attributes:
        active: (samples,) share of the interval spent training (not paused, not warming up).
        pause_gpu: (samples,) GPU busy share added by what runs during pauses (eval, checkpoint).
        read, cpu, h2d, comm, comp, mem_gpu, mem_in: each stage's busy share of the interval.
        exposed: the all-reduce's share not hidden behind the backward pass.
        wait_peers: the GPUs wait in the all-reduce for slower pods (an NCCL kernel spins).
        wait_input: the GPUs idle waiting on the loader.
        device: the device side's share (the trainer's own loop keeps a core busy meanwhile).
        step_s: (samples,) seconds per step.
    """

    active: FloatArray
    pause_gpu: FloatArray
    read: FloatArray
    cpu: FloatArray
    h2d: FloatArray
    comm: FloatArray
    comp: FloatArray
    mem_gpu: FloatArray
    mem_in: FloatArray
    exposed: FloatArray
    wait_peers: FloatArray
    wait_input: FloatArray
    device: FloatArray
    step_s: FloatArray


def _pauses(rng: np.random.Generator, n: int, step: float) -> tuple[FloatArray, FloatArray]:
    """Training share of each interval, and the GPU's activity in the rest.

    Checkpoints every 10-30 min (GPU nearly idle for 20-150 s) or evaluation passes (GPU half busy),
    some jobs neither; 30 % of windows catch the job's start (loading, NCCL init).
    """
    t_end = np.arange(1, n + 1, dtype=np.float64) * step
    active = np.ones(n)
    residual = 0.0
    if rng.random() < 0.65:
        period, length = rng.uniform(600, 1800), rng.uniform(20, 150)
        residual = float(rng.choice([0.04, 0.5]))
        starts = np.arange(rng.uniform(0, period), n * step, period)
        for s in starts:
            overlap = np.clip(np.minimum(t_end, s + length) - np.maximum(t_end - step, s), 0.0, step)
            active -= overlap / step
    if rng.random() < 0.3:
        warm = int(rng.integers(1, 4))
        active[:warm] *= np.linspace(0.1, 0.8, warm)
    active = np.clip(active, 0.0, 1.0)
    return active, (1.0 - active) * residual


def _stage_noise(d: Draft, rng: np.random.Generator, p: int, n: int) -> dict[str, FloatArray]:
    """Per-stage drift: shared storage and networks move a lot, arithmetic barely."""
    shared = d.storage in ("nfs", "efs", "object", "lustre")
    sig = {
        "read": rng.uniform(0.12, 0.3) if shared else rng.uniform(0.04, 0.12),
        "cpu": rng.uniform(0.03, 0.1),
        "h2d": rng.uniform(0.02, 0.06),
        "comm": rng.uniform(0.05, 0.18),
        "comp": rng.uniform(0.01, 0.04),
        "mem": rng.uniform(0.15, 0.35),
    }
    return {k: wobble(rng, (p, n), float(s), float(rng.uniform(0.6, 0.95))) for k, s in sig.items()}


def timeline(d: Draft, s: Stages, n: int, step: float, rng: np.random.Generator) -> Timeline:
    """The busy shares of every stage over ``n`` intervals of ``step`` seconds."""
    p = d.n_pods
    noise = _stage_noise(d, rng, p, n)
    slow = np.ones((p, 1))
    if d.straggler is not None:
        slow[d.straggler[0]] = d.straggler[1]
    key = {"read": "read", "cpu": "cpu", "flop": "comp", "memstall": "mem"}.get(d.stage, "")
    scale = {name: (slow if name == key else np.ones((p, 1))) for name in ("read", "cpu", "comp", "mem")}
    read = s.read * scale["read"] * noise["read"]
    cpu = s.cpu * scale["cpu"] * noise["cpu"]
    h2d = s.h2d * noise["h2d"]
    comm = s.comm * noise["comm"]
    comp = s.compute * scale["comp"] * noise["comp"]
    mem_gpu = s.mem_gpu * scale["mem"] * noise["mem"]
    mem_in = s.mem_in * scale["mem"] * noise["mem"]
    exposed = np.maximum(0.0, comm - s.overlap * comp * 2.0 / 3.0)
    inp = np.maximum(read, cpu) + mem_in
    dev = np.maximum(h2d, comp + exposed + mem_gpu) if s.h2d_overlap else h2d + comp + exposed + mem_gpu
    own = inp + dev if s.serial_input else np.maximum(inp, dev)
    eff = float(rng.uniform(0.9, 0.98))
    step_s = own.max(axis=0) / eff
    active, pause_gpu = _pauses(rng, n, step)
    share = active / step_s

    def of(x: FloatArray) -> FloatArray:
        out: FloatArray = x * share
        return out

    peers = (own.max(axis=0) - own) if d.ranks > 1 else np.zeros_like(own)
    wait_input = inp if s.serial_input else np.maximum(0.0, own - dev)
    return Timeline(
        active=active,
        pause_gpu=pause_gpu,
        read=of(read),
        cpu=of(cpu),
        h2d=of(h2d),
        comm=of(comm),
        comp=of(comp),
        mem_gpu=of(mem_gpu),
        mem_in=of(mem_in),
        exposed=of(exposed),
        wait_peers=of(peers),
        wait_input=of(wait_input),
        device=of(dev),
        step_s=step_s,
    )
