"""How a job's stage times move during the window: drift, noise, pauses, restarts, stragglers.

The tuned stage times are nominal. Over the window each stage group wanders (a log-normal AR(1)
process: batches differ in size and content, caches warm and cool), training stops during
checkpoint pauses, warm-up and container restarts, and ranks on GPUs with slower clocks make the
others wait at the next collective. The result is, on a fine time grid, the iteration time and
the per-pod time each rank spends in each stage.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator_dev.familyh.cluster import Accidents
from bottleneck_operator_dev.familyh.draft import Draft

Rng = np.random.Generator
Array = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Timeline:
    """Stage times on the fine grid ``t`` (shape (T,)); per-pod arrays are (pods, T).

    Attributes:
        t: grid times (unix seconds).
        running: share of each grid interval the job trains (0 in pauses and restarts).
        pause: share of the interval spent writing a checkpoint.
        warmup: 1 where the job is still loading its checkpoint.
        step: seconds per iteration.
        tensor, hbm, comm, h2d, stall: per-pod seconds per iteration in each stage.
        nccl_wait: per-pod seconds per iteration a rank waits inside a collective for slower ranks.
        decode, read, worker_stall: the loader's per-batch costs (T,).
        clock: per-GPU clock factor (pods, gpus), the slowest of which paces the job.
    """

    t: Array
    running: Array
    pause: Array
    warmup: Array
    step: Array
    tensor: Array
    hbm: Array
    comm: Array
    h2d: Array
    stall: Array
    nccl_wait: Array
    decode: Array
    read: Array
    worker_stall: Array
    clock: Array


def ar1(rng: Rng, n: int, sigma: float, rho: float) -> Array:
    """A log-normal AR(1)-like factor around 1 with log-sd ``sigma`` (white noise through an exponential kernel)."""
    length = min(n, int(np.ceil(6.0 / (1.0 - rho))))
    kernel = rho ** np.arange(length)
    kernel *= sigma / np.sqrt(np.sum(kernel * kernel))
    x = np.convolve(rng.normal(0.0, 1.0, n + length), kernel, mode="valid")[:n]
    return np.asarray(np.exp(x - sigma * sigma / 2), dtype=np.float64)


def _phases(t: Array, start: float, acc: Accidents) -> tuple[Array, Array, Array]:
    """The share of each interval spent training, checkpointing, and the warm-up mask."""
    rel = t - start
    pause = np.zeros_like(t)
    if acc.checkpoint_every_s > 0:
        phase = np.mod(rel + acc.checkpoint_every_s * 0.37, acc.checkpoint_every_s)
        pause = (phase < acc.checkpoint_s).astype(np.float64)
    warm = (rel < acc.warmup_s).astype(np.float64) if acc.warmup_s > 0 else np.zeros_like(t)
    down = np.zeros_like(t)
    if acc.container_restart is not None:
        _, at, length = acc.container_restart
        down = ((rel >= at) & (rel < at + length)).astype(np.float64)
    running = np.clip(1.0 - pause - warm - down, 0.0, 1.0)
    return running, pause * (1.0 - warm), warm


def build(rng: Rng, d: Draft, acc: Accidents, t: Array, start: float, clock: Array) -> Timeline:
    """The job's stage times on grid ``t`` (see :class:`Timeline`)."""
    n, s = t.size, d.stages
    sigma = float(rng.uniform(0.03, 0.18))
    rho = float(rng.uniform(0.6, 0.95))
    g_in, g_cpu, g_gpu, g_comm, g_mem = (ar1(rng, n, sigma, rho) for _ in range(5))
    running, pause, warm = _phases(t, start, acc)
    # the slowest GPU of a pod paces its ranks; math-bound time stretches with the clock, bandwidth-bound does not
    pod_clock = clock.min(axis=1)[:, None]
    slowest = clock.min()
    # an evaluation pass runs forward only (about a third of a training step's math) and exchanges no gradients
    evaluating = np.zeros_like(t)
    if acc.eval_every_s > 0:
        evaluating = (np.mod(t - start + acc.eval_every_s * 0.61, acc.eval_every_s) < acc.eval_s).astype(np.float64)
    forward = 1.0 - evaluating * 2.0 / 3.0
    tensor = s.tensor_s * slowest / pod_clock * (g_gpu * forward)[None, :]
    hbm = np.broadcast_to(s.hbm_s * g_gpu * forward, tensor.shape)
    kernels = (tensor + hbm) * (1.0 + s.bubble)
    comm = np.broadcast_to(s.comm_s * g_comm * (1.0 - evaluating), tensor.shape)
    h2d = np.broadcast_to(s.h2d_s * g_in, tensor.shape)
    stall = np.broadcast_to(s.main_stall_s * g_mem, tensor.shape)
    trainer = h2d + kernels + comm + stall
    decode = s.decode_s * g_cpu
    read_scale = g_in
    own = (s.read_s * read_scale + decode + s.worker_stall_s * g_mem) / max(s.workers, 1)
    loader = np.maximum(np.maximum(own, s.storage_s * read_scale), decode / max(s.cores, 1e-3))
    # every pod's loader runs at its own pace, the slowest at the nominal one; a pod whose data and
    # kernels are ready sooner waits for the slowest inside the next collective
    pace = np.exp(-np.abs(rng.normal(0.0, float(rng.uniform(0.02, 0.12)), d.pods)))
    pace[int(rng.integers(d.pods))] = 1.0
    own = np.maximum(loader[None, :] * pace[:, None], trainer)
    step = own.max(axis=0)
    wait = (step[None, :] - own) if d.pods * d.gpus > 1 else np.zeros_like(trainer)
    return Timeline(
        t=t,
        running=running,
        pause=pause,
        warmup=warm,
        step=step,
        tensor=tensor,
        hbm=hbm,
        comm=comm,
        h2d=h2d,
        stall=stall,
        nccl_wait=wait,
        decode=decode,
        read=s.read_s * read_scale,
        worker_stall=s.worker_stall_s * g_mem,
        clock=clock,
    )
