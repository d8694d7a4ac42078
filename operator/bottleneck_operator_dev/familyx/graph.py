"""One training step as a task dependency graph, list-scheduled on a Job's resources.

Each rank (one representative GPU per node) has loader workers (each a serial CPU resource), a
storage queue, a copy engine, a compute stream and a communication stream. A task waits for its
dependencies and for its resource (first come, first served in the order a framework issues them),
so its start is the latest of those ends; the one that ended last is its *critical predecessor*.
Walking those back from the last task gives the critical path (the longest chain of dependent and
resource-serialised tasks), and its time, split by what each task was bound by, is the label's
account. Ranks meet at every all-reduce, so the slowest rank sets the pace.

Costs are ``Parts``: (key, seconds) pairs, the key naming what bound that part of a task (see
:data:`KEY_CLASS`). ``drop`` in :func:`schedule` zeroes one key everywhere: the "what-if" that tells
how much shorter the step gets without that stage.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from bottleneck_operator.contract.verdict import Bottleneck, Mechanism

Parts = tuple[tuple[str, float], ...]

# What bound a part of a task, as the verdict class and mechanism it stands for.
KEY_CLASS: dict[str, tuple[Bottleneck, Mechanism]] = {
    "io_local": (Bottleneck.IO, Mechanism.LOCAL_DISK),
    "io_remote": (Bottleneck.IO, Mechanism.NETWORK_STORAGE),
    "cpu": (Bottleneck.CPU, Mechanism.SATURATED),  # the CPU mechanism is set per Job (see workload)
    "hostmem": (Bottleneck.MEMORY, Mechanism.HOST_MEMORY_PRESSURE),
    "pcie": (Bottleneck.INTERCONNECT, Mechanism.PCIE),
    "nvlink": (Bottleneck.INTERCONNECT, Mechanism.NVLINK),
    "net": (Bottleneck.INTERCONNECT, Mechanism.NETWORK),
    "compute": (Bottleneck.GPU, Mechanism.COMPUTE),
    "launch": (Bottleneck.GPU, Mechanism.LAUNCH_BOUND),
    "hbm": (Bottleneck.MEMORY, Mechanism.HBM_BANDWIDTH),
}


@dataclass(frozen=True)
class Kernel:
    """A run of kernels on the compute stream: roofline terms and the host's launch cost.

    Attributes:
        flop_s: FLOPs against the peak for its precision (at the board's clock).
        byte_s: HBM bytes against the achievable bandwidth.
        launch_s: the host's launch cost of its kernels (plus any host-memory stretch in ``stretch_s``).
        stretch_s: extra host time from memory pressure (page faults, reclaim) in the launch loop.
        tensor: whether the math runs on tensor cores.
    """

    flop_s: float
    byte_s: float
    launch_s: float
    stretch_s: float = 0.0
    tensor: bool = True

    def parts(self) -> Parts:
        """The kernel's time, given wholly to whichever term binds it (roofline or launch)."""
        host = self.launch_s + self.stretch_s
        gpu = max(self.flop_s, self.byte_s)
        if host > gpu:
            # the GPU waits for the host: launch-bound, and the stretched share is host memory's
            share = self.stretch_s / host if host > 0 else 0.0
            return (("launch", host * (1 - share)), ("hostmem", host * share))
        return (("compute" if self.flop_s >= self.byte_s else "hbm", gpu),)

    @property
    def seconds(self) -> float:
        return max(self.launch_s + self.stretch_s, self.flop_s, self.byte_s)


@dataclass(frozen=True)
class RankCosts:
    """One rank's task costs for one step (seconds).

    Attributes:
        workers: loader worker processes.
        depth: batches the prefetch queue holds (workers x prefetch factor).
        read_latency: per batch, waited on the worker (request latency).
        read_xfer: per batch, on the storage queue (bytes over the rank's share of throughput).
        io_key: ``io_local`` or ``io_remote``.
        decode: per batch decode/augment CPU time on one worker (after quota and neighbours).
        decode_stretch: extra per batch from host memory pressure (reclaim, swap-in).
        h2d: the batch's host-to-device copy on the copy engine.
        h2d_stretch: extra copy time from page faults of pageable memory under pressure.
        h2d_overlap: a pinned copy issued by a prefetcher overlaps the previous step's compute.
        forward, backward: the kernel runs of each layer group (backward in the order it runs); a
            group is one task on the compute stream.
        allreduce: per gradient bucket: its all-reduce time, link key and the index of the backward
            layer group after which its gradients are ready; empty for one GPU.
        optimizer: the optimizer step's kernels.
    """

    workers: int
    depth: int
    read_latency: float
    read_xfer: float
    io_key: str
    decode: float
    decode_stretch: float
    h2d: float
    h2d_stretch: float
    h2d_overlap: bool
    forward: tuple[tuple[Kernel, ...], ...]
    backward: tuple[tuple[Kernel, ...], ...]
    allreduce: tuple[tuple[float, str, int], ...]
    optimizer: Kernel


@dataclass
class Schedule:
    """What list scheduling made of a few steps.

    Attributes:
        step_time: seconds per step in steady state.
        critical: seconds of the critical path per key, per step, over the steady-state steps.
        busy: per rank, seconds per step each resource was busy: ``compute``, ``comm``, ``copy``,
            ``storage``, ``cpu`` (worker CPU time, all workers), ``ioread`` (worker time waiting on reads),
            ``gpu_any`` (compute or comm stream busy), ``flop``, ``byte``, ``tensor_flop`` (roofline
            terms), ``launchy`` (kernel time spent waiting on launches), ``flop_run``/``byte_run`` (time
            of kernels bound by math / by HBM).
    """

    step_time: float
    critical: dict[str, float]
    busy: list[dict[str, float]] = field(default_factory=list)


class _Tasks:
    """Flat task records: start, end, parts, critical predecessor (-1: none)."""

    def __init__(self) -> None:
        self.start: list[float] = []
        self.end: list[float] = []
        self.parts: list[Parts] = []
        self.pred: list[int] = []

    def add(self, deps: Sequence[int], parts: Parts, drop: str | None, floor: float = 0.0) -> int:
        """A task after ``deps`` (task ids; -1 ignored) taking the sum of ``parts``; its id."""
        start, pred = floor, -1
        for d in deps:
            if d >= 0 and self.end[d] >= start:
                start, pred = self.end[d], d
        if drop is not None:
            parts = tuple((k, 0.0 if k == drop else s) for k, s in parts)
        self.start.append(start)
        self.end.append(start + sum(s for _, s in parts))
        self.parts.append(parts)
        self.pred.append(pred)
        return len(self.end) - 1


def _overlap(a: float, b: float, lo: float, hi: float) -> float:
    return max(0.0, min(b, hi) - max(a, lo))


def _union(intervals: list[tuple[float, float]], lo: float, hi: float) -> float:
    total, cur_a, cur_b = 0.0, -1.0, -1.0
    for a, b in sorted(intervals):
        a, b = max(a, lo), min(b, hi)
        if b <= a:
            continue
        if a > cur_b:
            total += max(0.0, cur_b - cur_a)
            cur_a, cur_b = a, b
        else:
            cur_b = max(cur_b, b)
    return total + max(0.0, cur_b - cur_a)


def _parts(group: Sequence[Kernel]) -> Parts:
    return tuple(p for kern in group for p in kern.parts())


class _Run:
    """The resources' state while steps are scheduled: the last task on each, per rank."""

    def __init__(self, ranks: Sequence[RankCosts], drop: str | None) -> None:
        self.t = _Tasks()
        self.ranks, self.drop = ranks, drop
        self.worker_last = [[-1] * r.workers for r in ranks]
        self.storage_last = [-1] * len(ranks)
        self.copy_last = [-1] * len(ranks)
        self.compute_last = [-1] * len(ranks)
        self.comm_last = -1  # ranks meet at every bucket: one chain of collectives
        self.h2d_of: list[list[int]] = [[] for _ in ranks]
        self.opt_of: list[list[int]] = [[] for _ in ranks]
        self.kinds: list[tuple[int, int, str]] = []  # (task, rank, kind) for the busy account
        # every step runs the same kernels: their parts are worked out once
        self.passes = [[_parts(group) for group in (*r.forward, *r.backward)] for r in ranks]
        self.opt_parts = [r.optimizer.parts() for r in ranks]

    def _on(self, ri: int, deps: Sequence[int], parts: Parts, kind: str, floor: float = 0.0) -> int:
        task = self.t.add(deps, parts, self.drop, floor)
        self.kinds.append((task, ri, kind))
        return task

    def loader_and_passes(self, k: int, ri: int) -> list[int]:
        """Batch ``k`` of rank ``ri``: read, decode, copy, forward, backward; the backward groups' tasks."""
        r = self.ranks[ri]
        w = k % r.workers
        slot = self.h2d_of[ri][k - r.depth] if k >= r.depth else -1
        # the loader has been running before the first simulated step: its workers' first
        # batches are staggered over one batch time, as they are in steady state
        batch = r.read_latency + r.read_xfer + r.decode + r.decode_stretch
        floor = w * batch / r.workers if k < r.workers else 0.0
        lat = self._on(ri, (self.worker_last[ri][w], slot), ((r.io_key, r.read_latency),), "ioread", floor)
        xfer = self._on(ri, (lat, self.storage_last[ri]), ((r.io_key, r.read_xfer),), "ioread")
        self.storage_last[ri] = xfer
        dec = self._on(ri, (xfer,), (("cpu", r.decode), ("hostmem", r.decode_stretch)), "cpu")
        self.worker_last[ri][w] = dec
        host = self.copy_last[ri] if r.h2d_overlap else (self.opt_of[ri][-1] if self.opt_of[ri] else -1)
        h2d = self._on(ri, (dec, host, self.copy_last[ri]), (("pcie", r.h2d), ("hostmem", r.h2d_stretch)), "copy")
        self.copy_last[ri] = h2d
        self.h2d_of[ri].append(h2d)
        prev, done = h2d, []
        for i, parts in enumerate(self.passes[ri]):
            prev = self._on(ri, (prev, self.compute_last[ri]), parts, "compute")
            self.compute_last[ri] = prev
            if i >= len(r.forward):
                done.append(prev)
        return done

    def sync_and_step(self, bwd_done: list[list[int]]) -> None:
        """Each bucket's all-reduce once every rank has produced it, then each rank's optimizer step."""
        last_ar = -1
        for seconds, key, after in self.ranks[0].allreduce:
            deps = [done[after] for done in bwd_done] + [self.comm_last]
            last_ar = self.comm_last = self.t.add(deps, ((key, seconds),), self.drop)
            self.kinds += [(last_ar, ri, "comm") for ri in range(len(self.ranks))]
        for ri in range(len(self.ranks)):
            opt = self._on(ri, (last_ar, self.compute_last[ri]), self.opt_parts[ri], "compute")
            self.compute_last[ri] = opt
            self.opt_of[ri].append(opt)

    def critical(self, final: int, t0: float, t1: float) -> dict[str, float]:
        """The critical path, walked back from ``final``, its parts counted inside [t0, t1]."""
        t, i = self.t, final
        out: dict[str, float] = {}
        while i >= 0 and t.end[i] > t0:
            dur = t.end[i] - t.start[i]
            inside = _overlap(t.start[i], t.end[i], t0, t1)
            if dur > 0 and inside > 0:
                for key, s in t.parts[i]:
                    out[key] = out.get(key, 0.0) + s * inside / dur
            i = t.pred[i]
        return out


def schedule(
    ranks: Sequence[RankCosts], steps: int = 9, warm: int = 3, drop: str | None = None, *, account: bool = True
) -> Schedule:
    """List-schedule ``steps`` steps of every rank and attribute the steady-state critical path.

    Args:
        ranks: one cost set per representative rank; they synchronise at each all-reduce bucket.
        steps: steps simulated; the first ``warm`` fill the prefetch queue and are not counted.
        warm: steps left out of the account.
        drop: a key whose parts take no time (the what-if), or None.
        account: also work out each rank's busy times (the exporters need them; a label alone does not).

    Returns:
        The steady-state step time, the critical path's seconds per key per step, per-rank busy times.
    """
    if steps <= warm:
        raise ValueError(f"steps ({steps}) must exceed warm ({warm})")
    run = _Run(ranks, drop)
    t0 = 0.0
    for k in range(steps):
        run.sync_and_step([run.loader_and_passes(k, ri) for ri in range(len(ranks))])
        if k == warm - 1:
            t0 = max(run.t.end[opts[-1]] for opts in run.opt_of)
    final = max((opts[-1] for opts in run.opt_of), key=lambda i: run.t.end[i])
    t1 = run.t.end[final]
    n = steps - warm
    critical = run.critical(final, t0, t1)
    by_rank: list[list[tuple[int, str]]] = [[] for _ in ranks]
    for task, ri, kind in run.kinds if account else ():
        by_rank[ri].append((task, kind))
    busy = [_busy(run.t, by_rank[ri], ranks[ri], t0, t1, n) for ri in range(len(ranks))] if account else []
    return Schedule(max(t1 - t0, 1e-12) / n, {k: v / n for k, v in critical.items()}, busy)


def _busy(t: _Tasks, kinds: list[tuple[int, str]], r: RankCosts, t0: float, t1: float, n: int) -> dict[str, float]:
    """Seconds per step each of one rank's resources was busy inside [t0, t1]."""
    out = dict.fromkeys(("compute", "comm", "copy", "cpu", "ioread", "storage"), 0.0)
    gpu: list[tuple[float, float]] = []
    for task, kind in kinds:
        if t.end[task] <= t0:
            continue
        ov = _overlap(t.start[task], t.end[task], t0, t1)
        if ov <= 0:
            continue
        out[kind] += ov
        if kind in ("compute", "comm"):
            gpu.append((t.start[task], t.end[task]))
    out["gpu_any"] = _union(gpu, t0, t1)
    out = {k: v / n for k, v in out.items()}
    # what the kernels did while they ran, from their costs (every step runs the same kernels)
    kernels = (*(k for g in r.forward for k in g), *(k for g in r.backward for k in g), r.optimizer)
    out["flop"] = sum(min(k.flop_s, k.seconds) for k in kernels)
    out["tensor_flop"] = sum(min(k.flop_s, k.seconds) for k in kernels if k.tensor)
    out["byte"] = sum(min(k.byte_s, k.seconds) for k in kernels)
    out["launchy"] = sum(k.seconds - max(k.flop_s, k.byte_s) for k in kernels)
    out["flop_run"] = sum(k.flop_s for k in kernels if k.flop_s >= k.byte_s)
    out["byte_run"] = sum(k.byte_s for k in kernels if k.byte_s > k.flop_s)
    out["storage"] = r.read_xfer
    return out
