"""The step model: what one optimizer step of a synchronous data-parallel job waits for.

Each pod runs two things at once. Its data loader (worker processes reading and decoding the next
batches, ahead of the trainer) and its GPU path (copies to the device, the kernels, host-side work
the trainer waits for). A step cannot start before its batch is ready, so a pod's step takes the
longer of the two. The pods then meet in a collective (all-reduce, reduce-scatter); the part of
the collective that the backward pass does not hide is added once, and every pod waits for the
slowest pod first. In seconds per step::

    input_p = max(io_p, cpu_p)
    gpu_p   = h2d_p + (tc_p + hbm_p) * (1 + bubble) + launch_p + hostmem_p + cpu_serial_p
    T       = max over live pods of max(input_p, gpu_p) + max(0, comm - overlap * 2/3 * compute)

Stages belong to classes (shared/DESIGN.md): io -> IO; cpu (loader) and cpu_serial (host-side work
the trainer waits for, as in optimizer offload) -> CPU; h2d and comm -> Interconnect; tc (kernels
that keep tensor pipes busy), launch (gaps between tiny kernels) -> GPU; hbm (kernels that wait on
device memory) and hostmem (swap-in and reclaim stalls) -> Memory. A job's label is the class whose
removal shortens the window's steps most; its strength is how much more that removal gains than the
runner-up's.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.verdict import Bottleneck

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

POD_STAGES = ("io", "cpu", "cpu_serial", "h2d", "tc", "hbm", "launch", "hostmem")

CLASS_STAGES: dict[Bottleneck, tuple[str, ...]] = {
    Bottleneck.IO: ("io",),
    Bottleneck.CPU: ("cpu", "cpu_serial"),
    Bottleneck.INTERCONNECT: ("h2d", "comm"),
    Bottleneck.GPU: ("tc", "launch"),
    Bottleneck.MEMORY: ("hbm", "hostmem"),
}

# The backward pass is about two thirds of a step's compute: the part a bucketed all-reduce can hide under.
BACKWARD_SHARE = 2.0 / 3.0


def step_time(
    stages: Mapping[str, FloatArray],
    comm: FloatArray,
    alive: BoolArray,
    *,
    bubble: float,
    overlap: float,
    removed: tuple[str, ...] = (),
) -> tuple[FloatArray, FloatArray]:
    """Step time of the job, and each pod's own busy time, at each sample.

    Args:
        stages: per-pod stage seconds, each shape (P, T) (see :data:`POD_STAGES`).
        comm: the collective's seconds per step, shape (T,).
        alive: which pods take part, shape (P, T).
        bubble: pipeline-parallel idle share of compute, as (pp - 1) / micro-batches.
        overlap: share of the backward pass under which the collective can run.
        removed: stages taken out (their time set to zero).

    Returns:
        (T, W): the job's step seconds, shape (T,), and each pod's own work before the collective, shape (P, T).
    """

    def get(name: str) -> FloatArray:
        return np.zeros_like(stages["tc"]) if name in removed else stages[name]

    compute = (get("tc") + get("hbm")) * (1.0 + bubble)
    gpu = get("h2d") + compute + get("launch") + get("hostmem") + get("cpu_serial")
    own = np.maximum(np.maximum(get("io"), get("cpu")), gpu)
    slowest = np.where(alive, own, 0.0).max(axis=0)
    hidden = overlap * BACKWARD_SHARE * np.where(alive, compute, 0.0).max(axis=0)
    exposed = np.zeros_like(comm) if "comm" in removed else np.maximum(comm - hidden, 0.0)
    return slowest + exposed, own


def class_gains(
    stages: Mapping[str, FloatArray],
    comm: FloatArray,
    alive: BoolArray,
    progress: FloatArray,
    *,
    bubble: float,
    overlap: float,
) -> dict[Bottleneck, float]:
    """How much faster the window's steps would run without each class's stages (factors >= 1).

    The window's work is the steps it completes (progress / T summed); the gain is the window's
    progress time over the time the same steps take with the class removed.
    """
    base, _ = step_time(stages, comm, alive, bubble=bubble, overlap=overlap)
    weight = progress / np.maximum(base, 1e-9)
    total = float(progress.sum())
    gains = {}
    for cls, names in CLASS_STAGES.items():
        without, _ = step_time(stages, comm, alive, bubble=bubble, overlap=overlap, removed=names)
        gains[cls] = total / max(float((weight * without).sum()), 1e-12)
    return gains


def label_of(gains: Mapping[Bottleneck, float]) -> tuple[Bottleneck, float]:
    """The class whose removal gains most, and how much more it gains than the runner-up's."""
    ranked = sorted(gains.items(), key=lambda kv: kv[1], reverse=True)
    (best, top), (_, second) = ranked[0], ranked[1]
    return best, top / max(second, 1.0)


def scale_to_strength(
    stages: dict[str, FloatArray],
    comm: FloatArray,
    alive: BoolArray,
    progress: FloatArray,
    *,
    target: Bottleneck,
    grow: tuple[str, ...],
    strength: float,
    bubble: float,
    overlap: float,
) -> tuple[dict[str, FloatArray], FloatArray, float]:
    """Scale the ``grow`` stages until ``target`` leads the runner-up by ``strength`` (or as near as it can).

    A bisection on a log scale over x in [1/64, 64]; the lead only grows with the target's stages.

    Returns:
        The scaled stages, the scaled comm, and the scale used.
    """

    def scaled(x: float) -> tuple[dict[str, FloatArray], FloatArray]:
        out = {k: (v * x if k in grow else v) for k, v in stages.items()}
        return out, comm * x if "comm" in grow else comm

    def lead(x: float) -> float:
        s, c = scaled(x)
        gains = class_gains(s, c, alive, progress, bubble=bubble, overlap=overlap)
        others = max(g for k, g in gains.items() if k is not target)
        return gains[target] / max(others, 1.0)

    lo, hi = np.log(1 / 64), np.log(64.0)
    for _ in range(22):
        mid = 0.5 * (lo + hi)
        if lead(float(np.exp(mid))) < strength:
            lo = mid
        else:
            hi = mid
    x = float(np.exp(hi))
    s, c = scaled(x)
    return s, c, x
