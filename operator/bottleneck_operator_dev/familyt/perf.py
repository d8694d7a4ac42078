"""The analytic performance models, one per stage, and the composition of a step from them.

Every function returns seconds per training step of one GPU's rank. The label of a job is the
class of the stage whose time, set to zero in the same composition, shortens the step most
(:func:`binding_stage`), so the label is a property of the model, not a share picked by hand.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from bottleneck_operator.contract.verdict import Bottleneck

# Stage -> verdict class, as DESIGN.md defines the classes.
STAGE_CLASS: dict[str, Bottleneck] = {
    "storage": Bottleneck.IO,
    "decode": Bottleneck.CPU,
    "host_memory": Bottleneck.MEMORY,
    "h2d": Bottleneck.INTERCONNECT,
    "collective": Bottleneck.INTERCONNECT,
    "compute": Bottleneck.GPU,
    "launch": Bottleneck.GPU,
    "hbm": Bottleneck.MEMORY,
}
STAGES: tuple[str, ...] = tuple(STAGE_CLASS)


@dataclass(frozen=True)
class KernelGroup:
    """Kernels of one layer type in one step: total FLOPs and HBM bytes, and how many launches.

    Attributes:
        flops: floating-point operations of all launches together.
        bytes: device-memory bytes they read and write.
        launches: kernel launches per step.
        tensor: runs on the tensor pipes at the job's precision (else the FP32/FP16 vector pipes).
        backward: share of the group's time in the backward pass (gradient buckets overlap it).
    """

    flops: float
    bytes: float
    launches: int
    tensor: bool
    backward: float = 2.0 / 3.0


@dataclass(frozen=True)
class Roofline:
    """Where a step's kernels sit on the roofline: seconds in each regime, and the work moved."""

    compute: float  # kernels above the ridge point (compute-bound)
    hbm: float  # kernels below it (bandwidth-bound)
    launch: float  # GPU idle between launches of kernels shorter than the launch latency
    backward: float  # seconds of kernel time in the backward pass
    tensor_time: float  # seconds of compute-bound time on tensor pipes
    flops: float
    bytes: float


def roofline(
    groups: tuple[KernelGroup, ...],
    *,
    peak_tensor: float,
    peak_vector: float,
    hbm_bps: float,
    compute_eff: float,
    bw_eff: float,
    launch_s: float,
) -> Roofline:
    """Each kernel group placed on the roofline of the part.

    A launch runs for ``max(flops / (peak x eff), bytes / (bandwidth x eff))``: below the ridge point
    (``peak / bandwidth`` FLOP per byte) the bytes decide, above it the FLOPs. A launch shorter than
    the host's launch latency leaves the GPU idle for the difference: that idle time is the launch stage.
    """
    compute = hbm = launch = backward = tensor_time = flops = moved = 0.0
    for g in groups:
        peak = peak_tensor if g.tensor else peak_vector
        t_flop = g.flops / (peak * compute_eff)
        t_byte = g.bytes / (hbm_bps * bw_eff)
        t = max(t_flop, t_byte)
        if t_flop >= t_byte:
            compute += t
            if g.tensor:
                tensor_time += t
        else:
            hbm += t
        per_launch = t / max(g.launches, 1)
        launch += g.launches * max(0.0, launch_s - per_launch)
        backward += g.backward * t
        flops += g.flops
        moved += g.bytes
    return Roofline(compute, hbm, launch, backward, tensor_time, flops, moved)


@dataclass(frozen=True)
class Collective:
    """A hierarchical ring all-reduce of one step's gradients (alpha-beta model)."""

    seconds: float
    intra_bytes: float  # bytes one GPU sends (and receives) on its intra-node link per step
    inter_bytes: float  # bytes one node sends (and receives) on the fabric per step


def allreduce(
    grad_bytes: float,
    *,
    gpus_per_node: int,
    nodes: int,
    intra_bps: float,
    intra_alpha: float,
    inter_bps: float,
    inter_alpha: float,
    bucket_bytes: float,
) -> Collective:
    """Reduce-scatter inside the node, ring all-reduce of the shards across nodes, all-gather back.

    A ring over n ranks moves 2(n-1)/n of the buffer per rank in 2(n-1) steps, each paying the
    latency alpha; gradients go in buckets, each its own collective.
    """
    g, n = gpus_per_node, nodes
    buckets = max(1, math.ceil(grad_bytes / bucket_bytes))
    t = 0.0
    intra = inter = 0.0
    if g > 1:
        intra = 2.0 * (g - 1) / g * grad_bytes
        t += intra / intra_bps + buckets * 2 * (g - 1) * intra_alpha
    if n > 1:
        inter = 2.0 * (n - 1) / n * grad_bytes  # the node's g shards of B/g each
        t += inter / inter_bps + buckets * 2 * (n - 1) * inter_alpha
    return Collective(t, intra, inter)


def input_times(
    *,
    batch: int,
    sample_bytes: float,
    decode_s: float,
    gpus_per_node: int,
    storage_bps: float,
    worker_cores: float,
) -> tuple[float, float]:
    """Seconds per batch of one rank's loader: storage reads and decode.

    All ranks of a node read at once, so a rank gets 1/g of the node's storage throughput; decode
    runs on the cores the rank's workers get (the fewer of its workers and its share of the cores).
    """
    storage = batch * sample_bytes * gpus_per_node / storage_bps
    decode = batch * decode_s / max(worker_cores, 1e-3)
    return storage, decode


