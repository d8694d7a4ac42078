"""The training loop as a discrete-time simulation, step by step, on every pod at once.

Each rank runs PyTorch's pattern: DataLoader workers (round-robin over batches, at most
``workers x prefetch`` batches ahead of the main process) read a batch from storage (a FIFO server
of the rank's share of the storage's throughput, plus per-request latency over the requests in
flight) and decode it on their share of the cores; the main process takes the batch, collates it,
copies it to the GPU (blocking when pageable, on a copy stream when pinned), launches the step's
kernels (a host cost per kernel) and runs at most one step ahead of the GPU. The all-reduce starts
when the last pod's backward pass has produced the buckets it can overlap, and ends the step on
every pod: the ranks of a data-parallel Job advance together.

The step time is whatever comes out of this sequencing; nothing here knows the Job's class.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator_dev.familyak.spec import JobSpec
from bottleneck_operator_dev.familyak.stages import Knobs, StageCosts, stage_costs

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Noise:
    """Per-batch multiplicative variation, drawn once and shared by every counterfactual run.

    Sharing it (common random numbers) means two runs differ only by the stage made ample.
    """

    read: FloatArray  # (pods, steps)
    decode: FloatArray
    gpu: FloatArray


def draw_noise(rng: np.random.Generator, pods: int, steps: int, cv: float) -> Noise:
    """Lognormal factors of mean 1: ``cv`` for the input pipeline, 2 % for GPU kernels."""

    def lognormal(c: float) -> FloatArray:
        sigma = float(np.sqrt(np.log1p(c * c)))
        return np.asarray(rng.lognormal(-sigma * sigma / 2, sigma, size=(pods, steps)), dtype=np.float64)

    return Noise(read=lognormal(cv), decode=lognormal(cv * 0.6), gpu=lognormal(0.02))


@dataclass(frozen=True)
class LoopRun:
    """What one run of the loop did.

    Attributes:
        ends: (steps,) the time each step ended (every pod together).
        gpu_busy: (pods, steps) seconds a kernel ran on the rank's GPU in each step, NCCL included.
        kernel: (pods, steps) seconds of compute kernels alone.
        data_wait: (pods, steps) seconds the main process waited for a batch.
        read: (pods, steps) seconds the batch's worker spent reading it.
        worker_busy: (pods,) share of time a worker was reading or decoding.
        costs: the stage costs the run used.
        warm: steps to skip before the queue and the storage reach steady state.
    """

    ends: FloatArray
    gpu_busy: FloatArray
    kernel: FloatArray
    data_wait: FloatArray
    read: FloatArray
    worker_busy: FloatArray
    costs: StageCosts
    warm: int

    @property
    def mean_step(self) -> float:
        """Mean seconds per step after warm-up."""
        k = self.ends.size
        return float((self.ends[-1] - self.ends[self.warm]) / (k - 1 - self.warm))


def steps_for(spec: JobSpec) -> int:
    """Enough steps to fill the prefetch queue and then see it in steady state."""
    return int(max(160, 3 * spec.loader.workers * spec.loader.prefetch + 60))


def run_loop(spec: JobSpec, knobs: Knobs, noise: Noise) -> LoopRun:
    """Run the loop twice: the first pass tells how busy the workers are, which sets the CPU share."""
    first = _simulate(stage_costs(spec, knobs), noise)
    busy = float(np.mean(first.worker_busy))
    return _simulate(stage_costs(spec, knobs, worker_busy=busy), noise)


@dataclass
class _Rank:
    """Mutable state of one pod's representative rank during a run."""

    wfree: list[float]
    consumed: list[float]
    sfree: float = 0.0
    main_free: float = 0.0
    copy_free: float = 0.0
    wbusy: float = 0.0


def _fetch(c: StageCosts, r: _Rank, k: int, nr: float, nd: float) -> tuple[float, float]:
    """When batch ``k`` is ready for the main process, and how long its reading took."""
    decode = c.decode * nd / c.speed
    if c.workers == 0:  # the main process reads and decodes in line
        start = r.main_free
    else:
        slot = r.consumed[k - c.queue] if k >= c.queue else 0.0
        start = max(r.wfree[k % c.workers], slot)
    s_end = max(r.sfree, start) + c.batch_bytes * nr / c.read_bw_rank
    r.sfree = s_end
    read_done = max(start + c.read_lat * nr, s_end)
    ready = read_done + decode
    if c.workers:
        r.wfree[k % c.workers] = ready
        r.wbusy += ready - start
    return ready, read_done - start


def _simulate(c: StageCosts, noise: Noise) -> LoopRun:
    pods, steps = noise.read.shape
    ranks = [_Rank(wfree=[0.0] * max(1, c.workers), consumed=[0.0] * steps) for _ in range(pods)]
    ends = np.zeros(steps)
    out = {key: np.zeros((pods, steps)) for key in ("gpu_busy", "kernel", "data_wait", "read")}
    comm = c.intra + c.inter
    prev_end = 0.0
    gend = [0.0] * pods
    for k in range(steps):
        bwd_ready = 0.0
        for p, r in enumerate(ranks):
            ready, read_s = _fetch(c, r, k, float(noise.read[p, k]), float(noise.decode[p, k]))
            t = max(ready, r.main_free)
            out["data_wait"][p, k] = max(0.0, ready - r.main_free)
            out["read"][p, k] = read_s
            r.consumed[k] = t
            t += c.collate / c.speed + c.faults
            if c.h2d_blocking:
                t = max(t, r.copy_free) + c.h2d
                copy_done = r.copy_free = t
            else:
                copy_done = r.copy_free = max(t, r.copy_free) + c.h2d
            launch_end = t + c.launch
            kt = c.kernels[p] * float(noise.gpu[p, k])
            gend[p] = max(max(prev_end, copy_done, t) + kt, launch_end)
            bwd_ready = max(bwd_ready, gend[p] - c.overlap * c.backward_share * kt)
            out["kernel"][p, k] = kt
            r.main_free = max(launch_end, prev_end)
        end = max(max(gend), bwd_ready + comm) if comm > 0 else max(gend)
        for p in range(pods):
            # NCCL kernels run (and wait for slower peers) until the step ends: GPU_UTIL counts them
            out["gpu_busy"][p, k] = out["kernel"][p, k] + (end - gend[p] if comm > 0 else 0.0)
        ends[k] = prev_end = end
    total = max(ends[-1], 1e-9)
    busy = np.array([r.wbusy / total / max(1, c.workers) for r in ranks])
    warm = min(steps // 3, c.queue + 8)
    return LoopRun(ends, out["gpu_busy"], out["kernel"], out["data_wait"], out["read"], busy, c, warm)
