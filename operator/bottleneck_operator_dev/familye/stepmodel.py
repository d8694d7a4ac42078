"""One training step as stages, and the label that follows from it.

A synchronous data-parallel step on every pod runs two things side by side:

- the GPU side: compute-bound kernels (slowed by the pod's slowest clock), bandwidth-bound kernels,
  a pipeline bubble proportional to both, the part of the gradient sync that the last micro-batch's
  backward pass cannot hide, tensor/pipeline-parallel transfers, the exposed host-to-device copy and
  the time the trainer itself loses to memory reclaim;
- the input side: loader workers that each wait on storage, decode on a share of a core and lose
  time to reclaim per sample, bounded also by the storage's bandwidth.

With prefetching the two overlap, so a pod needs ``max(gpu side, input)``; the step waits for the
slowest pod. The label is the class whose stages, made free, shorten that step the most (the
definition in the project's design: "the stage whose removal would speed the job up most").
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.verdict import CLASSES, Bottleneck

FloatArray = npt.NDArray[np.float64]
_NO_STAGE: frozenset[Bottleneck] = frozenset()


@dataclass(frozen=True)
class Step:
    """Seconds and capacities of one optimizer step; arrays hold one value per pod.

    Attributes:
        k: micro-batches per optimizer step (gradient accumulation: one sync per k).
        t_math: compute-bound kernel time per step at full clock, s.
        math_bytes: share of ``t_math`` those kernels would still need with infinite compute.
        t_hbm: bandwidth-bound kernel time per step, s.
        hbm_math: share of ``t_hbm`` those kernels would still need with infinite bandwidth.
        bubble: pipeline-parallel idle time as a share of the pod's kernel time.
        clock: per pod, the slowest GPU's clock during compute, as a share of boost.
        t_comm: gradient sync time on its links per step, s.
        overlap: share of the last micro-batch's backward pass the sync can hide behind.
        t_tp: tensor/pipeline-parallel transfers per step, not hidden, s.
        t_h2d: host-to-device input copy per step, s.
        h2d_overlap: share of that copy hidden behind compute (pinned, non-blocking).
        samples: samples per step per pod.
        cpu_cost: core-seconds to decode and augment one sample.
        cores: per pod, cores the loader workers can use.
        workers: loader processes per pod.
        read_bytes: bytes read from storage per sample (after the page cache).
        io_bps: per pod, the storage bandwidth available, bytes/s.
        latency: storage wait per sample and worker, s.
        stall: per pod, reclaim/refault time per sample and worker, s.
        main_stall: per pod, reclaim/refault time the trainer processes lose per step, s.
        grad_bytes: gradient bytes each GPU synchronises per step.
        nic_bytes: bytes each node sends (and receives) on the fabric per step.
        nvlink_bytes: bytes each GPU sends (and receives) over NVLink per step.
        p2p_bytes: bytes each GPU sends (and receives) peer-to-peer over PCIe per step.
        h2d_bytes: host-to-device bytes per GPU and step.
        comm_link: the link that bounds the gradient sync: "nic", "nvlink", "p2p" (PCIe) or "".
    """

    k: int
    t_math: float
    math_bytes: float
    t_hbm: float
    hbm_math: float
    bubble: float
    clock: FloatArray
    t_comm: float
    overlap: float
    t_tp: float
    t_h2d: float
    h2d_overlap: float
    samples: float
    cpu_cost: float
    cores: FloatArray
    workers: int
    read_bytes: float
    io_bps: FloatArray
    latency: float
    stall: FloatArray
    main_stall: FloatArray
    grad_bytes: float = 0.0
    nic_bytes: float = 0.0
    nvlink_bytes: float = 0.0
    p2p_bytes: float = 0.0
    h2d_bytes: float = 0.0
    comm_link: str = ""


@dataclass(frozen=True)
class PodTimes:
    """Where each pod's step goes, s (arrays over pods)."""

    math: FloatArray
    hbm: FloatArray
    bubble: FloatArray
    comm: FloatArray
    tp: FloatArray
    h2d: FloatArray
    main_stall: FloatArray
    gpu_side: FloatArray
    input: FloatArray
    worker_wait: FloatArray
    worker_cpu: FloatArray
    worker_stall: FloatArray


