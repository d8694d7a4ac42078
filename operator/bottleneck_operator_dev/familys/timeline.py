"""The event timeline: what happens inside training steps, interval by interval.

Each pod runs one data-parallel rank per GPU; its GPUs do the same work, so one representative
rank per pod is simulated. Per step ``k``:

- DataLoader worker ``k % W`` reads batch ``k`` from storage, stalls on swapped-out host pages,
  then decodes/augments/collates it. It may start only when a prefetch slot is free: PyTorch keeps
  at most ``W * prefetch_factor`` batches in flight, so batch ``k`` waits for step ``k - Q`` to take
  its batch off the queue;
- the trainer blocks until batch ``k`` is ready (an empty queue), copies it host to device,
  stalls on its own swapped-out pages, runs forward and backward (compute-bound kernels, then
  bandwidth-bound ones), takes part in the gradient collective (bucketed and overlapped with
  backward, or exposed after it), then runs the optimizer (bandwidth-bound).

The collective of a step ends for every pod at the same instant: it cannot finish before the last
rank reaches it, so a slow pod makes every other pod wait.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.verdict import Bottleneck

FloatArray = npt.NDArray[np.float64]

# The stages a removal experiment can take out, and the class each belongs to (DESIGN.md's classes).
STAGES: tuple[str, ...] = ("read", "decode", "host_stall", "h2d", "collective", "compute", "hbm")
STAGE_CLASS: dict[str, Bottleneck] = {
    "read": Bottleneck.IO,
    "decode": Bottleneck.CPU,
    "host_stall": Bottleneck.MEMORY,
    "h2d": Bottleneck.INTERCONNECT,
    "collective": Bottleneck.INTERCONNECT,
    "compute": Bottleneck.GPU,
    "hbm": Bottleneck.MEMORY,
}

TICK = 0.05  # seconds: the painted timeline's resolution; each tick holds the exact share of it covered
FORWARD_SHARE = 1.0 / 3.0  # backward costs about twice the forward
LAST_BUCKET = 0.15  # share of the collective that waits for the last gradient bucket


@dataclass(frozen=True)
class PodCosts:
    """One pod's per-step durations (seconds), one entry per simulated step.

    Attributes:
        read, worker_stall, decode: a loader worker's time for batch k, in that order.
        h2d, trainer_stall: the trainer's copy and host-memory stall before step k's kernels.
        compute, hbm: compute-bound and bandwidth-bound kernel time of forward + backward.
        optimizer: the optimizer's (bandwidth-bound) kernel time.
        workers: DataLoader workers.
        depth: batches the loader may have in flight (workers x prefetch factor).
    """

    read: FloatArray
    worker_stall: FloatArray
    decode: FloatArray
    h2d: FloatArray
    trainer_stall: FloatArray
    compute: FloatArray
    hbm: FloatArray
    optimizer: FloatArray
    workers: int
    depth: int


@dataclass(frozen=True)
class Costs:
    """Every pod's costs and the job's collective.

    Attributes:
        pods: per-pod costs.
        collective: per-step duration of the gradient collective once every rank has joined (0: none).
        overlap: gradients are bucketed and reduced while backward still runs (DDP's default).
        first_bucket: share of backward done when the first bucket is ready.
        warmup: steps left out of the measured window while the prefetch queue settles.
    """

    pods: tuple[PodCosts, ...]
    collective: FloatArray
    overlap: bool
    first_bucket: float
    warmup: int

    @property
    def steps(self) -> int:
        return int(self.collective.size)


@dataclass
class Events:
    """One pod's intervals, as (start, end) lists in seconds."""

    spans: dict[str, tuple[list[float], list[float]]] = field(default_factory=dict)

    def add(self, name: str, start: float, end: float) -> None:
        if end > start:
            s, e = self.spans.setdefault(name, ([], []))
            s.append(start)
            e.append(end)


@dataclass(frozen=True)
class Run:
    """A simulated run: the measured wall time and, when recorded, every pod's intervals.

    Attributes:
        wall: seconds from the end of the warm-up steps to the end of the last step.
        origin: the time the measured part starts (the end of the warm-up).
        events: per pod, its intervals (empty unless recorded).
    """

    wall: float
    origin: float
    events: tuple[Events, ...] = ()


def _stage(arr: FloatArray, stage: str, removed: str | None) -> list[float]:
    if stage == removed:
        return [0.0] * arr.size
    values: list[float] = arr.tolist()
    return values


class _Rank:
    """One pod's representative rank while it runs: its loader workers, its queue and its trainer."""

    def __init__(self, pc: PodCosts, steps: int, removed: str | None, events: Events | None) -> None:
        self.rd = _stage(pc.read, "read", removed)
        self.ws = _stage(pc.worker_stall, "host_stall", removed)
        self.dc = _stage(pc.decode, "decode", removed)
        self.hd = _stage(pc.h2d, "h2d", removed)
        self.ts = _stage(pc.trainer_stall, "host_stall", removed)
        self.cp = _stage(pc.compute, "compute", removed)
        self.hb = _stage(pc.hbm, "hbm", removed)
        self.op = _stage(pc.optimizer, "hbm", removed)
        self.workers, self.depth = pc.workers, pc.depth
        self.free = [0.0] * pc.workers  # when each worker is next idle
        self.consumed = [0.0] * steps  # when the trainer took batch k off the queue
        self.tfree = 0.0  # when the trainer finished its last step
        self.events = events

    def forward_backward(self, k: int) -> tuple[float, float]:
        """Load batch k, then run the trainer up to the end of backward; returns backward's start and end."""
        w = k % self.workers
        slot = self.consumed[k - self.depth] if k >= self.depth else 0.0
        s = self.free[w] if self.free[w] > slot else slot  # a prefetch slot frees when step k - Q starts
        e1 = s + self.rd[k]
        e2 = e1 + self.ws[k]
        e3 = e2 + self.dc[k]
        self.free[w] = e3
        t0 = self.tfree
        t1 = e3 if e3 > t0 else t0  # the trainer blocks on an empty queue
        self.consumed[k] = t1
        t2 = t1 + self.hd[k]
        t3 = t2 + self.ts[k]
        fc, fm = self.cp[k] * FORWARD_SHARE, self.hb[k] * FORWARD_SHARE
        t4 = t3 + fc + fm
        bc = self.cp[k] - fc
        t5 = t4 + bc + (self.hb[k] - fm)
        ev = self.events
        if ev is not None:
            for name, a, b in (
                ("read", s, e1),
                ("worker_stall", e1, e2),
                ("decode", e2, e3),
                ("wait", t0, t1),
                ("h2d", t1, t2),
                ("trainer_stall", t2, t3),
                ("compute", t3, t3 + fc),
                ("hbm", t3 + fc, t4),
                ("compute", t4, t4 + bc),
                ("hbm", t4 + bc, t5),
            ):
                ev.add(name, a, b)
        return t4, t5

    def optimizer(self, k: int, ready: float) -> float:
        """Run the optimizer once the collective (or backward) is done; returns the step's end."""
        self.tfree = ready + self.op[k]
        if self.events is not None:
            self.events.add("hbm", ready, self.tfree)
        return self.tfree


def simulate(costs: Costs, removed: str | None = None, *, record: bool = False) -> Run:
    """Run the steps, optionally with one stage's durations set to zero.

    Args:
        costs: the per-step durations.
        removed: a stage of :data:`STAGES` whose durations become zero, or None.
        record: keep every interval (for the exporters); the removal experiments need only the wall time.

    Returns:
        The run.
    """
    steps = costs.steps
    events = tuple(Events() for _ in costs.pods) if record else ()
    ranks = [_Rank(pc, steps, removed, events[i] if record else None) for i, pc in enumerate(costs.pods)]
    comm = _stage(costs.collective, "collective", removed)
    ends = [0.0] * steps
    for k in range(steps):
        spans = [r.forward_backward(k) for r in ranks]
        last = max(e for _, e in spans)
        a = comm[k]
        if a > 0.0:
            # the collective ends for every rank at once: it cannot finish before the last rank joins
            if costs.overlap:
                cs = max(b + costs.first_bucket * (e - b) for b, e in spans)
                ce = max(cs + a, last + LAST_BUCKET * a)
            else:
                cs, ce = last, last + a
            for ev in events:
                ev.add("collective", cs, ce)
        ends[k] = max(r.optimizer(k, max(e, ce) if a > 0.0 else e) for r, (_, e) in zip(ranks, spans, strict=True))
    origin = ends[costs.warmup - 1] if costs.warmup > 0 else 0.0
    return Run(wall=ends[-1] - origin, origin=origin, events=events)


@dataclass(frozen=True)
class Segment:
    """A painted stretch of timeline: per-tick activity of each channel, repeated to fill a window.

    Attributes:
        length: seconds.
        channels: name -> per-tick value (counts of concurrent intervals, or 0/1 for the trainer).
    """

    length: float
    channels: dict[str, FloatArray]


def paint(events: Events, origin: float, length: float) -> Segment:
    """Intervals of ``[origin, origin + length)`` as per-tick coverage on the :data:`TICK` grid.

    A tick's value is the time its intervals cover divided by the tick (several loader workers read
    at once, so it can exceed 1), computed exactly: intervals shorter than a tick are not lost.
    """
    n = max(1, round(length / TICK))
    edges = np.arange(n + 1, dtype=np.float64)
    channels: dict[str, FloatArray] = {}
    for name, (starts, ends) in events.spans.items():
        s = np.sort(np.clip((np.asarray(starts) - origin) / TICK, 0, n))
        e = np.sort(np.clip((np.asarray(ends) - origin) / TICK, 0, n))
        # covered(x) = sum over intervals of clip(x - s, 0, e - s), from prefix sums of the sorted ends
        cs, ce = np.concatenate([[0.0], np.cumsum(s)]), np.concatenate([[0.0], np.cumsum(e)])
        i_s, i_e = np.searchsorted(s, edges), np.searchsorted(e, edges)
        covered = (i_s * edges - cs[i_s]) - (i_e * edges - ce[i_e])
        channels[name] = np.diff(covered)
    return Segment(length=n * TICK, channels=channels)
