"""Training-phase samples of a window: start-up and pauses (checkpoints, evaluation) set apart.

Busy fractions that speak for the training loop must not average in the minutes a job spends loading
its model or writing a checkpoint: a job that is GPU-bound while it trains reads 70 % busy over a
window that holds its start-up. ``GR_ENGINE_ACTIVE`` is the time-busy fraction of the GPU (any kernel
running), so it marks the phases: a leading ramp is start-up, and short deep dips after it are pauses
in which the GPU has no work at all, the signature of a synchronous checkpoint write or an evaluation
barrier. ``GPU_UTIL`` stands in when the profiling fields are missing (TELEMETRY.md, "Reading the
profiling metrics").
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bottleneck_operator.analysis.features.levels import WAITED_ON
from bottleneck_operator.contract.window import FloatArray, JobWindow

STARTUP_LEVEL = 0.6  # below this share of the training level, leading samples are start-up
DIP_LEVEL = 0.35  # below this share of the training level a later sample is a pause
MAX_DIP_S = 600.0  # a pause longer than this is the job's behaviour, not a checkpoint
MAX_DIP_SHARE = 0.25  # pauses taking more than this share of the window are the job's behaviour
MAX_STARTUP_SHARE = 0.4


@dataclass(frozen=True)
class Phase:
    """A stretch of the window that is not training: start-up or a pause."""

    kind: str  # "start-up" or "pause"
    start: float
    end: float


@dataclass(frozen=True)
class Phases:
    """Which samples are training and the averages over them.

    Attributes:
        training: per sample, True where the job trains.
        phases: the start-up and the pauses, in order.
        signal: the busy signal read ("gr_engine_active" or "gpu_util"), None when neither exists.
        busy: mean time-busy fraction over training samples, None without a busy signal.
        sm_active: mean SM activity over training samples, None without SM data.
        tensor_active: mean tensor-pipe activity over training samples, None without it.
        cpu_plateau: the job's CPU over training samples, median over 90th percentile (1 = flat), or None.
        span: the window's length in seconds (0 when unknown), against which the pauses' share is given.
    """

    training: npt.NDArray[np.bool_]
    phases: tuple[Phase, ...]
    signal: str | None
    busy: float | None
    sm_active: float | None
    tensor_active: float | None = None
    cpu_plateau: float | None = None
    span: float = 0.0  # seconds the window covers, for the pauses' share

    def notes(self) -> tuple[str, ...]:
        """The phases in words, for the verdict's notes."""
        start = [p for p in self.phases if p.kind == "start-up"]
        pauses = [p for p in self.phases if p.kind == "pause"]
        out = []
        if start:
            out.append(f"Start-up ({start[0].end - start[0].start:.0f} s) left out of the busy fractions.")
        if pauses:
            length = sum(p.end - p.start for p in pauses)
            periodic = " at a regular interval" if _periodic(pauses) else ""
            share = f", {100 * length / self.span:.0f} % of the window" if self.span > 0 else ""
            out.append(
                f"{len(pauses)} pause(s) with idle GPUs{periodic} ({length:.0f} s in all{share}: checkpoint or "
                "evaluation) left out of the busy fractions; the run is that much longer than its training."
            )
        return tuple(out)


def _periodic(pauses: list[Phase]) -> bool:
    if len(pauses) < 3:
        return False
    gaps = np.diff([p.start for p in pauses])
    return bool(np.std(gaps) <= 0.25 * np.mean(gaps))


def _job_series(window: JobWindow, name: str) -> FloatArray | None:
    """Per-sample mean of a signal over the pods that report it, None when none does."""
    n = len(window.timestamps)
    rows = [p.signals[name][:n] for p in window.pods if name in p.signals and len(p.signals[name])]
    rows = [r for r in rows if len(r) == n and np.any(~np.isnan(r))]
    if not rows:
        return None
    # Samples that no pod reported stay NaN; numpy warns about them, which says nothing here.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.asarray(np.nanmean(np.vstack(rows), axis=0), dtype=np.float64)


