"""The step model: where one training iteration's time goes, and which stage bounds it.

An iteration is two pipelines that meet at the batch hand-off. The loader's W worker processes each
read a batch (waiting ``read`` seconds on storage) and decode it (``decode`` core-seconds); together
they deliver one batch every ``max((read + decode) / W, bytes / storage_bps, decode / min(W, cores))``
seconds. The trainer process copies the batch to the GPU (the exposed part of the copy, ``h2d``), runs
the kernels (each kernel group lasts ``max(compute, memory)``: the roofline, Williams et al., CACM
2009), synchronises gradients (``comm``, of which backward kernels hide up to ``overlap`` x kernels)
and stalls on host memory reclaim and swap-in (``swap``). Data-parallel pods meet at every
all-reduce, so the job's step is the slowest pod's.

The label of a job is the class of the stage whose removal shortens the whole window's time most
(DESIGN.md's definition), found by re-running this model with that stage taken away.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.verdict import Bottleneck

Array = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Stages:
    """Per-pod, per-sample stage times in seconds per iteration; every array has shape (pods, T).

    Attributes:
        read: seconds one worker waits on storage per batch.
        storage: seconds the storage's throughput needs for one batch's bytes.
        decode: core-seconds of decode/augment/collate per batch.
        workers: loader worker processes per pod, shape (pods, 1).
        cores: cores the pod's loader can use (its CPU limit or the node's free cores), shape (pods, 1).
        h2d: exposed host-to-device copy seconds.
        comp_a, mem_a: compute- and memory-limited seconds of the matmul-heavy kernels.
        comp_b, mem_b: the same for bandwidth-heavy kernels (embeddings, norms, optimizer, attention).
        comm: collective seconds per iteration (after gradient accumulation spreads them).
        overlap: share of kernel time that can hide the collectives, shape (pods, 1).
        swap: seconds the trainer stalls in reclaim and swap-in.
    """

    read: Array
    storage: Array
    decode: Array
    workers: Array
    cores: Array
    h2d: Array
    comp_a: Array
    mem_a: Array
    comp_b: Array
    mem_b: Array
    comm: Array
    overlap: Array
    swap: Array


@dataclass(frozen=True)
class Timing:
    """The model's account of one window, per pod and sample (shape (pods, T)) and per job (T,)."""

    loader: Array
    kernels: Array
    comm_exposed: Array
    gpu_side: Array
    pod_step: Array
    step: Array


def kernels(s: Stages) -> Array:
    """Kernel seconds per iteration: each group runs at its roofline bound."""
    k: Array = np.maximum(s.comp_a, s.mem_a) + np.maximum(s.comp_b, s.mem_b)
    return k


def timing(s: Stages) -> Timing:
    """Run the model: each pod's loader and GPU side, and the job's step (the slowest pod's)."""
    loader = np.maximum(
        np.maximum((s.read + s.decode) / s.workers, s.storage), s.decode / np.minimum(s.workers, s.cores)
    )
    kern = kernels(s)
    comm_exposed = np.maximum(0.0, s.comm - s.overlap * kern)
    gpu_side = s.h2d + kern + comm_exposed + s.swap
    pod_step = np.maximum(loader, gpu_side)
    step = pod_step.max(axis=0)
    return Timing(loader, kern, comm_exposed, gpu_side, pod_step, step)


def _zero(a: Array) -> Array:
    return np.zeros_like(a)


def removed(s: Stages, cls: Bottleneck) -> Stages:
    """The same job with one class's stage taken away (made free)."""
    if cls is Bottleneck.IO:
        return replace(s, read=_zero(s.read), storage=_zero(s.storage))
    if cls is Bottleneck.CPU:
        return replace(s, decode=_zero(s.decode))
    if cls is Bottleneck.INTERCONNECT:
        return replace(s, h2d=_zero(s.h2d), comm=_zero(s.comm))
    if cls is Bottleneck.GPU:
        return replace(s, comp_a=_zero(s.comp_a), comp_b=_zero(s.comp_b))
    if cls is Bottleneck.MEMORY:
        return replace(s, mem_a=_zero(s.mem_a), mem_b=_zero(s.mem_b), swap=_zero(s.swap))
    raise ValueError(f"no stage for {cls}")


LABELLED = (Bottleneck.IO, Bottleneck.CPU, Bottleneck.INTERCONNECT, Bottleneck.GPU, Bottleneck.MEMORY)


def removal_speedups(s: Stages, training: npt.NDArray[np.bool_] | None = None) -> dict[Bottleneck, float]:
    """How much faster the window's training samples would run with each stage removed.

    Args:
        s: the stage times.
        training: which samples are training (pauses such as checkpoints excluded); all when None.
    """
    base = timing(s).step
    mask = np.ones(base.shape, dtype=bool) if training is None else training
    total = float(base[mask].sum())
    return {cls: total / float(timing(removed(s, cls)).step[mask].sum()) for cls in LABELLED}


def label_of(speedups: dict[Bottleneck, float]) -> Bottleneck:
    """The class whose removal speeds the job up most."""
    return max(speedups, key=lambda c: speedups[c])
