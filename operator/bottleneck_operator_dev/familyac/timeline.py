"""A discrete-event timeline of one rank's training steps, as a profiler would show it.

Resources: the storage server(s), the loader workers (read, then decode and collate), the
pin-memory thread, the main Python thread (kernel launches, waiting on the step's end), the copy
engine, the GPU compute stream (math-bound then HBM-bound kernels), the collective stream (one
all-reduce per gradient bucket as backward produces it) and the kernel's memory manager (fault
stalls, OOM-killed workers restarting). Every event starts when its last dependency and its
resource are free; the dependency that decided the start is kept, so the critical path can be
walked back from the last step's end.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator_dev.familyac.stages import Stages

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

# Resources, as the critical path attributes time to them.
READ, DECODE, PIN, H2D, LAUNCH, MATH, HBM, COMM, FAULT, RESTART = range(10)
RESOURCES = ("read", "decode", "pin", "h2d", "launch", "math", "hbm", "comm", "fault", "restart")
WARMUP_STEPS = 20


@dataclass(frozen=True)
class Timeline:
    """The simulated events and the critical path's time per resource.

    Attributes:
        start, end: each event's interval, seconds from the run's start.
        resource: each event's resource (one of the module's constants).
        busy: seconds of work each event holds its resource for (less than its span where the GPU
            waits between launches).
        nbytes: bytes each event moves (reads, copies, all-reduces), else 0.
        t0, t1: the measured part (after warm-up) of the run.
        steps: measured steps.
        critical: seconds of the measured critical path held by each resource.
        oom_kills: workers killed in the measured part.
    """

    start: FloatArray
    end: FloatArray
    resource: IntArray
    busy: FloatArray
    nbytes: FloatArray
    t0: float
    t1: float
    steps: int
    critical: FloatArray
    oom_kills: int


class _Log:
    """Append-only event log (plain lists: a few thousand events per run)."""

    def __init__(self) -> None:
        self.st: list[float] = []
        self.en: list[float] = []
        self.res: list[int] = []
        self.pred: list[int] = []
        self.busy: list[float] = []
        self.nbytes: list[float] = []

    def add(self, res: int, start: float, dur: float, pred: int, busy: float | None = None, nbytes: float = 0.0) -> int:
        self.st.append(start)
        self.en.append(start + dur)
        self.res.append(res)
        self.pred.append(pred)
        self.busy.append(dur if busy is None else busy)
        self.nbytes.append(nbytes)
        return len(self.st) - 1

    def later(self, *candidates: int) -> tuple[float, int]:
        """The latest end among events (-1: none), and which event it is."""
        best, who = 0.0, -1
        for c in candidates:
            if c >= 0 and self.en[c] > best:
                best, who = self.en[c], c
        return best, who


def _jitter(rng: np.random.Generator, n: int, sigma: float, tail: float = 0.0) -> FloatArray:
    j = rng.lognormal(0.0, sigma, n)
    if tail > 0:
        j = np.where(rng.random(n) < tail, j * rng.uniform(2.0, 5.0, n), j)
    return j


class _Run:
    """The state of one simulation: who is free when, and which event made it so."""

    def __init__(self, s: Stages, rng: np.random.Generator, steps: int, workers: int, slow_tail: float) -> None:
        self.s, self.log, self.steps, self.w = s, _Log(), steps, workers
        self.queue = 2 * workers  # DataLoader prefetch_factor 2 per worker
        n = steps + 1
        self.j = {
            "read": _jitter(rng, n, 0.15, slow_tail),
            "decode": _jitter(rng, n, 0.1),
            "pin": _jitter(rng, n, 0.1),
            "h2d": _jitter(rng, n, 0.05),
            "launch": _jitter(rng, n, 0.08),
            "math": _jitter(rng, n, 0.03),
            "hbm": _jitter(rng, n, 0.03),
            "comm": _jitter(rng, n * max(1, len(s.bucket_s)), 0.2 if s.comm_mech == "network" else 0.08),
            "fault": _jitter(rng, 2 * n, 0.3),
        }
        self.oom = rng.random(n) < s.oom_per_s * (s.read_s + s.decode_s)
        self.worker_last = [-1] * workers
        self.server_last = [-1] * s.read_servers
        self.pin_last = -1
        self.step_end: list[int] = []  # the optimizer event ending each step
        self.consumed: list[int] = []  # the main thread's first event of each step
        self.pinned: list[int] = []

    def batch(self, i: int) -> None:
        """Worker ``i % W`` reads, (faults,) decodes and collates batch ``i``; the pin thread pins it."""
        s, log, k = self.s, self.log, i % self.w
        slot = self.consumed[i - self.queue] if i >= self.queue else -1
        server = i % s.read_servers
        t, who = log.later(self.worker_last[k], slot, self.server_last[server])
        e = log.add(READ, t, s.read_s * self.j["read"][i], who, nbytes=s.read_bytes)
        self.server_last[server] = e
        if self.oom[i]:
            e = log.add(RESTART, log.en[e], s.restart_s, e)
        if s.worker_fault_s > 0:
            e = log.add(FAULT, log.en[e], s.worker_fault_s * self.j["fault"][2 * i], e)
        e = log.add(DECODE, log.en[e], s.decode_s * self.j["decode"][i], e)
        self.worker_last[k] = e
        t, who = log.later(e, self.pin_last)
        self.pin_last = log.add(PIN, t, s.collate_s * self.j["pin"][i], who)
        self.pinned.append(self.pin_last)

    def step(self, i: int) -> None:
        """The main thread takes batch ``i``: copy, launches, kernels, all-reduce, optimizer."""
        s, log = self.s, self.log
        prev = self.step_end[-1] if self.step_end else -1
        t, who = log.later(self.pinned[i], prev)
        taken = -1
        if s.main_fault_s > 0:
            who = taken = log.add(FAULT, t, s.main_fault_s * self.j["fault"][2 * i + 1], who)
            t = log.en[who]
        launch = log.add(LAUNCH, t, s.launch_s * self.j["launch"][i], who)
        self.consumed.append(launch if taken < 0 else taken)
        copy = log.add(H2D, t, s.h2d_s * self.j["h2d"][i], who, nbytes=1.0)
        g0, gwho = log.later(copy, prev)
        h = self._kernels(i, g0, gwho, launch)
        last = self._allreduce(i, g0, log.en[h], h)
        t, who = log.later(h, last)
        self.step_end.append(log.add(HBM, t, s.opt_s, who))

    def _kernels(self, i: int, g0: float, gwho: int, launch: int) -> int:
        """Forward and backward kernels; the event that ends them."""
        s, log = self.s, self.log
        math, hbm = s.math_s * self.j["math"][i], s.mem_s * self.j["hbm"][i]
        tail = 0.03 * (math + hbm)
        t_launch = log.en[launch]
        if t_launch + tail <= g0 + math + hbm:
            m = log.add(MATH, g0, math, gwho)
            return log.add(HBM, log.en[m], hbm, m)
        # The GPU ran ahead of the launches: it idles between kernels and its last ones wait on
        # the main thread, so the critical path runs through the launches.
        tm, th = tail * math / (math + hbm), tail * hbm / (math + hbm)
        log.add(MATH, g0, t_launch - g0, gwho, busy=math - tm)
        log.add(HBM, g0, t_launch - g0, gwho, busy=hbm - th)
        m = log.add(MATH, t_launch, tm, launch)
        return log.add(HBM, log.en[m], th, m)

    def _allreduce(self, i: int, g0: float, g1: float, kernels: int) -> int:
        """Buckets become ready through backward (the last two thirds of the kernels), reduced in order."""
        s, log = self.s, self.log
        n, last = len(s.bucket_s), -1
        for b, dur in enumerate(s.bucket_s):
            ready = g0 + (g1 - g0) * (1 / 3 + 2 / 3 * (b + 1) / n)
            t, who = log.later(last)
            start = max(ready, t)
            pred = who if t >= ready else kernels  # backward still running when the bucket is ready
            last = log.add(COMM, start, dur * self.j["comm"][i * n + b], pred, nbytes=1.0)
        return last


def simulate(
    s: Stages, rng: np.random.Generator, *, workers: int, steps: int = 150, slow_tail: float = 0.0
) -> Timeline:
    """Run ``WARMUP_STEPS + steps`` steps of one rank; measure the last ``steps``."""
    total = WARMUP_STEPS + steps
    run = _Run(s, rng, total, workers, slow_tail)
    for i in range(total):
        # Workers run ahead of the main thread by at most the prefetch queue.
        while len(run.pinned) < min(total, i + run.queue):
            run.batch(len(run.pinned))
        run.step(i)
    log = run.log
    t0 = log.en[run.step_end[WARMUP_STEPS - 1]]
    t1 = log.en[run.step_end[-1]]
    return Timeline(
        start=np.asarray(log.st),
        end=np.asarray(log.en),
        resource=np.asarray(log.res, dtype=np.int64),
        busy=np.asarray(log.busy),
        nbytes=np.asarray(log.nbytes),
        t0=t0,
        t1=t1,
        steps=steps,
        critical=_critical(log, run.step_end[-1], t0),
        oom_kills=int(sum(1 for r, st in zip(log.res, log.st, strict=True) if r == RESTART and st >= t0)),
    )


def _critical(log: _Log, last: int, t0: float) -> FloatArray:
    """Walk back from the last event through the dependencies that decided each start."""
    out = np.zeros(len(RESOURCES))
    e, cursor = last, log.en[last]
    # A dependency may end after its successor starts (a bucket ready mid-backward): only the part
    # before the cursor lies on the path.
    while e >= 0 and cursor > t0:
        start = max(log.st[e], t0)
        out[log.res[e]] += max(0.0, min(log.en[e], cursor) - start)
        cursor = min(cursor, log.st[e])
        e = log.pred[e]
    return out
