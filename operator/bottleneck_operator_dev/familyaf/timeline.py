"""A Job's run in time: training, checkpoint and evaluation phases, step-rate jitter and neighbours.

Every signal is first made on a fine grid (one cell per ``CELL`` seconds) from its steady levels
(:class:`Level`): the training value follows the Job's step rate, which is one for all pods since
every step ends in a shared all-reduce; checkpoints and evaluations replace it with their own
values; the neighbours' share of a node-level signal follows their own slow load.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

CELL = 5.0  # seconds per grid cell: the shortest scrape interval drawn
TRAIN, CHECKPOINT, EVAL = 0, 1, 2


@dataclass(frozen=True)
class Level:
    """One signal's steady values per pod in each phase.

    Attributes:
        train, ckpt, evals: values per pod while training, checkpointing, evaluating.
        neigh: the neighbours' share per pod (node-level signals), added in every phase.
        kind: "ratio" (clipped to [0, 1]), "rate" (>= 0, follows the step rate) or "level" (steady).
    """

    train: FloatArray
    ckpt: FloatArray
    evals: FloatArray
    neigh: FloatArray
    kind: str


def level(value: float | FloatArray, pods: int) -> Level:
    """A steady value: the same in every phase (a limit, a core count, a memory size)."""
    v = np.broadcast_to(np.asarray(value, dtype=np.float64), (pods,)).copy()
    return Level(v, v, v, np.zeros(pods), "level")


def varying(
    kind: str,
    train: FloatArray,
    ckpt: float | FloatArray = 0.0,
    evals: float | FloatArray | None = None,
    neigh: float | FloatArray = 0.0,
) -> Level:
    """A signal that follows the work: ``evals`` defaults to the training value."""
    n = train.shape[0]

    def arr(x: float | FloatArray) -> FloatArray:
        return np.broadcast_to(np.asarray(x, dtype=np.float64), (n,)).copy()

    return Level(arr(train), arr(ckpt), arr(train if evals is None else evals), arr(neigh), kind)


@dataclass(frozen=True)
class Timeline:
    """The fine grid of one Job.

    Attributes:
        t0: time of the first cell's start, unix seconds.
        cells: number of cells.
        phase: phase per cell (TRAIN, CHECKPOINT, EVAL).
        rate: the Job's step rate per cell, relative to steady training.
        neigh: neighbours' load per pod and cell, relative to their mean, shape (pods, cells).
        pauses: tags for the pauses drawn ("ckpt", "eval").
    """

    t0: float
    cells: int
    phase: IntArray
    rate: FloatArray
    neigh: FloatArray
    pauses: tuple[str, ...]

    @property
    def edges(self) -> FloatArray:
        """Cell boundaries, unix seconds (cells + 1 of them)."""
        return self.t0 + CELL * np.arange(self.cells + 1, dtype=np.float64)

    def cell_of(self, times: FloatArray) -> IntArray:
        """The cell each time falls in (clipped to the grid)."""
        idx = np.floor((np.asarray(times) - self.t0) / CELL).astype(np.int64)
        return np.clip(idx, 0, self.cells - 1)


def _ar1(rng: np.random.Generator, shape: tuple[int, ...], sigma: float, rho: float) -> FloatArray:
    """A stationary AR(1) log-normal factor with mean about one, along the last axis."""
    eps = rng.normal(0.0, sigma * np.sqrt(1 - rho * rho), shape)
    x = np.empty(shape)
    x[..., 0] = rng.normal(0.0, sigma, shape[:-1])
    for k in range(1, shape[-1]):
        x[..., k] = rho * x[..., k - 1] + eps[..., k]
    return np.asarray(np.exp(x - sigma * sigma / 2), dtype=np.float64)


def _pauses(rng: np.random.Generator, cells: int) -> tuple[IntArray, tuple[str, ...]]:
    phase = np.zeros(cells, dtype=np.int64)
    tags: list[str] = []
    for code, name, every, length, chance in (
        (CHECKPOINT, "ckpt", (600, 2400), (20, 150), 0.6),
        (EVAL, "eval", (900, 3600), (60, 300), 0.4),
    ):
        if rng.random() >= chance:
            continue
        t = rng.uniform(0, every[1]) / CELL
        while t < cells:
            span = int(rng.uniform(*length) / CELL) + 1
            phase[int(t) : int(t) + span] = code
            tags.append(name)
            t += rng.uniform(*every) / CELL
    return phase, tuple(sorted(set(tags)))


def draw_timeline(rng: np.random.Generator, t0: float, t1: float, pods: int) -> Timeline:
    """The grid from ``t0`` to ``t1`` with pauses, step-rate jitter and neighbour load drawn."""
    cells = int(np.ceil((t1 - t0) / CELL)) + 1
    phase, tags = _pauses(rng, cells)
    sigma = float(rng.uniform(0.02, 0.1))
    rate = _ar1(rng, (cells,), sigma, 0.85)
    neigh = _ar1(rng, (pods, cells), float(rng.uniform(0.1, 0.35)), 0.95)
    return Timeline(t0, cells, phase, rate, neigh, tags)


def render(tl: Timeline, lv: Level, rng: np.random.Generator) -> FloatArray:
    """One signal per pod and cell, shape (pods, cells), from its levels."""
    pods = lv.train.shape[0]
    if lv.kind == "level":
        return np.repeat(lv.train[:, None], tl.cells, axis=1)
    train = lv.train[:, None] * tl.rate[None, :]
    evals = lv.evals[:, None] * tl.rate[None, :]
    v = np.where(tl.phase == TRAIN, train, np.where(tl.phase == CHECKPOINT, lv.ckpt[:, None], evals))
    v = v * np.exp(rng.normal(0.0, 0.03, (pods, tl.cells))) + lv.neigh[:, None] * tl.neigh
    v = np.maximum(v, 0.0)
    return np.minimum(v, 1.0) if lv.kind == "ratio" else v