def segment_phases(window: JobWindow) -> Phases:
    """Start-up and pauses of a window, and the busy fractions over its training samples.

    Args:
        window: the job window.

    Returns:
        The phases; with too few samples everything counts as training.
    """
    signal = "gr_engine_active"
    busy = _job_series(window, signal)
    if busy is None:
        signal, busy = "gpu_util", _job_series(window, "gpu_util")
    n = len(window.timestamps)
    if busy is None:
        return Phases(np.ones(n, dtype=bool), (), None, None, None, None, _plateau(window, np.ones(n, dtype=bool)))
    valid = ~np.isnan(busy)
    training = valid.copy()
    phases: list[Phase] = []
    level = float(np.percentile(busy[valid], 75)) if valid.sum() >= 6 else 0.0
    # a level under XProf's 5 % is an idle GPU: no start-up or pause to find against it
    if level >= WAITED_ON:
        phases = _startup(window, busy, level, training) + _pauses(window, busy, level, training)
    if not training.any():
        training = valid
        phases = []
    sm = _mean(_job_series(window, "sm_active"), training)
    tensor = _mean(_job_series(window, "tensor_active"), training)
    plateau = _plateau(window, training)
    return Phases(training, tuple(phases), signal, _mean(busy, training), sm, tensor, plateau, window.duration)


# The least CPU a pod whose loader workers sit at their ceiling uses: one worker at a full core (the
# simulator's too-few-workers pods use 1.77 cores and more). A reader paced by its storage or network
# holds a flat CPU far below it (tests/data/real-objectstore: four HTTP workers, 0.105 cores).
WORKER_CORE = 0.8


def _plateau(window: JobWindow, training: npt.NDArray[np.bool_]) -> float | None:
    """Median over 90th percentile of the job's CPU on training samples (the pod's own cgroup first);
    None below :data:`WORKER_CORE` per pod."""
    cpu = _job_series(window, "sc_cpu_cores")
    if cpu is None:
        cpu = _job_series(window, "cpu_cores")
    if cpu is None:
        return None
    picked = cpu[training & ~np.isnan(cpu)]
    if len(picked) < 4:
        return None
    p90, median = float(np.percentile(picked, 90)), float(np.median(picked))
    if median < WORKER_CORE:  # the series is the pods' mean
        return None
    return median / p90 if p90 > 0 else None


def _mean(series: FloatArray | None, mask: npt.NDArray[np.bool_]) -> float | None:
    if series is None:
        return None
    picked = series[mask & ~np.isnan(series)]
    return float(picked.mean()) if len(picked) else None


def _startup(window: JobWindow, busy: FloatArray, level: float, training: npt.NDArray[np.bool_]) -> list[Phase]:
    """The leading ramp: samples before the GPUs first reach ``STARTUP_LEVEL`` of the training level."""
    reached = np.flatnonzero(busy >= STARTUP_LEVEL * level)
    first = int(reached[0]) if len(reached) else 0
    if first == 0 or first > MAX_STARTUP_SHARE * len(busy):
        return []
    training[:first] = False
    ts = window.timestamps
    return [Phase("start-up", float(ts[0]), float(ts[first]))]


def _pauses(window: JobWindow, busy: FloatArray, level: float, training: npt.NDArray[np.bool_]) -> list[Phase]:
    """Short runs of near-idle samples after start-up; none when they are the job's usual state."""
    ts, step = window.timestamps, max(window.step, 1e-9)
    low = (busy < DIP_LEVEL * level) & training
    runs: list[tuple[int, int]] = []
    i = 0
    while i < len(low):
        if low[i]:
            j = i
            while j < len(low) and low[j]:
                j += 1
            if (j - i) * step <= MAX_DIP_S and i > 0 and j < len(low):
                runs.append((i, j))
            i = j
        else:
            i += 1
    if not runs or sum(j - i for i, j in runs) > MAX_DIP_SHARE * len(busy):
        return []
    out = []
    for i, j in runs:
        training[i:j] = False
        out.append(Phase("pause", float(ts[i]), float(ts[i] + (j - i) * step)))
    return out