def _without(s: Step, removed: frozenset[Bottleneck]) -> Step:
    """The step with the named classes' stages made free."""
    zeros = np.zeros_like(s.cores)
    if Bottleneck.GPU in removed:
        s = replace(s, t_math=s.t_math * s.math_bytes, clock=np.ones_like(s.clock))
    if Bottleneck.MEMORY in removed:
        s = replace(s, t_hbm=s.t_hbm * s.hbm_math, stall=zeros, main_stall=zeros)
    if Bottleneck.INTERCONNECT in removed:
        s = replace(s, t_comm=0.0, t_tp=0.0, t_h2d=0.0)
    if Bottleneck.IO in removed:
        s = replace(s, latency=0.0, io_bps=np.full_like(s.io_bps, np.inf))
    if Bottleneck.CPU in removed:
        s = replace(s, cpu_cost=0.0)
    return s


def pod_times(s: Step, removed: frozenset[Bottleneck] = _NO_STAGE) -> PodTimes:
    """Each pod's stage times, with ``removed`` classes' stages made free."""
    s = _without(s, removed)
    math = s.t_math / s.clock
    hbm = np.full_like(math, s.t_hbm)
    kernels = math + hbm
    bubble = s.bubble * kernels
    hidden = s.overlap * (2.0 / 3.0) * kernels / s.k
    comm = np.maximum(0.0, s.t_comm - hidden)
    tp = np.full_like(math, s.t_tp)
    h2d = np.full_like(math, s.t_h2d * (1.0 - s.h2d_overlap))
    gpu_side = kernels + bubble + comm + tp + h2d + s.main_stall
    share = np.minimum(1.0, s.cores / s.workers)
    worker_cpu = np.full_like(math, s.cpu_cost) / np.maximum(share, 1e-9)
    worker_wait = np.full_like(math, s.latency)
    per_sample = worker_wait + worker_cpu + s.stall
    with np.errstate(divide="ignore"):
        rate = np.where(per_sample > 0, s.workers / per_sample, np.inf)
        if s.read_bytes > 0:
            rate = np.minimum(rate, s.io_bps / s.read_bytes)
        t_in = np.where(np.isfinite(rate), s.samples / rate, 0.0)
    return PodTimes(math, hbm, bubble, comm, tp, h2d, s.main_stall, gpu_side, t_in, worker_wait, worker_cpu, s.stall)


def step_time(s: Step, removed: frozenset[Bottleneck] = _NO_STAGE) -> float:
    """Seconds per optimizer step: the slowest pod's ``max(gpu side, input)``."""
    t = pod_times(s, removed)
    return float(np.max(np.maximum(t.gpu_side, t.input)))


def speedups(s: Step) -> dict[Bottleneck, float]:
    """How much faster the step gets when each class's stages are made free (factors >= 1)."""
    base = step_time(s)
    return {c: base / max(step_time(s, frozenset({c})), 1e-12) for c in CLASSES}


def label_of(s: Step) -> tuple[Bottleneck, float]:
    """The class whose removal speeds the step up most, and its lead over the runner-up (a ratio >= 1)."""
    ups = speedups(s)
    ranked = sorted(ups.items(), key=lambda kv: kv[1], reverse=True)
    return ranked[0][0], ranked[0][1] / ranked[1][1]


def memory_parts(s: Step) -> tuple[float, float]:
    """Speed-ups from removing host-memory stalls alone and HBM-bandwidth time alone: which Memory it is."""
    base = step_time(s)
    zeros = np.zeros_like(s.stall)
    host = replace(s, stall=zeros, main_stall=zeros)
    hbm = replace(s, t_hbm=s.t_hbm * s.hbm_math)
    return base / step_time(host), base / step_time(hbm)


def interconnect_parts(s: Step) -> dict[str, float]:
    """Speed-ups from freeing each kind of link alone: which Interconnect mechanism it is.

    ``network`` frees a fabric-bound sync; ``nvlink`` the tensor-parallel transfers and an
    NVLink-bound sync; ``pcie`` host-to-device copies and a sync that runs peer to peer over PCIe.
    """
    base = step_time(s)
    sync = {"network": "nic", "nvlink": "nvlink", "pcie": "p2p"}
    out = {}
    for part, link in sync.items():
        freed = replace(s, t_comm=0.0) if s.comm_link == link else s
        if part == "nvlink":
            freed = replace(freed, t_tp=0.0)
        if part == "pcie":
            freed = replace(freed, t_h2d=0.0)
        out[part] = base / step_time(freed)
    return out