def host_memory_stall(
    *,
    working_set: float,
    limit: float,
    touched: float,
    fault_s: float,
    parallel: float,
) -> tuple[float, float]:
    """Seconds per step the rank's processes stall on memory, and the pages faulted back per step.

    The part of the working set above the cgroup limit lives in swap (or, without swap, is
    refaulted from the page cache); ``touched`` of it is needed again every step, a 4 KiB page at a
    time, each fault costing ``fault_s`` with ``parallel`` faults in flight.
    """
    over = max(0.0, working_set - limit)
    pages = touched * over / 4096.0
    return pages * fault_s / max(parallel, 1.0), pages


@dataclass(frozen=True)
class Overlap:
    """What overlaps and what serialises in one job's step (a per-job draw).

    Attributes:
        workers: DataLoader worker processes per rank (0: loading runs in the trainer's process).
        pipelined: a worker's read and another's decode run at once (else they add up).
        cv2: squared coefficient of variation of the loader's batch times (queueing waits).
        h2d_overlap: share of the host-to-device copy hidden behind compute (pinned, non_blocking).
        comm_overlap: share of the backward pass gradient buckets can hide behind.
        buckets: gradient buckets (the last one can never hide).
        mem_on_workers: share of the trainer's memory stall the loader workers also suffer.
    """

    workers: int
    pipelined: bool
    cv2: float
    h2d_overlap: float
    comm_overlap: float
    buckets: int
    mem_on_workers: float


@dataclass(frozen=True)
class StageTimes:
    """Seconds per step of each stage (full times; the composition decides what hides)."""

    storage: float
    decode: float
    host_memory: float
    h2d: float
    collective: float
    compute: float
    launch: float
    hbm: float
    backward: float  # seconds of the kernel time that is backward pass

    def without(self, stage: str) -> StageTimes:
        """The same step with one stage's time set to zero."""
        if stage not in STAGE_CLASS:
            raise ValueError(f"unknown stage {stage!r}")
        changed = replace(self, **{stage: 0.0})
        if stage in ("compute", "hbm"):
            # the backward pass shrinks with the kernels removed, pro rata
            kernels = self.compute + self.hbm
            kept = changed.compute + changed.hbm
            changed = replace(changed, backward=self.backward * (kept / kernels if kernels > 0 else 0.0))
        return changed


@dataclass(frozen=True)
class Composed:
    """One composed step and its parts."""

    step: float
    trainer: float
    loader: float
    wait: float  # seconds the trainer waits on the loader per step
    comm_exposed: float
    h2d_exposed: float


def compose(st: StageTimes, ov: Overlap) -> Composed:
    """The step time of one rank.

    The trainer's serial path is memory stalls, kernels, launch gaps, and the exposed parts of the
    collective (what the backward pass cannot hide, never less than the last bucket) and of the
    copy. Copy engine and network run beside it, so each also bounds the step on its own. The
    loader is a queue of k workers: its batch time is read and decode (overlapped when pipelined);
    the trainer waits when the loader is slower, and near balance also on the loader's variance
    (Sakasegawa's G/G/k approximation, bounded because the prefetch queue is finite).
    """
    kernels = st.compute + st.hbm + st.launch
    hidden = min(st.collective * (1.0 - 1.0 / ov.buckets), ov.comm_overlap * st.backward)
    comm_exposed = st.collective - hidden
    h2d_exposed = st.h2d * (1.0 - ov.h2d_overlap)
    loader = (max(st.storage, st.decode) if ov.pipelined else st.storage + st.decode) + (
        ov.mem_on_workers * st.host_memory
    )
    serial = st.host_memory + kernels + comm_exposed + h2d_exposed
    if ov.workers == 0:
        serial += loader  # no workers: the trainer loads its own batches
        loader = 0.0
    trainer = max(serial, st.h2d, st.collective)
    hi, lo = max(trainer, loader), min(trainer, loader)
    wait = 0.0
    if hi > 0 and lo > 0 and ov.workers > 0:
        k = ov.workers
        wait = lo * ov.cv2 / (2.0 * k) * (lo / hi) ** (math.sqrt(2.0 * (k + 1)) - 1.0)
    step = hi + wait
    trainer_wait = step - trainer
    return Composed(step, trainer, loader, trainer_wait, comm_exposed, h2d_exposed)


def reductions(st: StageTimes, ov: Overlap) -> dict[str, float]:
    """Seconds each stage's removal takes off the step."""
    base = compose(st, ov).step
    return {s: base - compose(st.without(s), ov).step for s in STAGES}


def binding_stage(st: StageTimes, ov: Overlap) -> tuple[str, float]:
    """The stage whose removal shortens the step most, and the runner-up's reduction over its own (0..1).

    The ratio is 1 when two stages of different classes tie: a hard case.
    """
    red = reductions(st, ov)
    first = max(STAGES, key=lambda s: red[s])
    cls = STAGE_CLASS[first]
    others = [red[s] for s in STAGES if STAGE_CLASS[s] is not cls]
    second = max(others) if others else 0.0
    return first, (second / red[first] if red[first] > 0 else 1.0)
