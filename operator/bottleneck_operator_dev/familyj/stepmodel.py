"""The training step as stages, and the label as the stage whose removal shortens it most.

One micro-step of one pod:

- the input pipeline (loader workers, prefetching ahead of the GPU) reads from storage and decodes
  on CPU; reading and decoding overlap across workers by ``loader_overlap``;
- the training process runs its own serial host work (Python, on-the-fly tokenisation, a host-side
  optimiser step amortised over gradient accumulation), copies the batch to the GPU (hidden behind
  compute by ``h2d_overlap`` when pinned and asynchronous), runs its kernels (roofline: each kernel
  group takes the longer of its math time and its HBM time), exchanges gradients (once per
  ``accum`` micro-steps, hidden behind backward by ``comm_overlap``), waits for pipeline bubbles,
  and stalls on reclaim and swap-in when its host memory is short.

The prefetch queue decouples the two sides, so a pod's step is the longer of them; synchronous
data parallelism makes every pod wait for the slowest at each collective. Removing a class's
stages (zero time, or unlimited bandwidth) and measuring the step again decides the label: the
class whose removal shortens the mean step most (DESIGN.md's definition of the bottleneck).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator_dev.familyj.plan import Plan

FloatArray = npt.NDArray[np.float64]

# What removing each class takes away from the step.
REMOVALS: dict[Bottleneck, frozenset[str]] = {
    Bottleneck.IO: frozenset({"read"}),
    Bottleneck.CPU: frozenset({"cpu"}),
    Bottleneck.INTERCONNECT: frozenset({"h2d", "comm"}),
    Bottleneck.GPU: frozenset({"math"}),
    Bottleneck.MEMORY: frozenset({"hbm", "hostmem"}),
}


@dataclass(frozen=True)
class Factors:
    """Per-pod, per-tick multipliers on the nominal plan (1.0: nominal); shapes (P, K).

    Attributes:
        work: work per step (sequence lengths, image sizes vary).
        store: storage bandwidth available.
        cpu: CPU available to the pod (neighbours, frequency).
        net: fabric bandwidth available (congestion from other jobs).
        clock: SM clock against boost (power management, caps, silicon spread).
        mem: intensity of host-memory stalls.
    """

    work: FloatArray
    store: FloatArray
    cpu: FloatArray
    net: FloatArray
    clock: FloatArray
    mem: FloatArray


@dataclass(frozen=True)
class Stages:
    """Stage times of each pod's micro-step, seconds, shapes (P, K); ``step`` is the job's."""

    read: FloatArray
    decode: FloatArray
    loader: FloatArray
    main: FloatArray
    h2d: FloatArray
    gemm: FloatArray
    memk: FloatArray
    small: FloatArray
    gpu: FloatArray
    comm: FloatArray
    comm_exposed: FloatArray
    swap: FloatArray
    bubble: FloatArray
    gpu_side: FloatArray
    own: FloatArray
    step: FloatArray


def stages(
    plan: Plan, f: Factors, remove: frozenset[str] = frozenset(), scale: Mapping[str, FloatArray] | None = None
) -> Stages:
    """The stage times of every pod and tick, with the stages in ``remove`` taken away.

    Args:
        plan: the job.
        f: the per-pod, per-tick factors.
        remove: stage groups to take away ("read", "cpu", "h2d", "comm", "math", "hbm", "hostmem").
        scale: plan demand name -> multiplier broadcast against the factors (a recipe tries many
            strengths of its bounding stage at once this way).
    """
    k = scale or {}

    def d(name: str) -> FloatArray | float:
        value: float = getattr(plan, name)
        return value * k[name] if name in k else value

    mem_on = 0.0 if "hostmem" in remove else 1.0
    read = np.zeros_like(f.work) if "read" in remove else d("read_s") * f.work / f.store
    cpu_on = 0.0 if "cpu" in remove else 1.0
    mem_slow = 1.0 + d("loader_mem") * f.mem * mem_on
    decode = cpu_on * d("decode_s") * f.work / f.cpu * mem_slow
    q = plan.loader_overlap
    loader = np.maximum(read, decode) + (1.0 - q) * np.minimum(read, decode)
    main = cpu_on * (d("main_s") * f.work + d("hostopt_s") / plan.accum) / f.cpu * mem_slow
    math_on = 0.0 if "math" in remove else 1.0
    byte_on = 0.0 if "hbm" in remove else 1.0
    slice_slow = 1.0 / (1.0 - plan.timeslice) if plan.timeslice else 1.0
    gemm = np.maximum(math_on * d("gemm_flop_s") / f.clock, byte_on * d("gemm_byte_s")) * f.work * slice_slow
    memk = np.maximum(math_on * d("memk_flop_s") / f.clock, byte_on * d("memk_byte_s")) * f.work * slice_slow
    small = math_on * d("small_s") * f.work / f.clock
    gpu = gemm + memk + small
    h2d = np.zeros_like(gpu) if "h2d" in remove else d("h2d_s") * f.work
    h2d_exposed = h2d * (1.0 - plan.h2d_overlap) + np.maximum(0.0, h2d * plan.h2d_overlap - gpu)
    if "comm" in remove or plan.comm_s == 0.0:
        comm = np.zeros_like(gpu)
    else:
        comm = d("comm_s") * (plan.comm_intra_share + (1.0 - plan.comm_intra_share) / f.net)
    # backward is about two thirds of a micro-step's kernels; only the last micro-step's backward
    # of an accumulation round can hide the exchange
    comm_exposed = np.maximum(0.0, comm - plan.comm_overlap * 0.66 * gpu) / plan.accum
    swap = d("swap_s") * f.mem * mem_on
    bubble = plan.bubble / (1.0 - plan.bubble) * (gpu + comm_exposed)
    gpu_side = main + h2d_exposed + gpu + comm_exposed + bubble + swap
    own = np.maximum(loader, gpu_side)
    step = np.broadcast_to(own.max(axis=0, keepdims=True), own.shape)
    return Stages(
        read, decode, loader, main, h2d, gemm, memk, small, gpu, comm / plan.accum, comm_exposed, swap, bubble,
        gpu_side, own, step,
    )  # fmt: skip


@dataclass(frozen=True)
class Account:
    """Where the step goes: the mean step and each class's saving when its stages are removed.

    Attributes:
        step: mean job step time over the training ticks, seconds.
        savings: class -> seconds the mean step shortens when that class's stages are removed.
        label: the class with the largest saving.
        margin: the label's saving over the runner-up's (>= 1).
        speedup: step / (step - the label's saving).
        hbm_saving, hostmem_saving: the two Memory mechanisms' separate savings.
        h2d_saving, comm_saving: the two Interconnect paths' separate savings.
    """

    step: float
    savings: dict[Bottleneck, float]
    label: Bottleneck
    margin: float
    speedup: float
    hbm_saving: float
    hostmem_saving: float
    h2d_saving: float
    comm_saving: float


def savings(
    plan: Plan, f: Factors, scale: Mapping[str, FloatArray] | None = None
) -> tuple[FloatArray, dict[Bottleneck, FloatArray]]:
    """Per column (tick, or candidate strength): the job's step, and each class's saving when removed."""
    base = stages(plan, f, frozenset(), scale).step[0]
    return base, {c: base - stages(plan, f, r, scale).step[0] for c, r in REMOVALS.items()}


def account(plan: Plan, f: Factors, ticks: slice | npt.NDArray[np.int64] | None = None) -> Account:
    """The removal account of a plan under the given factors (over ``ticks`` of them)."""
    sel = ticks if ticks is not None else slice(None)
    base_steps, by_class = savings(plan, f)
    base = float(base_steps[sel].mean())
    saved = {c: float(v[sel].mean()) for c, v in by_class.items()}
    ranked = sorted(saved, key=lambda c: saved[c], reverse=True)
    top, second = saved[ranked[0]], max(saved[ranked[1]], 1e-9)

    def saving(remove: str) -> float:
        return base - float(stages(plan, f, frozenset({remove})).step[0, sel].mean())

    return Account(
        step=base,
        savings=saved,
        label=ranked[0],
        margin=top / second,
        speedup=base / max(base - top, 1e-9),
        hbm_saving=saving("hbm"),
        hostmem_saving=saving("hostmem"),
        h2d_saving=saving("h2d"),
        comm_saving=saving("comm"),
    )


def nominal(plan: Plan) -> Factors:
    """Factors of one pod and one tick at nominal conditions (for tuning a recipe cheaply)."""
    one = np.ones((plan.pods, 1))
    slowed = {"store": one.copy(), "cpu": one.copy(), "clock": one * plan.cap_clock}
    if plan.straggler is not None:
        pod, stage, slow = plan.straggler
        slowed[stage][pod, 0] /= slow
    return Factors(one, slowed["store"], slowed["cpu"], one, slowed["clock"], one)
