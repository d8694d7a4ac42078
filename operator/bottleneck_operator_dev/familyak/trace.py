"""The Job's activity over wall-clock time: simulated steps laid end to end, with pauses.

The loop simulates a few hundred steps; a window covers up to an hour. The trace strings the steady
steps together in blocks drawn from the simulated run (a block bootstrap, so bursts keep their
shape), groups very short steps into segments of about half a second (finer than any exporter
resolves), and inserts the pauses a real run has: checkpoints, and restarts after an OOM kill or
another crash, during which nothing runs. Every exported series is then read off the cumulative
sums of the segments (:meth:`Trace.cum`): counters are cumulative by construction, and a gauge
is the busy time in its averaging period over the period.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from bottleneck_operator_dev.familyak.activity import CFS_PERIOD_S
from bottleneck_operator_dev.familyak.loop import LoopRun
from bottleneck_operator_dev.familyak.spec import JobSpec

FloatArray = npt.NDArray[np.float64]
SEGMENT_S = 0.5  # shortest segment: steps shorter than this are grouped
BLOCK = 6  # segments drawn consecutively from the simulated run


@dataclass(frozen=True)
class Pause:
    """Time in which the loop does not run.

    Attributes:
        at: when it starts (unix seconds).
        seconds: how long.
        kind: "checkpoint", "oom" (the kernel killed the trainer; it restarts) or "restart" (a crash).
    """

    at: float
    seconds: float
    kind: str


@dataclass(frozen=True)
class Trace:
    """Segments of activity from ``edges[0]`` to ``edges[-1]``.

    Attributes:
        edges: (S+1,) segment boundaries, unix seconds.
        amounts: quantity -> (pods, S) amount in each segment (see :mod:`.activity`).
        pauses: the pauses inserted, in time order.
    """

    edges: FloatArray
    amounts: dict[str, FloatArray]
    pauses: tuple[Pause, ...]
    _cums: dict[str, FloatArray] = field(default_factory=dict, repr=False, compare=False)

    @property
    def pods(self) -> int:
        return int(self.amounts["dur"].shape[0])

    def cum(self, name: str, t: FloatArray) -> FloatArray:
        """(pods, len(t)): the amount accumulated from the trace's start up to each time in ``t``."""
        if name not in self._cums:
            a = self.amounts[name]
            self._cums[name] = np.concatenate([np.zeros((a.shape[0], 1)), np.cumsum(a, axis=1)], axis=1)
        c = self._cums[name]
        return np.stack([np.interp(t, self.edges, c[p]) for p in range(c.shape[0])])

    def average(self, name: str, t: FloatArray, period: float) -> FloatArray:
        """(pods, len(t)): the amount per second over the ``period`` seconds before each time."""
        return (self.cum(name, t) - self.cum(name, t - period)) / period

    def restarts(self) -> tuple[Pause, ...]:
        """The pauses that restarted the trainer's container (its cAdvisor counters start again at 0)."""
        return tuple(p for p in self.pauses if p.kind in ("oom", "restart"))


def _chunks(amounts: dict[str, FloatArray], first: int, m: int) -> dict[str, FloatArray]:
    """Sums of ``m`` consecutive steady steps starting at every steady step (wrapping around)."""
    out = {}
    for name, a in amounts.items():
        steady = a[:, first:]
        doubled = np.concatenate([steady, steady], axis=1)
        c = np.concatenate([np.zeros((a.shape[0], 1)), np.cumsum(doubled, axis=1)], axis=1)
        n = steady.shape[1]
        out[name] = c[:, m : m + n] - c[:, :n]
    return out


def _sequence(rng: np.random.Generator, n_steady: int, m: int, count: int) -> npt.NDArray[np.int64]:
    """Chunk start indices: blocks of consecutive chunks, each block starting at a random step."""
    blocks = math.ceil(count / BLOCK)
    starts = rng.integers(0, n_steady, size=blocks)
    idx = (starts[:, None] + m * np.arange(BLOCK)[None, :]) % n_steady
    return np.asarray(idx.reshape(-1)[:count], dtype=np.int64)


def _pause_amounts(pause: Pause, names: list[str], pods: int, spec: JobSpec) -> dict[str, FloatArray]:
    """What a pause does: nothing while restarting; one busy core and a trickle of GPU work while checkpointing."""
    out = {name: np.zeros((pods, 1)) for name in names}
    out["dur"][:] = pause.seconds
    if pause.kind == "checkpoint":
        out["cpu"][:] = spec.gpus * pause.seconds
        out["busy"][:] = 0.03 * pause.seconds
        if spec.host.cpu_limit is not None:
            out["periods"][:] = pause.seconds / CFS_PERIOD_S
    if pause.kind == "oom":
        out["oom_kills"][:] = 1.0
    return out


def build_trace(
    run: LoopRun,
    amounts: dict[str, FloatArray],
    rng: np.random.Generator,
    span: tuple[float, float],
    pauses: list[Pause],
    spec: JobSpec,
) -> Trace:
    """The activity from ``span[0]`` to ``span[1]``, with ``pauses`` inserted where they fall."""
    first = run.warm + 1
    amounts = {**amounts, "oom_kills": np.zeros_like(amounts["dur"])}
    steady_mean = float(np.mean(amounts["dur"][0, first:]))
    m = max(1, min(math.ceil(SEGMENT_S / max(steady_mean, 1e-6)), amounts["dur"].shape[1] - first))
    chunks = _chunks(amounts, first, m)
    n_steady = chunks["dur"].shape[1]
    seg = steady_mean * m
    count = int((span[1] - span[0]) / seg * 1.3) + BLOCK
    idx = _sequence(rng, n_steady, m, count)
    seq = {name: c[:, idx] for name, c in chunks.items()}
    inserted = []
    for pause in sorted(pauses, key=lambda p: p.at):
        edges = span[0] + np.concatenate([[0.0], np.cumsum(seq["dur"][0])])
        if pause.at >= edges[-1]:
            continue
        k = int(np.searchsorted(edges, pause.at))
        extra = _pause_amounts(pause, list(seq), seq["dur"].shape[0], spec)
        seq = {name: np.concatenate([v[:, :k], extra[name], v[:, k:]], axis=1) for name, v in seq.items()}
        inserted.append(Pause(float(edges[k]), pause.seconds, pause.kind))
    edges = span[0] + np.concatenate([[0.0], np.cumsum(seq["dur"][0])])
    keep = min(int(np.searchsorted(edges, span[1])) + 1, edges.size - 1)
    return Trace(edges[: keep + 1], {n: v[:, :keep] for n, v in seq.items()}, tuple(inserted))
