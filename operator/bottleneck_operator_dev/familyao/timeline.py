"""How the Job runs over the window: elastic ranks, restarts, pauses, and the step's jitter.

The simulation runs on a fine grid of ticks (seconds apart, finer than any scrape interval). Each
pod has, per tick, whether it exists (a reclaimed spot node's pod vanishes; its replacement is a new
pod) and the share of the tick spent stepping: rendezvous after ranks leave or join, a restart from
checkpoint, and periodic checkpoint saves stop every rank (a synchronous job waits for all).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

TICK = 5.0  # seconds: the smallest scrape interval drawn, so no scrape falls between two ticks


@dataclass
class PodTrack:
    """One pod's life on the tick grid."""

    name: str
    present: BoolArray  # the pod exists (its exporters' series are scraped)
    run: FloatArray  # share of each tick spent stepping, 0..1
    noise: FloatArray  # multiplicative jitter of the step's activity, around 1
    clock: float  # this pod's GPUs' clock share of maximum
    resets: list[int] = field(default_factory=list)  # ticks where its containers' counters restart
    joined_late: bool = False


@dataclass
class Timeline:
    """The pods of a Job on the tick grid, and what happened to them."""

    ticks: FloatArray
    pods: list[PodTrack]
    restore: BoolArray  # ticks where a restart reads the checkpoint back
    events: list[str]


def _jitter(rng: np.random.Generator, n: int, sigma: float) -> FloatArray:
    """AR(1) log-normal jitter: steps drift (data-dependent shapes, clock moves), not white noise."""
    eps = rng.normal(0.0, sigma, n)
    # the AR(1) recursion as a convolution with its (truncated) impulse response: 0.85**60 ~ 6e-5
    out = np.convolve(eps, 0.85 ** np.arange(60.0))[:n]
    return np.asarray(np.exp(out - out.mean()), dtype=np.float64)


def _pause(run: list[FloatArray], lo: int, hi: int) -> None:
    for r in run:
        r[max(lo, 0) : max(hi, 0)] = 0.0


def build_timeline(
    rng: np.random.Generator, job: str, pods: int, slow_clock: float, t0: float, end: float, start: float
) -> Timeline:
    """Draw the Job's events over ``[t0, end]`` (``start`` opens the analysed window)."""
    ticks = np.arange(t0, end + TICK / 2, TICK)
    n = ticks.size
    first = int(np.searchsorted(ticks, start))
    tracks = [_track(rng, f"{job}-worker-{i}", n, slow_clock if i == 0 else None, slow_clock) for i in range(pods)]
    events: list[str] = []
    restore = np.zeros(n, dtype=bool)
    runs = [t.run for t in tracks]
    span = n - first
    if pods > 1 and rng.random() < 0.3 and span > 40:
        _elastic(rng, tracks, job, first, n, events, slow_clock)
        runs = [t.run for t in tracks]
    if rng.random() < 0.15 and span > 40:
        at = first + int(rng.integers(span // 5, span - 10))
        length = int(rng.uniform(120, 480) / TICK)
        _pause(runs, at, at + length)
        restore[at : at + length] = True
        for t in tracks:
            t.resets.append(at)
        events.append("restart-from-checkpoint")
    if rng.random() < 0.4:
        period = int(rng.uniform(600, 1800) / TICK)
        length = max(1, int(rng.uniform(20, 90) / TICK))
        for at in range(int(rng.integers(period)), n, period):
            _pause(runs, at, at + length)
        events.append("periodic-checkpoint")
    for t in tracks:
        t.run[~t.present] = 0.0
    return Timeline(ticks, tracks, restore, events)


def _track(rng: np.random.Generator, name: str, n: int, clock: float | None, floor: float) -> PodTrack:
    # the first rank holds the slowest GPUs; peers' clocks spread above it (boards differ)
    own = clock if clock is not None else float(rng.uniform(0.85, 1.0))
    own = max(own, floor)
    return PodTrack(name, np.ones(n, dtype=bool), np.ones(n), _jitter(rng, n, float(rng.uniform(0.02, 0.08))), own)


def _elastic(
    rng: np.random.Generator, tracks: list[PodTrack], job: str, first: int, n: int, events: list[str], floor: float
) -> None:
    """A spot node is reclaimed: its pod vanishes, the others rendezvous, and a replacement may join."""
    span = n - first
    lost = tracks[-1]
    at = first + int(rng.integers(span // 6, span // 2))
    lost.present[at:] = False
    wait = int(rng.uniform(60, 300) / TICK)
    _pause([t.run for t in tracks], at, at + wait)
    events.append("spot-reclaimed")
    if rng.random() < 0.7:
        joined = _track(rng, f"{job}-worker-{len(tracks)}", n, None, floor)
        joined.present[: at + wait // 2] = False
        joined.run[: at + wait] = 0.0
        joined.joined_late = True
        tracks.append(joined)
        events.append("rank-joined")
