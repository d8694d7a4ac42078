"""How a Job's step varies inside the window: fault drift, evaluation and checkpoint phases, neighbours.

The stage account gives each stage's time for the configuration; over the window each stage's time is
scaled per 5-second slice: the injected stage by a slow drift with a little wander (a cache warming,
a link renegotiating, a neighbour's load on a shared filer), the shared stages by the neighbours'
load, and the whole step by the training loop's phases: an evaluation pass (forward only, no
all-reduce) and a checkpoint (the GPUs idle while the state is written).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from bottleneck_operator_dev.familyae.label import Labelled
from bottleneck_operator_dev.familyae.stages import STAGE_FIELDS, Arr, Terms, step_time

DT = 5.0  # seconds per slice
BoolArr = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class Grid:
    """The slices the state is computed on.

    Attributes:
        t: each slice's start time.
        dt: slice length.
    """

    t: Arr
    dt: float

    @property
    def size(self) -> int:
        return int(self.t.size)

    def index(self, times: Arr) -> npt.NDArray[np.int64]:
        """The slice each time falls in (clipped to the grid)."""
        idx = np.floor((times - self.t[0]) / self.dt).astype(np.int64)
        return np.asarray(np.clip(idx, 0, self.size - 1), dtype=np.int64)


def make_grid(first: float, last: float) -> Grid:
    """A grid from `first` to past `last`."""
    n = int(np.ceil((last - first) / DT)) + 2
    return Grid(first + DT * np.arange(n, dtype=np.float64), DT)


@dataclass(frozen=True)
class Timeline:
    """The Job's state per slice.

    Attributes:
        grid: the slices.
        terms: each stage's time per step, per slice.
        step: seconds per step, per slice.
        evaluating: slices in an evaluation pass.
        paused: slices in a checkpoint (no training steps).
        neighbour: the neighbours' load per slice (0-1; zero without neighbours).
        tags: what was drawn (phases), for the Job's tags.
    """

    grid: Grid
    terms: Terms
    step: Arr
    evaluating: BoolArr
    paused: BoolArr
    neighbour: Arr
    tags: tuple[str, ...]


def _periodic(
    rng: np.random.Generator, grid: Grid, period: tuple[float, float], length: tuple[float, float]
) -> BoolArr:
    """Slices inside a phase that recurs every `period` seconds for `length` seconds."""
    every = float(rng.uniform(*period))
    dur = float(rng.uniform(*length))
    phase = (grid.t - grid.t[0] + float(rng.uniform(0, every))) % every
    return np.asarray(phase < dur, dtype=np.bool_)


def _ar1(rng: np.random.Generator, n: int, sd: float, phi: float) -> Arr:
    """A stationary AR(1) wander with standard deviation `sd`."""
    shocks = rng.normal(0.0, sd * np.sqrt(1 - phi**2), n)
    out = np.empty(n)
    out[0] = rng.normal(0.0, sd)
    for i in range(1, n):
        out[i] = phi * out[i - 1] + shocks[i]
    return out


def severity(rng: np.random.Generator, grid: Grid) -> Arr:
    """The injected stage's time factor per slice: a drift of up to +-25 % over the window, and wander."""
    span = max(float(grid.t[-1] - grid.t[0]), 1.0)
    drift = float(rng.uniform(-0.25, 0.25)) * (grid.t - grid.t.mean()) / span
    return np.asarray(np.clip(1.0 + drift + _ar1(rng, grid.size, 0.05, 0.9), 0.6, 1.6), dtype=np.float64)


def neighbour_load(rng: np.random.Generator, grid: Grid, neighbours: int) -> Arr:
    """The neighbours' load, 0-1 around a drawn mean, with bursts (zero without neighbours)."""
    if neighbours == 0:
        return np.zeros(grid.size)
    mean = float(rng.uniform(0.2, 0.7))
    bursts = _periodic(rng, grid, (300.0, 1500.0), (30.0, 240.0)) * float(rng.uniform(0.1, 0.4))
    return np.asarray(np.clip(mean + _ar1(rng, grid.size, 0.12, 0.95) + bursts, 0.0, 1.0), dtype=np.float64)


def _scaled(terms: Terms, factors: dict[str, Arr]) -> Terms:
    scaled: dict[str, Any] = {f: getattr(terms, f) * k for f, k in factors.items()}
    return replace(terms, **scaled)


def build_timeline(rng: np.random.Generator, lab: Labelled, grid: Grid) -> Timeline:
    """The per-slice state of a labelled Job."""
    cfg, t0 = lab.cfg, lab.acct.terms
    ones = np.ones(grid.size)
    sev = severity(rng, grid)
    nb = neighbour_load(rng, grid, cfg.neighbours)
    factors: dict[str, Arr] = {f: ones.copy() for fields in STAGE_FIELDS.values() for f in fields}
    for f in STAGE_FIELDS[lab.acct.limit]:
        factors[f] = factors[f] * sev
    shared = 1.0 + 0.5 * (nb - nb.mean())  # neighbours on the same storage, cores and uplinks
    for f in ("io_bw", "io_ops"):
        factors[f] = factors[f] * shared
    if cfg.cpu_limit == 0:
        factors["cpu_cap"] = factors["cpu_cap"] * shared
    if cfg.pods > 1:
        factors["comm"] = factors["comm"] * (1.0 + 0.2 * (nb - nb.mean()))
    jitter = 1.0 + rng.normal(0.0, 0.01, grid.size)
    for f in ("math", "hbm", "launch"):
        factors[f] = factors[f] * jitter
    tags: list[str] = []
    evaluating = (
        _periodic(rng, grid, (900.0, 3600.0), (60.0, 240.0)) if rng.random() < 0.6 else np.zeros(grid.size, np.bool_)
    )
    paused = (
        _periodic(rng, grid, (1200.0, 3600.0), (10.0, 90.0)) if rng.random() < 0.7 else np.zeros(grid.size, np.bool_)
    )
    tags += ["phase:eval"] if evaluating.any() else []
    tags += ["phase:checkpoint"] if paused.any() else []
    fwd_only = np.where(evaluating, 1.0 / 3.0, 1.0)
    for f in ("math", "hbm", "launch"):
        factors[f] = factors[f] * fwd_only
    factors["comm"] = factors["comm"] * np.where(evaluating, 0.0, 1.0)
    factors["dec"] = factors["dec"] * np.where(evaluating, 0.75, 1.0)  # no random augmentation
    per_slice: dict[str, Any] = {f: np.broadcast_to(getattr(t0, f), (grid.size,)).copy() for f in factors}
    terms = _scaled(replace(t0, **per_slice), factors)
    return Timeline(grid, terms, step_time(terms), evaluating, paused, nb, tuple(tags))
